"""The policy pack must start the way the language host starts it (from its own folder)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from preflight.cli import preflight
from preflight.mock_run import ProgramError
from preflight.pack_check import pack_shadowing
from tests.harness import REPO


def test_the_committed_pack_shadows_nothing() -> None:
    assert pack_shadowing(REPO / "policies") == []


@pytest.mark.parametrize("module", ["types.py", "grpc.py", "yaml/__init__.py"])
def test_a_module_named_like_another_is_reported(tmp_path: Path, module: str) -> None:
    pack = tmp_path / "policies"
    shutil.copytree(REPO / "policies", pack)
    (pack / module).parent.mkdir(parents=True, exist_ok=True)
    (pack / module).write_text("X = 1\n")
    (problem,) = pack_shadowing(pack)
    assert Path(module).parts[0].removesuffix(".py") in problem
    assert "python -u -m pulumi.policy" in problem


def test_the_reported_breakage_is_real(tmp_path: Path) -> None:
    """What the language host does: `python -u -m pulumi.policy` with the pack folder as cwd."""
    pack = tmp_path / "policies"
    pack.mkdir()
    (pack / "types.py").write_text('"""Resource type tokens."""\n')
    proc = subprocess.run(
        [sys.executable, "-u", "-m", "pulumi.policy"],
        cwd=pack,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode != 0
    assert "types" in proc.stderr


def test_preflight_refuses_a_pack_that_cannot_start(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy2(REPO / name, project / name)
    shutil.copytree(REPO / "policies", project / "policies")
    (project / "policies" / "types.py").write_text("NETWORK = 'x'\n")
    with pytest.raises(ProgramError, match=r"types\.py shadows the standard library"):
        preflight(REPO / "Pulumi.dev.yaml", project_dir=project)
