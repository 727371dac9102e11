"""Read `Pulumi.yaml` and `Pulumi.<stack>.yaml` the way the Pulumi CLI does.

The result is the flat `{"namespace:key": "raw string"}` map the engine hands a program:
project-level defaults first, stack values on top, objects and lists JSON-encoded, and
`secure:` values replaced by placeholder secrets (their ciphertext needs the CLI and a key).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

SECRET_PLACEHOLDER = "preflight-placeholder-secret"  # noqa: S105 - a fake
"""Value given to every `secure:` key; tests grep outputs for it to prove nothing leaks."""

_STACK_FILE = re.compile(r"^Pulumi\.(?P<stack>[A-Za-z0-9_.-]+)\.ya?ml$")
_SCHEMA_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "boolean": (bool,),
    "integer": (int,),
    "array": (list,),
}


class StackFileError(Exception):
    """The project or stack file cannot be used (exit code 2)."""


@dataclass(frozen=True)
class ProjectFile:
    """The parts of `Pulumi.yaml` preflight needs."""

    path: Path
    name: str
    config: dict[str, Any]
    """Raw `config:` block, keys as written (bare keys belong to the project namespace)."""
    main: str = "__main__.py"


@dataclass(frozen=True)
class StackConfigValues:
    """Configuration as the engine would pass it to the program."""

    stack: str
    values: dict[str, str]
    secret_keys: list[str] = field(default_factory=list)
    disabled_default_providers: tuple[str, ...] = ()


def stack_name_from_file(path: Path) -> str:
    """`Pulumi.b200.yaml` -> `b200`; anything else is a usage error."""
    match = _STACK_FILE.match(path.name)
    if match is None:
        raise StackFileError(f"{path.name}: a stack file must be named Pulumi.<stack>.yaml")
    return match.group("stack")


def _load_yaml(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise StackFileError(f"cannot read {path}: {err.strerror}") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise StackFileError(f"{path.name} is not valid YAML: {err}") from None


def read_project(project_dir: Path) -> ProjectFile:
    """Parse `Pulumi.yaml` in `project_dir`."""
    path = project_dir / "Pulumi.yaml"
    data = _load_yaml(path)
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        raise StackFileError(f"{path}: not a Pulumi project file (no name)")
    config = data.get("config") or {}
    if not isinstance(config, dict):
        raise StackFileError(f"{path}: config must be a map")
    main = data.get("main") or "__main__.py"
    return ProjectFile(path=path, name=data["name"], config=config, main=str(main))


def _full_key(project: str, key: str) -> str:
    return key if ":" in key else f"{project}:{key}"


def _encode(value: Any) -> str:
    """How the engine passes a config value to a program: strings raw, the rest as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"))


def _replace_secure(value: Any) -> tuple[Any, bool]:
    """Swap every `{secure: ...}` for the placeholder; report whether any was found."""
    if isinstance(value, dict):
        if set(value) == {"secure"}:
            return SECRET_PLACEHOLDER, True
        found = False
        out: dict[str, Any] = {}
        for k, v in value.items():
            out[k], inner = _replace_secure(v)
            found = found or inner
        return out, found
    if isinstance(value, list):
        items = [_replace_secure(v) for v in value]
        return [v for v, _ in items], any(s for _, s in items)
    return value, False


def read_stack(project: ProjectFile, stack_file: Path) -> StackConfigValues:
    """Merge project defaults and the stack file into the engine's config map."""
    stack = stack_name_from_file(stack_file)
    data = _load_yaml(stack_file)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise StackFileError(f"{stack_file.name}: expected a map with a config: key")
    stack_config = data.get("config") or {}
    if not isinstance(stack_config, dict):
        raise StackFileError(f"{stack_file.name}: config must be a map")

    values: dict[str, str] = {}
    secret_keys: list[str] = []
    schemas: dict[str, dict[str, Any]] = {}

    for key, decl in project.config.items():
        full = _full_key(project.name, str(key))
        if isinstance(decl, dict) and "type" in decl:
            schemas[full] = decl
            if "default" in decl:
                values[full] = _encode(decl["default"])
        elif isinstance(decl, dict) and "value" in decl:
            values[full] = _encode(decl["value"])
        elif not isinstance(decl, dict):
            values[full] = _encode(decl)

    for key, raw in stack_config.items():
        full = str(key)
        if ":" not in full:
            raise StackFileError(
                f"{stack_file.name}: key {full!r} needs a namespace, e.g. {project.name}:{full}"
            )
        value, secret = _replace_secure(raw)
        schema = schemas.get(full)
        if schema is not None and not secret:
            _check_type(stack_file.name, full, value, schema)
        values[full] = _encode(value)
        if secret or (schema is not None and schema.get("secret") is True):
            secret_keys.append(full)

    disabled = values.get("pulumi:disable-default-providers")
    disabled_list: tuple[str, ...] = ()
    if disabled is not None:
        parsed = json.loads(disabled) if disabled.startswith("[") else [disabled]
        disabled_list = tuple(str(p) for p in parsed)
    return StackConfigValues(stack, values, sorted(secret_keys), disabled_list)


def _check_type(file: str, key: str, value: Any, schema: dict[str, Any]) -> None:
    expected = str(schema.get("type"))
    allowed = _SCHEMA_TYPES.get(expected)
    if allowed is None:
        return
    ok = isinstance(value, allowed) and not (expected == "integer" and isinstance(value, bool))
    if isinstance(value, str):
        # `pulumi config set` writes scalars as strings; the CLI parses them against the type.
        ok = ok or (expected == "boolean" and value in ("true", "false"))
        ok = ok or (expected == "integer" and re.fullmatch(r"-?[0-9]+", value) is not None)
    if not ok:
        raise StackFileError(
            f"{file}: {key} must be {'an' if expected[0] in 'aeiou' else 'a'} {expected}"
            f" (Pulumi.yaml declares its type), got {value!r}"
        )
