"""What every config model shares: frozen, camelCase keys, unknown keys refused."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
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


def check_bounds(low: int, high: int) -> None:
    """A `{min, max}` pair must be ordered."""
    if low > high:
        raise ConfigProblem(("min",), f"min ({low}) is larger than max ({high})", "make min <= max")
