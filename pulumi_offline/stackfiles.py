"""Read `Pulumi.yaml` and `Pulumi.<stack>.yaml` the way the Pulumi CLI does.

Follows the Pulumi CLI v3.276.0 (sdk/go/common/workspace and pkg/workspace/config.go). The
result is the flat `{"namespace:key": "raw string"}` map the engine hands a program:
project-level defaults first, stack values on top, objects and lists JSON-encoded, and
`secure:` values replaced by placeholder secrets (their ciphertext needs the CLI and a key).
The files are decoded as the CLI decodes them (`pulumi_offline.cli_yaml`: yaml.v3's scalars, its
refusals, fixed bounds), and every message is one line that never shows a secret.

It cannot prove what needs the CLI's services: the secrets provider and its key, the ESC
environments a stack file names (`environment:` is accepted, not opened), and config the
CLI's `--config` flags or the Pulumi Cloud would add.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pulumi_offline.cli_yaml import MAX_FILE_BYTES, GoTime, YamlRefused, load
from pulumi_offline.config_values import (
    UnsupportedValue,
    contains_secure,
    encode,
    is_secure,
    plain,
    redacted,
    secure_path,
)
from stack_config.errors import look_alike_of, show, show_key, strange_characters

STACK_FILE_KEYS = ("config", "environment", "secretsprovider", "encryptedkey", "encryptionsalt")
"""What a stack file may hold (workspace.ProjectStack); the CLI ignores anything else."""

_STACK_FILE = re.compile(r"Pulumi\.(?P<stack>[A-Za-z0-9_.-]+)\.ya?ml")


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
    secret_paths: dict[str, str] = field(default_factory=dict)
    """Where the secret of each secret key sits, as a `--path` key (`nemo-rl-gke:ray.job.model`):
    the engine tells the program the top-level key only, the file tells preflight the leaf."""
    environments: tuple[str, ...] = ()
    """Pulumi ESC environments the stack file imports (`environment:`): their values are not
    in `values`, which preflight says whenever it judges such a file."""


def environment_names(raw: Any) -> tuple[str, ...]:
    """The environments a stack file's `environment:` imports: a list of names, or a map with
    an `imports` list (names may carry a version or a map of one name)."""
    items = raw.get("imports") if isinstance(raw, dict) else raw
    if items is None:
        return ()
    if not isinstance(items, list):
        items = [items]
    names: list[str] = []
    for item in items:
        names += [str(k) for k in item] if isinstance(item, dict) else [str(item)]
    return tuple(names)


def environment_note(environments: tuple[str, ...]) -> str:
    """What preflight says about a stack file that imports ESC environments."""
    return (
        f"the stack file imports Pulumi ESC environment(s) {', '.join(environments)}, which"
        " preflight cannot open: it judged the file's own values only (where both set a key,"
        " the stack file's value wins; a key only the environment sets was not judged)."
        " `pulumi preview` resolves the environment and runs the same checks on every value"
    )


def stack_name_from_file(path: Path) -> str:
    """`Pulumi.b200.yaml` -> `b200`; anything else is a usage error."""
    match = _STACK_FILE.fullmatch(path.name)
    if match is None:
        raise StackFileError(
            f"{show_key(path.name)}: a stack file must be named Pulumi.<stack>.yaml"
        )
    return match.group("stack")


def _load_yaml(path: Path) -> Any:
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as err:
        raise StackFileError(f"cannot read {show_key(str(path))}: {err.strerror}") from None
    try:
        return load(data)
    except YamlRefused as err:
        where = f" line {err.line}:" if err.line is not None else ""
        raise StackFileError(f"{show_key(path.name)}:{where} {err.problem}") from None


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


def config_key(project: str, key: str, file: str) -> str:
    """A stack file key as the CLI reads it (config.ParseKey): a bare key belongs to the
    project (the CLI namespaces it), `ns:config:name` is the old form of `ns:name`."""
    parts = key.split(":")
    if len(parts) == 1:
        return f"{project}:{key}"
    if len(parts) == 2:
        return key
    if len(parts) == 3 and parts[1] == "config":
        return f"{parts[0]}:{parts[2]}"
    raise StackFileError(
        f"{file}: could not parse {show_key(key)} as a configuration key (the CLI refuses it too:"
        " configuration keys should be of the form <namespace>:<name>)"
    )


def read_stack(  # noqa: C901, PLR0915 - the CLI's checks of a stack file, in its order
    project: ProjectFile, stack_file: Path
) -> StackConfigValues:
    """Merge project defaults and the stack file into the engine's config map.

    Fails (StackFileError) where the CLI itself stops a preview before the program runs
    (`pkg/workspace/config.go`, `sdk/go/common/workspace/loaders.go`): a file it cannot
    decode, a key it cannot parse, a declared key of the project's namespace with no default
    that the stack does not set, a `secret: true` key given in plain text, a value that does
    not match its declared type. Preflight also refuses what the CLI would silently ignore:
    a top-level key other than the stack file's own, and one key written twice.
    """
    stack = stack_name_from_file(stack_file)
    file = show_key(stack_file.name)
    data = _load_yaml(stack_file)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise StackFileError(f"{file}: expected a map with a config: key")
    for key in data:
        if key not in STACK_FILE_KEYS:
            hint = difflib.get_close_matches(key, STACK_FILE_KEYS, n=1)
            guess = f"; did you mean {hint[0]}?" if hint else ""
            raise StackFileError(
                f"{file}: top-level key {show_key(key)} does nothing (the CLI ignores it, so"
                f" none of its settings would apply){guess} A stack file holds"
                f" {', '.join(STACK_FILE_KEYS)}"
            )
    stack_config = data.get("config") or {}
    if not isinstance(stack_config, dict):
        raise StackFileError(f"{file}: config must be a map")

    values: dict[str, str] = {}
    secret_keys: list[str] = []
    secret_paths: dict[str, str] = {}
    given: dict[str, tuple[Any, bool]] = {}
    written: dict[str, str] = {}
    for key, raw in stack_config.items():
        full = config_key(project.name, key, file)
        if full in written:
            raise StackFileError(
                f"{file}: {show_key(key)} and {show_key(written[full])} are the same key"
                f" ({show_key(full)}); the CLI would keep one of them at random. Keep one"
            )
        written[full] = key
        given[full] = (raw, is_secure(raw))
        # The CLI refuses a value JSON cannot carry while it loads the file, before any check.
        try:
            values[full] = encode(plain(raw, full))
        except UnsupportedValue as err:
            raise StackFileError(
                f"{file}: {show_key(err.path)}: {err.name} is not a number the CLI can pass on"
                f" (json: unsupported value: {err.name}); write a number or quote it"
            ) from None

    missing: list[str] = []
    for key, decl in project.config.items():
        full = _full_key(project.name, str(key))
        declared = decl if isinstance(decl, dict) else {"value": decl}
        if full in given:
            raw, secure = given[full]
            if declared.get("secret") is True and not secure:
                raise StackFileError(
                    f"{file}: {full} is declared secret in Pulumi.yaml but is set in"
                    f" plain text (the CLI refuses it: must be encrypted). Fix: pulumi config set"
                    f" --secret {full} VALUE -s {stack}"
                )
            if "type" in declared and not secure:
                _check_type(file, stack, full, raw, declared)
            continue
        if "default" in declared:
            values[full] = encode(declared["default"])
        elif "value" in declared:
            values[full] = encode(declared["value"])
        elif full.split(":", 1)[0] == project.name:
            missing.append(full)
    environments = environment_names(data.get("environment"))
    for key in missing:
        meant = key.split(":", 1)[1]
        for full, written_as in written.items():
            if look_alike_of(full, [key]) is not None:
                raise StackFileError(
                    f"{file}: {show_key(written_as)} is not {key}: it is written with a"
                    f" look-alike character ({strange_characters(written_as)}), so {key} is"
                    f" unset and the CLI stops. Fix: retype the key as {meant}, in plain ASCII"
                )
    if missing:
        listed = ", ".join(missing)
        imported = (
            f"; the stack file imports ESC environment(s) {', '.join(environments)}, which"
            " preflight cannot open: if one sets it, `pulumi preview` will find it"
            if environments
            else ""
        )
        raise StackFileError(
            f"{file}: missing configuration value{'s' if len(missing) > 1 else ''}"
            f" {listed} (declared in Pulumi.yaml without a default; the CLI stops before the"
            f" program runs{imported}). Fix: pulumi config set {missing[0]} VALUE -s {stack}"
            " (structured keys: --path, see Pulumi.yaml)"
        )

    for full, (raw, _) in given.items():
        decl = (
            project.config.get(full.split(":", 1)[1])
            if full.startswith(f"{project.name}:")
            else None
        )
        if contains_secure(raw) or (isinstance(decl, dict) and decl.get("secret") is True):
            secret_keys.append(full)
            secret_paths[full] = secure_path(raw, full) or full

    disabled = values.get("pulumi:disable-default-providers")
    disabled_list: tuple[str, ...] = ()
    if disabled is not None:
        try:
            parsed = json.loads(disabled) if disabled.startswith("[") else [disabled]
        except json.JSONDecodeError:
            parsed = [disabled]
        disabled_list = tuple(str(p) for p in parsed) if isinstance(parsed, list) else ()
    return StackConfigValues(
        stack,
        values,
        sorted(secret_keys),
        disabled_list,
        secret_paths=secret_paths,
        environments=environments,
    )


def _cli_content(value: Any) -> Any:
    """What the CLI type-checks: a scalar as the text it passes on, else the structure."""
    if isinstance(value, dict | list):
        return value
    return encode(value.text if isinstance(value, GoTime) else value)


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
            f" got {show(redacted(value))}. Fix: {hint}"
        )
