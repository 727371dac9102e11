"""Rules for free text that other parsers read: Hugging Face, Hydra, shells, paths.

A value of the job's config ends up in NeMo RL's Hydra overrides (`policy.model_name=...`),
in the driver's shell command and in paths on the shared volume. Every such value is held to
a grammar in which it is inert for all of them: no `$`, braces, quotes, spaces or commas (so
no Hydra interpolation `${...}`, sweep or quoting), no path segment that starts with a dot (so
no `..` leaving /data), and no bare word Hydra would read as a bool, null or number. The
pydantic patterns are full matches (pydantic's Rust regex anchors `$` at the very end, unlike
Python's `re`, whose `$` also accepts a trailing newline); Python checks use `re.fullmatch`.
"""

from __future__ import annotations

import re
from typing import Final

from stack_config.errors import ConfigProblem, show

PATH_SEGMENT: Final = r"[A-Za-z0-9_][A-Za-z0-9_.-]*"
"""One path segment: never `.`, `..` or hidden."""
HF_PART: Final = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,94}[A-Za-z0-9_])?")
HYDRA_TYPED_WORDS: Final = re.compile(r"(?i)true|false|null|[+-]?(inf|nan)")
"""Bare words Hydra's override grammar turns into a bool, None or a float."""


def hf_model_id(value: str) -> str:
    """A Hugging Face model id as huggingface_hub validates one (`validate_repo_id`):
    `namespace/name`, each of letters, digits, `_`, `.` and `-`, starting and ending with a
    letter, digit or `_`, the name at most 96 characters, no `--` or `..`, not `.git`."""
    namespace, slash, name = value.partition("/")
    if (
        not slash
        or "/" in name
        or not HF_PART.fullmatch(namespace)
        or not HF_PART.fullmatch(name)
        or "--" in value
        or ".." in value
        or value.endswith(".git")
    ):
        raise ConfigProblem(
            (),
            f"{show(value)} is not a Hugging Face model id",
            "write ORG/NAME as on huggingface.co (letters, digits, _ . -; no -- or ..), e.g."
            " Qwen/Qwen3-0.6B",
        )
    return value


def hydra_word(value: str) -> str:
    """A bare word Hydra passes on as the same string (not true, null, inf, nan, ...)."""
    if HYDRA_TYPED_WORDS.fullmatch(value):
        raise ConfigProblem(
            (),
            f"{show(value)} would reach NeMo RL as a {_hydra_type(value)}, not as a name"
            " (Hydra reads the override's bare words)",
            "choose another name",
        )
    return value


def _hydra_type(value: str) -> str:
    lowered = value.lower()
    if lowered in ("true", "false"):
        return "boolean"
    return "null" if lowered == "null" else "number"
