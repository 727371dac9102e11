"""pytest configuration: program runs are cached per stack (they are deterministic)."""

from __future__ import annotations

import pytest

from preflight.cli import Result
from tests.checkout import changes, checkout_status
from tests.harness import STACKS, run_stack

_CACHE: dict[str, Result] = {}
STATUS_AT_START = pytest.StashKey[str | None]()


def pytest_sessionstart(session: pytest.Session) -> None:
    """Note the checkout's git status before any test runs."""
    session.config.stash[STATUS_AT_START] = checkout_status()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run when a test changed the checkout (tests work on copies of the project).

    Judged once, by the process that started the run (pytest-xdist's workers skip it)."""
    if hasattr(session.config, "workerinput"):
        return
    before = session.config.stash.get(STATUS_AT_START, None)
    after = checkout_status()
    if before is None or after is None:
        return
    added = changes(before, after)
    if added:
        print("\nthe tests changed the checkout:\n  " + "\n  ".join(added))
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


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
