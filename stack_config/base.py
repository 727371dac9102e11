"""What every config model shares: frozen, camelCase keys, unknown keys refused."""

from __future__ import annotations

import types
import typing
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator
from pydantic.alias_generators import to_camel

from stack_config.errors import ConfigProblem

PROJECT_ID_PATTERN = r"^[a-z][a-z0-9-]{4,28}[a-z0-9]$"
"""A GCP project id (6-30 characters)."""


class ConfigModel(BaseModel):
    """Base of every stack config model.

    Frozen, and `extra="forbid"`: a misspelt key fails at load time instead of being ignored.
    Field aliases are the camelCase keys users write in `Pulumi.<stack>.yaml`.
    """

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
    )

    @field_validator("*", mode="before")
    @classmethod
    def _no_boolean_for_a_number(cls, value: Any, info: ValidationInfo) -> Any:
        """YAML's `true` is not 1 node, device or GiB: pydantic would take it as 1."""
        field = cls.model_fields.get(info.field_name or "")
        if isinstance(value, bool) and field is not None and _numeric(field.annotation):
            raise ConfigProblem(
                (), f"{str(value).lower()} is a boolean, not a number", "write a number there"
            )
        return value


def _numeric(annotation: Any) -> bool:
    """Whether a field takes a number and no boolean (`int`, `float`, optionally None)."""
    if annotation in (int, float):
        return True
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        arms = [a for a in typing.get_args(annotation) if a is not type(None)]
        return bool(arms) and bool not in arms and all(a in (int, float) for a in arms)
    return False


def check_bounds(low: int, high: int) -> None:
    """A `{min, max}` pair must be ordered."""
    if low > high:
        raise ConfigProblem(("min",), f"min ({low}) is larger than max ({high})", "make min <= max")
