"""Policies judged as in a new stack's first `pulumi preview`, where computed values are unknown.

Under the real engine a policy that reads an unknown value is reported as advisory ("can't
run policy ... during preview"), so a mandatory check that depends on an id or an address the
cloud computes never blocks a fresh stack. Preflight runs in that mode by default; these tests
hold the program to sending known values (names it chose) wherever a policy needs them.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from preflight.cli import Result, preflight
from tests.harness import REPO, STACKS, run_stack, write_stack
from tests.unsafe_variants import VARIANTS, Variant

PROGRAM_FILES = ("__main__.py", "Pulumi.yaml")


def preview_of(variant: Variant, tmp_path: Path) -> Result:
    """Preflight (first-preview mode) of a variant, in a project copy when the program changes."""
    project = REPO
    if variant.program:
        project = tmp_path / "project"
        project.mkdir()
        for name in PROGRAM_FILES:
            shutil.copy2(REPO / name, project / name)
        shutil.copytree(REPO / "policies", project / "policies")
        original = (REPO / "__main__.py").read_text(encoding="utf-8")
        (project / "__main__.py").write_text(variant.main_py(original), encoding="utf-8")
    stack_file = write_stack(tmp_path, variant.base, variant.stack_config())
    policy_config = REPO / "policies" / "config" / f"{variant.base}.json"
    return preflight(stack_file, project_dir=project, policy_config=policy_config, known=False)


@pytest.mark.parametrize("stack", STACKS)
def test_committed_stacks_pass_a_first_preview_with_no_policy_left_unjudged(stack: str) -> None:
    result = run_stack(stack, known=False)
    assert result.violations == [], [f"{v.policy}: {v.message}" for v in result.violations]


def test_preview_mode_leaves_computed_values_unknown() -> None:
    """The mode is real: ids and cluster endpoints are unknown, names the program chose are not."""
    result = run_stack("b200", known=False)
    by_name = {r.name: r for r in result.run.records}
    assert by_name["gpu-pool"].inputs["cluster"] == "[unknown]"  # the cluster's id
    assert by_name["primary-sub"].inputs["network"] == "nemo-rl-b200-net"
    assert result.run.exports["kubeconfig"].secret
    assert result.run.exports["workloadNamespace"].value == "[unknown]"
    known = run_stack("b200", known=True)
    assert (
        {r.name: r for r in known.run.records}["gpu-pool"].inputs["cluster"].startswith("projects/")
    )


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_unsafe_variants_are_blocked_by_their_mandatory_policy_in_a_first_preview(
    variant: Variant, tmp_path: Path
) -> None:
    result = preview_of(variant, tmp_path)
    unjudged = [v for v in result.violations if "during preview" in v.message]
    assert unjudged == [], "a mandatory policy turned advisory on an unknown value"
    blocking = {v.policy for v in result.mandatory}
    assert variant.policy in blocking, [f"{v.policy}: {v.message}" for v in result.violations]
