"""Engine tests: run only when `make engine` has built the real engine (CI requires it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.engine.realcli import Workspace, engine_available, make_workspace, require_engine


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Everything under tests/engine carries the `engine` marker."""
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.engine)


@pytest.fixture(scope="session")
def engine() -> None:
    """Skip (or, with NEMO_RL_GKE_REQUIRE_ENGINE=1, fail) when the engine is not built."""
    reason = engine_available()
    if reason is None:
        return
    if require_engine():
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture
def workspace(engine: None, tmp_path: Path) -> Workspace:
    """A fresh project copy with its own file backend."""
    return make_workspace(tmp_path)
