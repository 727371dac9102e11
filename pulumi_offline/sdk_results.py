"""Invoke answers shaped exactly like pulumi-gcp's result types.

Follows the result types of the pulumi-gcp 10.2.0 Python SDK, as `pulumi_offline.gcp_types`
reads them. A fake answer names every field the SDK's `...Result` type declares (wire names,
nested output types included), with the values given and an empty value of the declared type
for the rest, so the program reads it the way it reads a real provider's answer, and the
stand-in provider can check it field for field.

It proves the shape of an answer, never its values: what a real API fills into the fields a
fake leaves empty is not known here.
"""

from __future__ import annotations

import collections.abc
import typing
from collections.abc import Mapping
from typing import Any

import pulumi._types as pulumi_types

from pulumi_offline.gcp_types import result_fields as fields

__all__ = ["complete", "fields"]


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
