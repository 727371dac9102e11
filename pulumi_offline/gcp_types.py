"""pulumi-gcp's own types, read from the installed Python SDK, and a checker for inputs.

Follows the pulumi-gcp 10.2.0 Python SDK the project locks (uv.lock); this module is the one
place that reads it. The SDK is generated from the provider's schema: every resource token
maps to a class (`pulumi_gcp/__init__.py` registers them), every resource has an `...Args`
input type whose annotations carry each property's wire name, type and whether it is
required, its output properties say which outputs are always set, and every function
(`getReservation`) has a `...Result` type. The checker walks a request's inputs against those
types the way a provider's `Check` does: unknown property names, wrong value kinds and
missing required inputs are failures.

It cannot prove that a value is valid beyond its type (a malformed CIDR is a string), nor
anything the provider's own `Check` or the Google API decides from the values.
"""

from __future__ import annotations

import collections.abc
import enum
import functools
import importlib
import inspect
import json
import re
import typing
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pulumi
import pulumi._types as pulumi_types
from pulumi.provider.experimental.property_value import (
    Computed,
    PropertyValue,
    ResourceReference,
)


@dataclass(frozen=True)
class Failure:
    """One input the provider would refuse."""

    property: str
    reason: str


@functools.cache
def _registry() -> dict[str, tuple[str, str]]:
    """Resource token -> (module, class name), from the SDK's own registration table."""
    import pulumi_gcp

    source = Path(pulumi_gcp.__file__).read_text(encoding="utf-8")
    # `_utilities.register(resource_modules="""[...]""", ...)`: the table the SDK uses to
    # rehydrate resources, one entry per module with its token -> class map.
    match = re.search(r'resource_modules="""(.*?)"""', source, re.DOTALL)
    if match is None:
        raise RuntimeError("pulumi_gcp's resource registration table was not found")
    table: dict[str, tuple[str, str]] = {}
    for entry in json.loads(match.group(1)):
        for token, cls in entry["classes"].items():
            table[token] = (entry["fqn"], cls)
    return table


def known_tokens() -> frozenset[str]:
    """Every resource token pulumi-gcp defines."""
    return frozenset(_registry())


@functools.cache
def resource_class(token: str) -> type[pulumi.CustomResource]:
    """The SDK class of a resource token (KeyError for tokens pulumi-gcp does not define)."""
    module_name, class_name = _registry()[token]
    module = importlib.import_module(module_name)
    cls = getattr(module, class_name)
    if not (isinstance(cls, type) and issubclass(cls, pulumi.CustomResource)):
        raise TypeError(f"{token} does not name a resource class")
    return cls


@functools.cache
def args_class(token: str) -> type:
    """The `...Args` input type of a resource."""
    cls = resource_class(token)
    module = importlib.import_module(cls.__module__)
    args = getattr(module, f"{cls.__name__}Args")
    if not pulumi_types.is_input_type(args):
        raise TypeError(f"{token}: {args!r} is not an input type")
    return typing.cast(type, args)


@functools.cache
def output_names(token: str) -> frozenset[str]:
    """Wire names of a resource's output properties."""
    return frozenset(pulumi_types.resource_pulumi_to_py_names(resource_class(token)))


@functools.cache
def _output_types(token: str) -> dict[str, Any]:
    """Wire name -> the type its output property is annotated with (`Output[T]` unwrapped
    once: `T`, `Optional[T]`, ...)."""
    cls = resource_class(token)
    found: dict[str, Any] = {}
    for wire, python in pulumi_types.resource_pulumi_to_py_names(cls).items():
        prop = getattr(cls, python)
        hint = typing.get_type_hints(prop.fget)["return"]
        args = typing.get_args(hint)
        found[wire] = args[0] if args else Any
    return found


def _is_optional(annotation: Any) -> bool:
    return typing.get_origin(annotation) is typing.Union and type(None) in typing.get_args(
        annotation
    )


@functools.cache
def always_set_outputs(token: str) -> frozenset[str]:
    """Outputs the provider always fills: its schema's required outputs, which the bridge
    makes of every Required and every Computed attribute (the SDK types them `Output[T]`,
    not `Output[Optional[T]]`). Those the program does not set are computed by the cloud,
    so a preview leaves them unknown."""
    return frozenset(w for w, t in _output_types(token).items() if not _is_optional(t))


def placeholder(token: str, wire: str) -> Any:
    """A value of the output's type that is plainly made up (strings say `stand-in`)."""
    annotation = _unwrap(_output_types(token)[wire])
    origin = typing.get_origin(annotation)
    if annotation is str:
        return "stand-in"
    if annotation is bool:
        return False
    if annotation in (int, float):
        return 0.0
    if origin in (list, collections.abc.Sequence, Sequence):
        return []
    return {}


@functools.cache
def _fields(input_type: type) -> tuple[dict[str, Any], frozenset[str]]:
    """(wire name -> type, required wire names) of an input type."""
    return (
        pulumi_types.input_type_types(input_type),
        pulumi_types._required_property_names(input_type),
    )


@dataclass(frozen=True)
class FunctionSignature:
    """An invoke's argument wire names with their types, and its result type."""

    args: dict[str, Any]
    required: frozenset[str]
    result: type


def _function_module(token: str) -> tuple[ModuleType, str, str]:
    """(module, Python name, wire name) of the SDK function that sends invoke `token`.

    `pkg:module/fnName:fnName` is implemented by `pulumi_gcp.module.fn_name`.
    """
    _, module_path, _ = token.split(":")
    module_part, fn_name = module_path.split("/")
    py_name = re.sub(r"(?<!^)(?=[A-Z])", "_", fn_name).lower()
    # pulumi_gcp imports its modules lazily: importing the function's own module into a package
    # whose body has not run yet would leave the package's name bound to that module, not to the
    # function the program calls ("'module' object is not callable"). Run the body first.
    getattr(importlib.import_module(f"pulumi_gcp.{module_part}"), py_name)
    return importlib.import_module(f"pulumi_gcp.{module_part}.{py_name}"), py_name, fn_name


@functools.cache
def result_type(token: str) -> type:
    """The `...Result` type of an invoke: what the SDK function returns."""
    module, _, fn_name = _function_module(token)
    result: type = getattr(module, f"{fn_name[0].upper()}{fn_name[1:]}Result")
    return result


@functools.cache
def function_signature(token: str) -> FunctionSignature:
    """Read an invoke's arguments from the SDK function that sends it.

    The function fills `__args__['wireName'] = python_name` before calling
    `pulumi.runtime.invoke(token, ...)`; those assignments are its arguments.
    """
    module, py_name, _ = _function_module(token)
    fn = getattr(module, py_name)
    source = inspect.getsource(fn)
    if token not in source:
        raise KeyError(f"{token} is not sent by {module.__name__}.{py_name}")
    hints = typing.get_type_hints(fn)
    params = inspect.signature(fn).parameters
    args: dict[str, Any] = {}
    required: set[str] = set()
    for wire, python in re.findall(r"__args__\['(\w+)'\] = (\w+)", source):
        args[wire] = hints.get(python, Any)
        param = params.get(python)
        if param is not None and param.default is inspect.Parameter.empty:
            required.add(wire)
    return FunctionSignature(args=args, required=frozenset(required), result=result_type(token))


@functools.cache
def result_fields(result: type) -> dict[str, Any]:
    """Wire name -> declared type of the properties of an invoke's result type (or of an
    output type nested in it)."""
    found: dict[str, Any] = {}
    for _, prop in inspect.getmembers(result, lambda m: isinstance(m, property)):
        wire = getattr(prop.fget, pulumi_types._PULUMI_NAME, None)
        if wire:
            found[wire] = typing.get_type_hints(prop.fget).get("return", Any)
    return found


def result_names(result: type) -> frozenset[str]:
    """Wire names of an invoke result's properties."""
    return frozenset(result_fields(result))


def check_resource(token: str, inputs: Mapping[str, PropertyValue]) -> list[Failure]:
    """Failures for a resource's inputs, checked against its `...Args` type."""
    if token not in _registry():
        return [Failure("", f"pulumi-gcp 10.2.0 defines no resource type {token}")]
    return list(_check_object(args_class(token), inputs, ""))


def check_provider_config(config: Mapping[str, PropertyValue]) -> list[Failure]:
    """Failures for the provider's own configuration (`pulumi_gcp.Provider`'s ProviderArgs)."""
    from pulumi_gcp.provider import ProviderArgs

    # The engine passes config as strings and adds `version`; only names are checked here.
    types, _ = _fields(ProviderArgs)
    return [
        Failure(key, f"unknown provider setting {key!r}")
        for key in config
        if key not in types and key != "version" and not key.startswith("__")
    ]


def check_invoke(token: str, args: Mapping[str, PropertyValue]) -> list[Failure]:
    """Failures for an invoke's arguments."""
    try:
        signature = function_signature(token)
    except (KeyError, ModuleNotFoundError, AttributeError, ValueError):
        return [Failure("", f"pulumi-gcp 10.2.0 defines no function {token}")]
    return list(_check_fields(signature.args, signature.required, args, ""))


def _check_object(
    input_type: type, value: Mapping[str, PropertyValue], path: str
) -> Iterator[Failure]:
    types, required = _fields(input_type)
    yield from _check_fields(types, required, value, path)


def _check_fields(
    types: Mapping[str, Any],
    required: frozenset[str],
    value: Mapping[str, PropertyValue],
    path: str,
) -> Iterator[Failure]:
    for key, item in value.items():
        where = f"{path}.{key}" if path else key
        if key.startswith("__"):
            continue  # engine metadata such as __defaults
        expected = types.get(key)
        if expected is None:
            yield Failure(where, f"unknown property {key!r}; known: {', '.join(sorted(types))}")
            continue
        yield from _check_value(expected, item, where)
    for key in sorted(required):
        present = value.get(key)
        if present is None or present.value is None:
            yield Failure(f"{path}.{key}" if path else key, f"missing required property {key!r}")


def _unwrap(expected: Any) -> Any:
    """Input[T], Optional[T], Output[T] -> T."""
    previous = None
    while previous is not expected:
        previous = expected
        expected = pulumi_types.unwrap_type(expected)
    return expected


def _check_value(  # noqa: C901 - one case per schema type, as the provider checks them
    expected: Any, item: PropertyValue, where: str
) -> Iterator[Failure]:
    value = item.value
    if value is None or isinstance(value, Computed):
        return  # null is "not set"; an unknown is checked again when it is known
    if isinstance(value, ResourceReference):
        return
    expected = _unwrap(expected)
    origin = typing.get_origin(expected)
    if expected is Any:
        return
    if origin is typing.Union:
        members = [m for m in typing.get_args(expected) if m is not type(None)]
        if not any(not list(_check_value(m, item, where)) for m in members):
            yield Failure(where, f"{_kind(value)} matches none of {members}")
        return
    if origin in (list, collections.abc.Sequence, Sequence):
        if not isinstance(value, tuple | list):
            yield Failure(where, f"expected a list, got {_kind(value)}")
            return
        (inner,) = typing.get_args(expected) or (Any,)
        for index, element in enumerate(value):
            yield from _check_value(inner, element, f"{where}[{index}]")
        return
    if origin in (dict, collections.abc.Mapping, Mapping):
        if not isinstance(value, Mapping):
            yield Failure(where, f"expected a map, got {_kind(value)}")
            return
        args = typing.get_args(expected)
        inner = args[1] if len(args) == 2 else Any
        for key, element in value.items():
            yield from _check_value(inner, element, f"{where}.{key}")
        return
    if isinstance(expected, type) and pulumi_types.is_input_type(expected):
        if not isinstance(value, Mapping):
            yield Failure(where, f"expected an object ({expected.__name__}), got {_kind(value)}")
            return
        yield from _check_object(expected, value, where)
        return
    if isinstance(expected, type) and issubclass(expected, enum.Enum):
        allowed = [m.value for m in expected]
        if value not in allowed:
            yield Failure(where, f"{value!r} is not one of {allowed}")
        return
    yield from _check_scalar(expected, value, where)


def _check_scalar(expected: Any, value: Any, where: str) -> Iterator[Failure]:
    if expected is str:
        if not isinstance(value, str):
            yield Failure(where, f"expected a string, got {_kind(value)}")
    elif expected is bool:
        if not isinstance(value, bool):
            yield Failure(where, f"expected a boolean, got {_kind(value)}")
    elif expected is int:
        if isinstance(value, bool) or not isinstance(value, float) or not value.is_integer():
            yield Failure(where, f"expected an integer, got {_kind(value)}")
    elif expected is float:
        if isinstance(value, bool) or not isinstance(value, float):
            yield Failure(where, f"expected a number, got {_kind(value)}")
    elif expected in (pulumi.Asset, pulumi.Archive, pulumi.AssetArchive):
        return
    else:
        yield Failure(where, f"the stand-in cannot check values of type {expected!r}")


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return f"boolean {value}"
    if isinstance(value, float):
        return f"number {value:g}"
    if isinstance(value, str):
        return f"string {value!r}"
    if isinstance(value, tuple | list):
        return "a list"
    if isinstance(value, Mapping):
        return "a map"
    return type(value).__name__
