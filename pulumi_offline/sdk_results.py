"""Invoke answers shaped exactly like pulumi-gcp's result types.

A fake answer names every field the SDK's `...Result` type declares (wire names, nested
output types included), with the values given and an empty value of the declared type for the
rest, so the program reads it the way it reads a real provider's answer, and the stand-in
provider can check it field for field.
"""

from __future__ import annotations

import collections.abc
import functools
import inspect
import typing
from collections.abc import Mapping
from typing import Any

import pulumi._types as pulumi_types


@functools.cache
def fields(result_type: type) -> dict[str, Any]:
    """Wire name -> declared type of a result (or nested output) type's properties."""
    found: dict[str, Any] = {}
    for _, prop in inspect.getmembers(result_type, lambda m: isinstance(m, property)):
        wire = getattr(prop.fget, pulumi_types._PULUMI_NAME, None)
        if wire:
            found[wire] = typing.get_type_hints(prop.fget).get("return", Any)
    return found


def _empty(declared: Any) -> Any:
    origin = typing.get_origin(declared)
    if origin is typing.Union:
        return None  # Optional: not set
    if origin in (list, collections.abc.Sequence):
        return []
    if origin in (dict, collections.abc.Mapping):
        return {}
    if declared is str:
        return ""
    if declared is bool:
        return False
    if declared in (int, float):
        return 0
    if isinstance(declared, type) and pulumi_types.is_output_type(declared):
        return complete(declared, {})
    return None


def _shaped(declared: Any, value: Any) -> Any:
    """`value` with every nested output type completed."""
    origin = typing.get_origin(declared)
    if origin in (list, collections.abc.Sequence) and isinstance(value, list):
        (inner,) = typing.get_args(declared) or (Any,)
        return [_shaped(inner, item) for item in value]
    if (
        isinstance(declared, type)
        and pulumi_types.is_output_type(declared)
        and isinstance(value, Mapping)
    ):
        return complete(declared, value)
    return value


def complete(result_type: type, values: Mapping[str, Any]) -> dict[str, Any]:
    """Every field of `result_type` (wire names): `values` where given, empty otherwise.

    Raises KeyError for a value the type does not declare: a fake must not invent fields.
    """
    declared = fields(result_type)
    unknown = sorted(set(values) - set(declared))
    if unknown:
        raise KeyError(f"{result_type.__name__} has no field(s) {unknown}")
    return {
        wire: _shaped(kind, values[wire]) if wire in values else _empty(kind)
        for wire, kind in declared.items()
    }
