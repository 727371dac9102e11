"""tools/update_plan.py: whether the merge applies a saved plan with `--plan`. The entries here
have the shape the real CLI (3.276.0) writes (`resourcePlans`, each with `goal`, `steps`; a
provider reference `URN::ID`; a secret as `{SECRET_SIG: ..., "ciphertext": ...}`); the plans of
a real first deploy, update and stale merge are judged in tests/engine/test_workflow_plan.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.harness import REPO
from tools.update_plan import SECRET_SIG, UNKNOWN, verdict

STACK = "urn:pulumi:b200::nemo-rl-gke::"
K8S = f"{STACK}pulumi:providers:kubernetes::gke-k8s"
GCP = f"{STACK}pulumi:providers:gcp::default_10_2_0"
KUBECONFIG = {SECRET_SIG: "1b47061264138c4ac30d75fd1eb44270", "ciphertext": "v1:abc"}


def entry(steps: list[str], provider: str = "", **diff: Any) -> dict[str, Any]:
    goal: dict[str, Any] = {"inputDiff": diff}
    if provider:
        goal["provider"] = provider
    return {"goal": goal, "steps": steps}


def plan(k8s: dict[str, Any], k8s_id: str, release_steps: list[str]) -> dict[str, Any]:
    return {
        "resourcePlans": {
            GCP: entry(["same"]),
            f"{STACK}gcp:container/cluster:Cluster::gke-cluster": entry(
                ["update"], f"{GCP}::default-id"
            ),
            K8S: k8s,
            f"{STACK}kubernetes:helm.sh/v3:Release::kuberay-release": entry(
                release_steps, f"{K8S}::{k8s_id}"
            ),
        }
    }


def test_a_first_deploy_is_applied_without_the_plan_naming_the_provider() -> None:
    """The Kubernetes provider is created with a kubeconfig the plan cannot show (unknown
    until the cluster exists): its releases were never checked at preview."""
    with_plan, line = verdict(plan(entry(["create"], adds={"kubeconfig": KUBECONFIG}), UNKNOWN,
                                   ["create"]))  # fmt: skip
    assert not with_plan
    assert line.startswith("without-plan: the configuration of provider gke-k8s (1 resources)")


def test_an_update_with_a_settled_provider_is_applied_with_the_plan() -> None:
    assert verdict(plan(entry(["same"]), "k8s-id", ["update"]))[0]
    # Known configuration of a new provider (no secret, nothing unknown) is checked at preview.
    known = entry(["create"], adds={"clusterIdentifier": "gke_p_z_c"})
    assert verdict(plan(known, UNKNOWN, ["create"]))[0]


def test_a_changed_kubeconfig_with_nothing_of_the_provider_s_changing_keeps_the_plan() -> None:
    changed = entry(["update"], updates={"kubeconfig": KUBECONFIG})
    assert not verdict(plan(changed, "k8s-id", ["update"]))[0]
    assert verdict(plan(changed, "k8s-id", ["same"]))[0]


def run(path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tools.update_plan", str(path)],
        cwd=REPO,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def test_the_step_writes_its_output_and_summary(tmp_path: Path) -> None:
    saved = tmp_path / "plan-b200.json"
    saved.write_text(json.dumps(plan(entry(["same"]), "k8s-id", ["update"])))
    output, summary = tmp_path / "output", tmp_path / "summary"
    done = run(saved, {"GITHUB_OUTPUT": str(output), "GITHUB_STEP_SUMMARY": str(summary)})
    assert done.returncode == 0, done.stderr
    assert output.read_text() == "with-plan=true\n"
    assert summary.read_text().startswith("with-plan: ")


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("not json", "cannot read the saved plan"),
        ("[]", "not a JSON object"),
        ('{"manifest": {}}', "no resourcePlans"),
        ('{"resourcePlans": {"urn:x": {"steps": "create"}}}', "a resource plan without"),
    ],
)
def test_a_file_that_is_no_plan_stops_with_one_line(tmp_path: Path, text: str, said: str) -> None:
    saved = tmp_path / "plan.json"
    saved.write_text(text)
    done = run(saved, {})
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1
    assert said in done.stderr
