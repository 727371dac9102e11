"""Safe readers for policy props.

The engine hands policies read-only Mapping/Sequence proxies in wire form: camelCase keys,
numbers as floats, inputs after the provider's `Check` (its schema defaults filled in), stack
policies the outputs. These helpers never index blindly, so a missing property is "not set",
not a crash; an unknown value (during a preview) raises, so the engine reports the policy as
"can't run ... during preview" instead of passing it silently.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pulumi_policy.proxy import UnknownValueError


def get_map(props: Mapping[str, Any] | None, *path: str) -> Mapping[str, Any]:
    """The mapping at `path`, or an empty one."""
    current: Any = props
    for key in path:
        if not isinstance(current, Mapping):
            return {}
        current = current.get(key)
    return current if isinstance(current, Mapping) else {}


def _get(props: Mapping[str, Any] | None, path: tuple[str, ...]) -> Any:
    """The value at `path` (the last key inside the map the other keys lead to), or None."""
    *head, last = path
    return get_map(props, *head).get(last) if head else (props or {}).get(last)


def get_list(props: Mapping[str, Any] | None, *path: str) -> list[Any]:
    """The list at `path`, or an empty one."""
    value = _get(props, path)
    if isinstance(value, Sequence) and not isinstance(value, str):
        return list(value)
    return []


def get_requested_list(props: Mapping[str, Any] | None, *path: str) -> list[Any]:
    """A list that holds only what the program asked for, read from a stack policy's outputs.

    Some lists are Optional+Computed in pulumi-gcp and GCP fills them only with what was
    requested: a node pool's additional node networks, a subnet's secondary ranges. When the
    program sets none, the provider returns the list as computed, unknown until the resource
    exists; that unknown means "none asked for", so it reads as empty here (where the program
    does set the list, it is the program's own value, known during a preview).
    """
    try:
        return get_list(props, *path)
    except UnknownValueError:
        return []


def get_int(props: Mapping[str, Any] | None, *path: str) -> int | None:
    """The number at `path` as an int (wire numbers are floats), or None."""
    value = _get(props, path)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value)


def get_bool(props: Mapping[str, Any] | None, *path: str) -> bool | None:
    """The boolean at `path`, or None when unset."""
    value = _get(props, path)
    return value if isinstance(value, bool) else None


def get_str(props: Mapping[str, Any] | None, *path: str) -> str | None:
    """The string at `path`, or None."""
    value = _get(props, path)
    return value if isinstance(value, str) else None


def as_int(value: Any) -> int | None:
    """Wire numbers are floats and some APIs send numbers as strings; both become ints."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


def region_of(location: str | None) -> str | None:
    """`us-central1-b` -> `us-central1`; a region stays as it is."""
    if not location:
        return None
    parts = location.split("-")
    if len(parts) == 3 and len(parts[2]) == 1:
        return "-".join(parts[:2])
    return location


def has_key(props: Mapping[str, Any] | None, key: str) -> bool:
    """Whether `key` is set, without reading its value (which may be unknown at preview)."""
    return any(k == key for k in (props or {}))


def known_items(value: Mapping[str, Any] | Sequence[Any]) -> Iterator[tuple[Any, Any]]:
    """(key or index, value) pairs whose value is known; unknown ones are skipped.

    Reading an unknown value raises UnknownValueError, which turns a whole policy advisory;
    walks over a manifest use this to pass by values they do not need.
    """
    keys: list[Any] = list(value) if isinstance(value, Mapping) else list(range(len(value)))
    for key in keys:
        try:
            item = value[key]
        except UnknownValueError:
            continue
        yield key, item
