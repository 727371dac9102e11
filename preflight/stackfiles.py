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
    """Merge project defaults and the stack file into the engine's config map.

    Fails (StackFileError) exactly where the CLI's own checks stop a preview before the
    program runs (`pkg/workspace/config.go`): a declared key of the project's namespace with
    no default that the stack does not set, a `secret: true` key given in plain text, and a
    value that does not match its declared type.
    """
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
    given: dict[str, tuple[Any, bool]] = {}
    for key, raw in stack_config.items():
        full = str(key)
        if ":" not in full:
            raise StackFileError(
                f"{stack_file.name}: key {full!r} needs a namespace, e.g. {project.name}:{full}"
            )
        given[full] = (raw, isinstance(raw, dict) and set(raw) == {"secure"})

    missing: list[str] = []
    for key, decl in project.config.items():
        full = _full_key(project.name, str(key))
        declared = decl if isinstance(decl, dict) else {"value": decl}
        if full in given:
            raw, secure = given[full]
            if declared.get("secret") is True and not secure:
                raise StackFileError(
                    f"{stack_file.name}: {full} is declared secret in Pulumi.yaml but is set in"
                    f" plain text (the CLI refuses it: must be encrypted). Fix: pulumi config set"
                    f" --secret {full} VALUE -s {stack}"
                )
            if "type" in declared and not secure:
                _check_type(stack_file.name, stack, full, raw, declared)
            continue
        if "default" in declared:
            values[full] = _encode(declared["default"])
        elif "value" in declared:
            values[full] = _encode(declared["value"])
        elif full.split(":", 1)[0] == project.name:
            missing.append(full)
    if missing:
        listed = ", ".join(missing)
        raise StackFileError(
            f"{stack_file.name}: missing configuration value{'s' if len(missing) > 1 else ''}"
            f" {listed} (declared in Pulumi.yaml without a default; the CLI stops before the"
            f" program runs). Fix: pulumi config set {missing[0]} VALUE -s {stack}"
            " (structured keys: --path, see Pulumi.yaml)"
        )

    for full, (raw, _) in given.items():
        value, secret = _replace_secure(raw)
        values[full] = _encode(value)
        decl = (
            project.config.get(full.split(":", 1)[1])
            if full.startswith(f"{project.name}:")
            else None
        )
        if secret or (isinstance(decl, dict) and decl.get("secret") is True):
            secret_keys.append(full)

    disabled = values.get("pulumi:disable-default-providers")
    disabled_list: tuple[str, ...] = ()
    if disabled is not None:
        parsed = json.loads(disabled) if disabled.startswith("[") else [disabled]
        disabled_list = tuple(str(p) for p in parsed)
    return StackConfigValues(stack, values, sorted(secret_keys), disabled_list)


def _cli_content(value: Any) -> Any:
    """What the CLI type-checks: a scalar as the text the stack file stores, else the structure."""
    if isinstance(value, dict | list):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def _matches(expected: str, items: Any, content: Any) -> bool:
    """`workspace.ValidateConfigValue` of the Pulumi SDK, on the stack file's content."""
    if expected == "string":
        return isinstance(content, str)
    if expected == "integer":
        if isinstance(content, bool):
            return False
        if isinstance(content, int | float):
            return float(content).is_integer()
        return isinstance(content, str) and re.fullmatch(r"[+-]?[0-9]+", content) is not None
    if expected == "boolean":
        return content in ("true", "false") or isinstance(content, bool)
    if expected == "object":
        return isinstance(content, dict)
    if not isinstance(content, list) or not isinstance(items, dict):
        return False
    return all(_matches(str(items.get("type")), items.get("items"), item) for item in content)


def _check_type(file: str, stack: str, key: str, value: Any, schema: dict[str, Any]) -> None:
    expected = str(schema.get("type"))
    content = _cli_content(value)
    if isinstance(content, list):
        content = [_cli_content(v) if not isinstance(v, dict | list) else v for v in content]
    if not _matches(expected, schema.get("items"), content):
        article = "an" if expected[0] in "aeiou" else "a"
        hint = (
            f"write it as a YAML map in {file}"
            if expected == "object"
            else f"pulumi config set {key} VALUE -s {stack}"
        )
        raise StackFileError(
            f"{file}: {key} must be {article} {expected} (Pulumi.yaml declares its type),"
            f" got {value!r}. Fix: {hint}"
        )
