"""Config values as the Pulumi CLI's config package holds and passes them on.

Follows sdk/go/common/resource/config of the Pulumi CLI v3.276.0 (the release planning.versions
pins): a value is a secret only when it is a map whose one key `secure` holds a string
(object.go, isSecureValue); a key is secret when a secret sits anywhere inside it; the program
receives a string raw, any other scalar as its JSON text, an object as Go's JSON (floats in
Go's form, timestamps as Go's time text), and a NaN or infinity stops the CLI (json:
unsupported value).

It cannot decrypt anything: a secret's ciphertext needs the CLI and the stack's key, so every
secret becomes the same placeholder, and whether the real ciphertext decrypts is not shown.
"""

from __future__ import annotations

import json
import math
from typing import Any

from pulumi_offline.cli_yaml import GoTime, go_float

SECRET_PLACEHOLDER = "preflight-placeholder-secret"  # noqa: S105 - a fake
"""Value given to every `secure:` key; tests grep outputs for it to prove nothing leaks."""


class UnsupportedValue(ValueError):  # noqa: N818 - the CLI's own wording
    """A number JSON cannot carry, at `path`."""

    def __init__(self, path: str, name: str) -> None:
        super().__init__(name)
        self.path = path
        self.name = name


def is_secure(value: Any) -> bool:
    """What the CLI decrypts (config.isSecureValue): a map whose only key is `secure` and
    whose value is a string. `{secure: 5}` or `{secure: x, other: y}` are plain objects."""
    return isinstance(value, dict) and len(value) == 1 and isinstance(value.get("secure"), str)


def contains_secure(value: Any) -> bool:
    """A secret sits somewhere inside `value` (the CLI then marks the whole key secret)."""
    if is_secure(value):
        return True
    if isinstance(value, dict):
        return any(contains_secure(v) for v in value.values())
    if isinstance(value, list):
        return any(contains_secure(v) for v in value)
    return False


def secure_path(value: Any, path: str) -> str | None:
    """Where the first secret inside `value` sits, as a `--path` key (`path.job.model`,
    `path[0]`); None when there is none."""
    if is_secure(value):
        return path
    items = (
        ((f"{path}.{k}", v) for k, v in value.items())
        if isinstance(value, dict)
        else ((f"{path}[{i}]", v) for i, v in enumerate(value))
        if isinstance(value, list)
        else ()
    )
    for inner, item in items:
        found = secure_path(item, inner)
        if found is not None:
            return found
    return None


def redacted(value: Any) -> Any:
    """The value with every secret replaced, for messages."""
    if is_secure(value):
        return "[secret]"
    if isinstance(value, dict):
        return {k: redacted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redacted(v) for v in value]
    if isinstance(value, GoTime):
        return value.text
    return value


def plain(value: Any, path: str) -> Any:
    """The decrypted value the engine passes (secrets as the placeholder), JSON-ready: Go's
    text for timestamps; a number JSON cannot carry raises UnsupportedValue at its path."""
    if is_secure(value):
        return SECRET_PLACEHOLDER
    if isinstance(value, dict):
        return {k: plain(v, f"{path}.{k}") for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [plain(v, f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, GoTime):
        return value.text
    if isinstance(value, float) and not math.isfinite(value):
        raise UnsupportedValue(path, go_float_name(value))
    return value


def go_float_name(value: float) -> str:
    """Go's name of a non-finite float."""
    if math.isnan(value):
        return "NaN"
    return "+Inf" if value > 0 else "-Inf"


INT64 = (-(1 << 63), (1 << 63) - 1)


def _json(value: Any) -> str:
    """JSON as Go's encoding/json writes the CLI's values (floats in Go's form). An object is
    stored as JSON and read back number by number as an int64 or else a float64
    (object.go, unmarshalObject of a json.Number), so a larger int comes out as a float."""
    if (
        isinstance(value, int)
        and not isinstance(value, bool)
        and not (INT64[0] <= value <= INT64[1])
    ):
        return go_float(float(value))
    if isinstance(value, dict):
        items = (f"{json.dumps(k, ensure_ascii=False)}:{_json(v)}" for k, v in value.items())
        return "{" + ",".join(items) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_json(v) for v in value) + "]"
    if isinstance(value, float):
        return go_float(value)
    return json.dumps(value, ensure_ascii=False)


def encode(value: Any) -> str:
    """How the engine passes a config value to a program (config.Value.MarshalString): a
    string raw, a scalar as its JSON text, an object or list as JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""  # the CLI warns and passes an empty string
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, int):
        return str(value)
    return _json(value)
