"""uv is a prerequisite of `pulumi preview` itself: its minimum is declared and kept in step.

Pulumi.yaml's uv toolchain runs `uv sync` from PATH before the program and the policy pack
and refuses uv older than its minimum (sdk/v3 v3.276.0 `python/toolchain/uv.go`). The engine
test `test_the_readme_first_deploy_runs_as_written_on_a_clean_copy` runs the README's
instructions with uv only where they put it.
"""

from __future__ import annotations

import re
import tomllib

import yaml
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from planning.versions import VERSIONS
from tests.harness import REPO


def _required() -> SpecifierSet:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    return SpecifierSet(pyproject["tool"]["uv"]["required-version"])


def test_pyproject_declares_the_toolchain_s_minimum_uv() -> None:
    assert str(_required()) == f">={VERSIONS.uv_minimum.value}"
    assert Version("0.6.14") not in _required()


def _pinned_uvs() -> dict[str, str]:
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    found = {"Makefile": re.search(r"^UV_VERSION := (\S+)$", makefile, re.M)[1]}  # type: ignore[index]
    for name in ("ci.yml", "preview.yml"):
        workflow = yaml.safe_load((REPO / ".github" / "workflows" / name).read_text())
        for job_name, job in workflow["jobs"].items():
            for step in job["steps"]:
                if str(step.get("uses", "")).startswith("astral-sh/setup-uv@"):
                    found[f"{name}:{job_name}"] = str(step["with"]["version"])
    runbook = (REPO / "docs" / "runbook.md").read_text(encoding="utf-8")
    found["runbook"] = re.search(r'pip install "uv==([0-9.]+)"', runbook)[1]  # type: ignore[index]
    return found


def test_every_uv_the_project_installs_is_the_same_and_new_enough() -> None:
    pinned = _pinned_uvs()
    assert len(set(pinned.values())) == 1, pinned
    for where, version in pinned.items():
        assert Version(version) in _required(), where


def test_the_readme_puts_uv_on_path_and_freezes_the_lock() -> None:
    """The prerequisites say how to get uv onto PATH and to set UV_FROZEN=1 (without it the
    toolchain's `uv sync` may rewrite uv.lock)."""
    runbook = (REPO / "docs" / "runbook.md").read_text(encoding="utf-8")
    prerequisites = runbook.split("## Prerequisites", 1)[1].split("## First deploy", 1)[0]
    block = prerequisites.split("**Tools**", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    assert "pip install" in block
    assert re.search(r"export PATH=\S*uv\S*:\$PATH", block)
    assert "UV_FROZEN=1" in block
