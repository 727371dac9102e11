"""pytest configuration: program runs are cached per stack (they are deterministic)."""

from __future__ import annotations

import pytest

from preflight.cli import Result
from tests.harness import STACKS, run_stack

_CACHE: dict[str, Result] = {}


@pytest.fixture(params=STACKS)
def stack(request: pytest.FixtureRequest) -> str:
    """Each committed stack name."""
    return str(request.param)


def committed(stack: str) -> Result:
    """Preflight result of a committed stack, computed once per session."""
    if stack not in _CACHE:
        _CACHE[stack] = run_stack(stack)
    return _CACHE[stack]


@pytest.fixture
def dev() -> Result:
    """The dev stack's preflight result."""
    return committed("dev")


@pytest.fixture
def b200() -> Result:
    """The b200 stack's preflight result."""
    return committed("b200")


@pytest.fixture
def h200() -> Result:
    """The h200 stack's preflight result."""
    return committed("h200")
