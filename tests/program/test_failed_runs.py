"""A failed run's evidence: its own cluster keeps the head (KubeRay deletionRules) where the
RayJob can. What the real KubeRay operator does with the rules is in tests/engine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from planning.ray import KEEP_FAILED_HEAD_MINUTES, deletion_rules
from preflight.cli import Result
from stack_config import load_stack_config
from stack_config.errors import InvalidStackConfig
from tests.harness import run_stack, variant
from tests.program.test_queue import values
from tests.program.test_ray_schemas import crd_validator, manifests


def rayjob(result: Result) -> dict[str, Any]:
    (job,) = [o for o in manifests(result, "ray.io/") if o["kind"] == "RayJob"]
    return job


def dev_job(tmp_path: Path, **job: Any) -> Result:
    ray = {"job": {"enabled": True, **job}}
    return run_stack("dev", tmp_path, variant("dev", {"nemo-rl-gke:ray": ray}))


def test_a_failed_own_cluster_run_keeps_its_head_for_a_day_and_frees_its_gpus(
    tmp_path: Path,
) -> None:
    job = rayjob(dev_job(tmp_path))
    crd_validator("rayjobs").validate(job)
    spec = job["spec"]
    assert "shutdownAfterJobFinishes" not in spec
    assert "ttlSecondsAfterFinished" not in spec
    rules = spec["deletionStrategy"]["deletionRules"]
    assert rules == deletion_rules(KEEP_FAILED_HEAD_MINUTES * 60)
    by = {
        (r["policy"], r["condition"].get("jobStatus") or r["condition"]["jobDeploymentStatus"]): r[
            "condition"
        ]["ttlSeconds"]
        for r in rules
    }
    assert by == {
        ("DeleteCluster", "SUCCEEDED"): 60,
        ("DeleteWorkers", "FAILED"): 0,
        ("DeleteCluster", "FAILED"): 86400,
        ("DeleteWorkers", "Failed"): 0,
        ("DeleteCluster", "Failed"): 86400,
    }
    assert spec["backoffLimit"] == 3  # Spot preemptions still run it again first


def test_the_retention_is_a_key_and_zero_deletes_at_once(tmp_path: Path) -> None:
    spec = rayjob(dev_job(tmp_path, keepFailedHeadMinutes=0))["spec"]
    ttls = {r["condition"]["ttlSeconds"] for r in spec["deletionStrategy"]["deletionRules"]}
    assert ttls == {0, 60}


@pytest.mark.parametrize(
    ("stack", "changes", "why"),
    [
        ("dev", {"ray": {"job": {"keepFailedHeadMinutes": 30}}}, "ray.job.enabled is false"),
        (
            "b200",
            {"ray": {"job": {"enabled": True, "keepFailedHeadMinutes": 30}}, "hfToken": "t"},
            "stack's RayCluster",
        ),
        (
            "dev",
            {
                "ray": {"job": {"enabled": True, "keepFailedHeadMinutes": 30}},
                "kueue": {"enabled": True},
            },
            "a queued run must shut its own cluster down",
        ),
        (
            "dev",
            {
                "ray": {
                    "operator": "gke-addon",
                    "job": {"enabled": True, "keepFailedHeadMinutes": 30},
                }
            },
            "not pinned",
        ),
    ],
)
def test_a_retention_no_rayjob_can_keep_is_refused(
    stack: str, changes: dict[str, Any], why: str
) -> None:
    with pytest.raises(InvalidStackConfig) as info:
        load_stack_config(values(stack, **changes), stack, {"nemo-rl-gke:hfToken"})
    err = info.value
    assert err.key == "nemo-rl-gke:ray.job.keepFailedHeadMinutes", str(err)
    assert why in err.problem
    assert err.fix


def test_queued_and_managed_operator_runs_shut_their_cluster_down_when_they_end(
    tmp_path: Path,
) -> None:
    queued = run_stack(
        "dev",
        tmp_path,
        variant(
            "dev",
            {"nemo-rl-gke:ray": {"job": {"enabled": True}}, "nemo-rl-gke:kueue": {"enabled": True}},
        ),
    )
    spec = rayjob(queued)["spec"]
    assert (spec["shutdownAfterJobFinishes"], spec["ttlSecondsAfterFinished"]) == (True, 60)
    assert "deletionStrategy" not in spec
    load_stack_config(values("dev", ray={"operator": "gke-addon", "job": {"enabled": True}}), "dev")
