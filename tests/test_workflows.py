"""The CI workflows deploy only what the policy pack has judged, on stacks they can find."""

from __future__ import annotations

from typing import Any

import yaml

from tests.harness import REPO

ACTION = "pulumi/actions@"


def _workflow(name: str) -> dict[str, Any]:
    data = yaml.safe_load((REPO / ".github" / "workflows" / name).read_text())
    assert isinstance(data, dict)
    return data


def _pulumi_steps(job: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in job["steps"] if str(s.get("uses", "")).startswith(ACTION)]


def test_up_is_preceded_by_a_preview_with_the_same_policy_pack() -> None:
    """pulumi/actions' `up` runs `pulumi up --skip-preview`: stack policies would only run after
    every resource exists. A preview with the same pack must come first in the same job."""
    job = _workflow("preview.yml")["jobs"]["up"]
    steps = _pulumi_steps(job)
    commands = [s["with"]["command"] for s in steps]
    assert commands == ["preview", "up"]
    preview, up = (s["with"] for s in steps)
    for key in ("stack-name", "cloud-url", "policyPacks", "policyPackConfigs"):
        assert preview[key] == up[key], key
    assert up["policyPacks"] == "policies"


def test_every_pulumi_step_creates_or_selects_its_stack() -> None:
    """Without `upsert: true` pulumi/actions only selects the stack, and fails when it is new."""
    for job in _workflow("preview.yml")["jobs"].values():
        for step in _pulumi_steps(job):
            assert step["with"].get("upsert") is True, step["name"]


def test_jobs_that_run_the_program_keep_the_lock() -> None:
    """The uv toolchain syncs before the program and the pack; UV_FROZEN keeps uv.lock as is."""
    for name, job in _workflow("preview.yml")["jobs"].items():
        assert job["env"]["UV_FROZEN"] == "1", name


def test_every_pulumi_step_runs_the_cli_the_engine_tests_run() -> None:
    """pulumi/actions installs the newest CLI unless told; the workflows pin the versions
    table's, which is the release the engine test bed builds and tests with."""
    from planning.versions import VERSIONS
    from testbed.versions import TESTBED_VERSIONS

    assert TESTBED_VERSIONS.engine_pulumi_cli.value == f"v{VERSIONS.pulumi_cli.value}"
    steps = [
        step for job in _workflow("preview.yml")["jobs"].values() for step in _pulumi_steps(job)
    ]
    assert len(steps) == 3
    for step in steps:
        assert str(step["with"].get("pulumi-version")) == VERSIONS.pulumi_cli.value, step["name"]


def test_the_workflow_and_readme_say_which_iam_the_runner_needs_for_the_dns_endpoint() -> None:
    """The runner reaches the cluster on its DNS endpoint (the stacks' default), which IAM
    guards: without container.clusters.connect `up` fails at the first Kubernetes object."""
    from stack_config import NetworkConfig

    assert NetworkConfig().control_plane_endpoint == "dns"
    workflow = (REPO / ".github" / "workflows" / "preview.yml").read_text()
    readme = (REPO / "README.md").read_text()
    assert "container.clusters.connect" in workflow
    ci = readme.split("\n## CI\n", 1)[1].split("\n## ", 1)[0]
    assert "container.clusters.connect" in ci
