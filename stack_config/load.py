"""Turn raw Pulumi config (key -> string) into a validated StackConfig.

`load_stack_config` is pure: it takes the same `{"namespace:key": "raw string"}` map the
Pulumi engine hands the program, so tests and preflight exercise exactly the code path the
real `pulumi up` runs. The first problem found becomes one `InvalidStackConfig` that names
the key path (`nemo-rl-gke:gpu.reservation`) and the fix.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Collection, Mapping
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

from planning.naming import PROJECT, default_base_name
from planning.ray import tokens_needed
from stack_config.errors import (
    ConfigProblem,
    InvalidStackConfig,
    look_alike_of,
    show,
    strange_characters,
)
from stack_config.labels import label_count_problems
from stack_config.namespaces import namespace_problems
from stack_config.secrets import PROVIDER_KEYS, SECRET_KEYS, secret_problems
from stack_config.stack import StackConfig


def load_stack_config(
    values: Mapping[str, Any],
    stack: str,
    secret_keys: Collection[str] = (),
    secret_paths: Mapping[str, str] | None = None,
) -> StackConfig:
    """Validate the stack's configuration; raise InvalidStackConfig on the first problem.

    `secret_keys` are the full keys the engine marks secret (PULUMI_CONFIG_SECRET_KEYS).
    Before any value reaches the models: a key that does nothing is refused
    (`namespaces`), then a token or credential in plain text and a secret where the program
    would show it (`secrets`; unknown secrecy counts as plain text). So no message below can
    quote a secret. `secret_paths` name where inside a key its secret sits, where the stack
    file is at hand (preflight); the engine names the top-level key only.
    """
    namespace_problems(values, stack)
    secret_problems(values, secret_keys, stack, secret_paths or {})
    raw: dict[str, Any] = {key: values[key] for key in PROVIDER_KEYS if values.get(key) is not None}
    prefix = f"{PROJECT}:"
    for key, value in values.items():
        if not key.startswith(prefix):
            continue
        name = key[len(prefix) :]
        if name in SECRET_KEYS:
            continue
        raw[name] = _decode(name, value)
    if not raw.get("name"):  # Pulumi.yaml's default is "": derive the name from the stack
        raw["name"] = default_base_name(stack)
    try:
        cfg = StackConfig.model_validate(raw)
    except ValidationError as err:
        raise _invalid(err, stack) from None
    label_count_problems(cfg.labels, values, stack)
    _check_secrets(cfg, secret_keys_present(values), stack)
    return cfg


def _check_secrets(cfg: StackConfig, present: Mapping[str, bool], stack: str) -> None:
    """A feature that needs a token says so before anything is created."""
    job = cfg.ray.job
    if not job.enabled:
        return
    run = cfg.grpo_run
    needed = tokens_needed(run)
    if "HF_TOKEN" in needed and not present["hfToken"]:
        raise InvalidStackConfig(
            f"{PROJECT}:hfToken",
            f"required because ray.job.enabled is true and {run.model} is a gated Hugging Face"
            " model",
            f"accept the model's licence, then pulumi config set --secret {PROJECT}:hfToken"
            f" hf_... -s {stack} (or choose an open model in ray.job.model)",
        )
    if "WANDB_API_KEY" in needed and not present["wandbApiKey"]:
        raise InvalidStackConfig(
            f"{PROJECT}:wandbApiKey",
            "required because ray.job.wandb is true",
            f"pulumi config set --secret {PROJECT}:wandbApiKey KEY -s {stack}"
            " (or set ray.job.wandb to false)",
        )


def secret_keys_present(values: Mapping[str, Any]) -> dict[str, bool]:
    """Which optional secrets the stack sets (the values themselves are never read here)."""
    return {key: values.get(f"{PROJECT}:{key}") not in (None, "") for key in SECRET_KEYS}


def _string_field(name: str) -> bool:
    field = _top_level_fields().get(name)
    return field is not None and field.annotation is str


def _decode(name: str, value: Any) -> Any:
    """Pulumi passes every value as a string; objects, lists, numbers and bools as JSON."""
    if not isinstance(value, str) or _string_field(name):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value  # let the model report the type error against the field
    except RecursionError:
        raise InvalidStackConfig(
            f"{PROJECT}:{name}",
            "is nested hundreds of levels deep; no setting of this project nests more than four",
            "write the value as the template in Pulumi.yaml shows it",
        ) from None


def _top_level_fields() -> dict[str, FieldInfo]:
    return {field.alias or name: field for name, field in StackConfig.model_fields.items()}


def _key(loc: tuple[str | int, ...]) -> str:
    if not loc:
        return f"{PROJECT}:(stack)"
    head, *rest = loc
    text = str(head) if str(head) in PROVIDER_KEYS else f"{PROJECT}:{head}"
    for part in rest:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text


def _model_at(loc: tuple[str | int, ...]) -> tuple[type[BaseModel] | None, FieldInfo | None]:
    """The model that owns the last element of `loc`, and that element's field (if any)."""
    model: type[BaseModel] | None = StackConfig
    field: FieldInfo | None = None
    for part in loc:
        if model is None:
            return None, None
        if isinstance(part, int):
            continue
        fields = {f.alias or n: f for n, f in model.model_fields.items()}
        field = fields.get(part)
        if field is None:
            return model, None
        model = _nested_model(field)
    return model, field


def _nested_model(field: FieldInfo) -> type[BaseModel] | None:
    annotation = field.annotation
    candidates = [annotation, *getattr(annotation, "__args__", ())]
    for candidate in candidates:
        for inner in [candidate, *getattr(candidate, "__args__", ())]:
            if isinstance(inner, type) and issubclass(inner, BaseModel):
                return inner
    return None


def _look_alike(errors: list[ErrorDetails]) -> InvalidStackConfig | None:
    """A key written with a look-alike character (`typ\\u0435`, a Cyrillic e): named first, as
    the user wrote it, rather than the required key it left unset."""
    for error in errors:
        if error["type"] != "extra_forbidden":
            continue
        loc = tuple(error["loc"])
        parent, _ = _model_at(loc[:-1])
        known = [f.alias or n for n, f in (parent or StackConfig).model_fields.items()]
        meant = look_alike_of(str(loc[-1]), known)
        if meant is None:
            continue
        return InvalidStackConfig(
            _key(loc),
            f"is not {meant!r}: it is written with a look-alike character"
            f" ({strange_characters(str(loc[-1]))}), so {meant} is unset",
            f"retype the key as {meant}, in plain ASCII",
            more=len(errors) - 1,
        )
    return None


def _invalid(err: ValidationError, stack: str) -> InvalidStackConfig:
    errors = err.errors()
    look_alike = _look_alike(errors)
    if look_alike is not None:
        return look_alike
    first = errors[0]
    loc = tuple(first["loc"])
    cause = (first.get("ctx") or {}).get("error")
    if isinstance(cause, ConfigProblem):
        full = loc + cause.path
        key = _key(full)
        fix = cause.fix or _describe_fix(full, stack)
        return InvalidStackConfig(key, cause.problem, fix, more=len(errors) - 1)
    problem, fix = _describe(first, loc, stack)
    return InvalidStackConfig(_key(loc), problem, fix, more=len(errors) - 1)


def _describe(error: ErrorDetails, loc: tuple[str | int, ...], stack: str) -> tuple[str, str]:
    kind = error["type"]
    key = _key(loc)
    set_cmd = (
        f"pulumi config set {key} VALUE"
        if len(loc) == 1
        else f"pulumi config set --path '{key}' VALUE"
    )
    if kind == "missing":
        return "is required", f"{set_cmd} -s {stack}"
    if kind == "extra_forbidden":
        parent, _ = _model_at(loc[:-1])
        known = sorted(f.alias or n for n, f in (parent or StackConfig).model_fields.items())
        if len(loc) == 1:
            known += list(SECRET_KEYS)
        hint = difflib.get_close_matches(str(loc[-1]), known, n=1)
        guess = f"; did you mean '{hint[0]}'?" if hint else ""
        return (
            f"is not a known setting{guess}",
            f"remove it or correct the spelling (known here: {', '.join(known)})",
        )
    message = error["msg"]
    shown = error.get("input")
    if kind in {"model_type", "dict_type", "list_type"}:
        return (
            f"{message.lower()} (got {show(shown)})",
            f"write {key} as a YAML {'list' if kind == 'list_type' else 'map'}"
            f" in Pulumi.{stack}.yaml",
        )
    return f"{show(shown)} is invalid: {message[0].lower()}{message[1:]}", _describe_fix(loc, stack)


def _describe_fix(loc: tuple[str | int, ...], stack: str) -> str:
    _, field = _model_at(loc)
    described = f" ({field.description.rstrip('.')})" if field and field.description else ""
    return f"correct {_key(loc)} in Pulumi.{stack}.yaml{described}"
