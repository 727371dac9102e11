"""The scheduled health checks as the program emits them (mock runtime).

What the API server, Kueue and the CronJob controller do with them is in
tests/engine/test_local_cluster.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate

from planning.health import (
    CHECK_LABEL,
    HEALTH_ACCOUNT,
    REPORT_SCRIPT,
    TOKEN_DIR,
    node_report_policy,
)
from planning.queue import HEALTH_PRIORITY, QUEUE_LABEL, REQUIRED_TOPOLOGY, UNCONSTRAINED_TOPOLOGY
from planning.verify import GATE_LABEL
from preflight.cli import Result
from tests.harness import run_stack, stack_data, variant
from tests.program.test_ray_schemas import KUBERNETES_VERSION, plain
from tests.program.test_verify import jobs


def cronjobs(result: Result) -> dict[str, dict[str, Any]]:
    return {
        r.inputs["metadata"]["labels"][CHECK_LABEL]: plain(r.inputs)
        for r in result.run.records
        if r.inputs.get("kind") == "CronJob"
    }


def pod_of(cronjob: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    return spec


def test_production_stacks_check_gpus_rdma_and_nccl_daily_through_the_queue(
    b200: Result, dev: Result
) -> None:
    checks = cronjobs(b200)
    assert sorted(checks) == ["gpu-health", "nccl", "rdma"]
    assert cronjobs(dev) == {}
    for check, cronjob in checks.items():
        spec = cronjob["spec"]
        assert spec["schedule"] == stack_data("b200")["config"]["nemo-rl-gke:health"]["schedule"]
        assert (spec["timeZone"], spec["concurrencyPolicy"]) == ("Etc/UTC", "Forbid")
        labels = spec["jobTemplate"]["metadata"]["labels"]
        assert labels[QUEUE_LABEL] == b200.run.exports["kueueLocalQueue"].value
        pod = pod_of(cronjob)
        assert pod["priorityClassName"] == HEALTH_PRIORITY.name
        annotations = spec["jobTemplate"]["spec"]["template"]["metadata"]["annotations"]
        if check == "nccl":
            assert annotations[REQUIRED_TOPOLOGY] == "cloud.google.com/gce-topology-subblock"
        else:
            assert annotations[UNCONSTRAINED_TOPOLOGY] == "true"
        kubernetes_validate.validate(cronjob, KUBERNETES_VERSION, strict=True)
    # Kueue manages batch Jobs (queue-labelled ones) only where checks are scheduled.
    (release,) = [r for r in b200.run.records if r.name == "kueue-release"]
    assert "batch/job" in str(release.inputs)


def test_a_check_runs_its_gates_script_image_and_floors(b200: Result) -> None:
    gates = jobs(b200)
    for check, cronjob in cronjobs(b200).items():
        gate_pod = gates[check]["spec"]["template"]["spec"]
        (gate,) = gate_pod["containers"]
        (measure,) = pod_of(cronjob)["initContainers"]
        assert measure["image"] == gate["image"]
        assert gate["command"][1] in measure["command"][2]
        floors = {e["name"]: e.get("value") for e in gate["env"] if "value" in e}
        ours = {e["name"]: e.get("value") for e in measure["env"] if "value" in e}
        for name in ("EXPECTED_GPUS", "MIN_BUSBW_all_gather", "MIN_AVG_BUSBW_all_gather"):
            assert ours.get(name) == floors.get(name)
        assert measure["resources"] == gate["resources"]
        job = cronjob["spec"]["jobTemplate"]["spec"]
        assert job["activeDeadlineSeconds"] == gates[check]["spec"]["activeDeadlineSeconds"]
        # Not a gate: `make verify` and the gates' selectors never see a check's pods.
        assert (
            GATE_LABEL
            not in cronjob["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["labels"]
        )


def test_only_the_reporter_holds_a_token_and_tainted_nodes_stay_checkable(b200: Result) -> None:
    for check, cronjob in cronjobs(b200).items():
        pod = pod_of(cronjob)
        assert pod["serviceAccountName"] == HEALTH_ACCOUNT
        assert pod["automountServiceAccountToken"] is False
        (measure,) = pod["initContainers"]
        (reporter,) = pod["containers"]
        assert TOKEN_DIR not in [m["mountPath"] for m in measure["volumeMounts"]]
        assert TOKEN_DIR in [m["mountPath"] for m in reporter["volumeMounts"]]
        assert reporter["command"][-1].endswith(REPORT_SCRIPT)
        assert reporter["securityContext"]["runAsNonRoot"] is True
        tolerated = {t["key"] for t in pod["tolerations"]}
        assert {f"health.nemo-rl-gke/{c}" for c in ("gpu-health", "rdma", "nccl")} <= tolerated
        if check == "nccl":
            assert pod["subdomain"] == cronjob["metadata"]["name"]


def test_the_reporters_rights_are_nodes_get_patch_narrowed_by_a_policy(b200: Result) -> None:
    kinds = {
        r.inputs.get("kind"): plain(r.inputs)
        for r in b200.run.records
        if r.name.startswith("health-")
    }
    assert kinds["ClusterRole"]["rules"] == [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]}
    ]
    policy = kinds["ValidatingAdmissionPolicy"]["spec"]
    assert policy["failurePolicy"] == "Fail"
    assert f":{HEALTH_ACCOUNT}'" in policy["matchConditions"][0]["expression"]
    assert kinds["ValidatingAdmissionPolicyBinding"]["spec"]["validationActions"] == ["Deny"]


def test_checks_off_without_a_schedule_and_a_pool_without_rdma_checks_gpus_only(
    tmp_path: Path,
) -> None:
    (tmp_path / "off").mkdir()
    (tmp_path / "dev").mkdir()
    off = run_stack("b200", tmp_path / "off", variant("b200", {}, drop=("nemo-rl-gke:health",)))
    assert cronjobs(off) == {}
    assert "healthChecks" not in off.run.exports
    dev = variant(
        "dev",
        {"nemo-rl-gke:kueue": {"enabled": True}, "nemo-rl-gke:health": {"schedule": "@weekly"}},
    )
    l4 = run_stack("dev", tmp_path / "dev", dev)
    assert sorted(cronjobs(l4)) == ["gpu-health"]


def test_the_policy_reads_an_absent_subresource_and_denies_as_forbidden() -> None:
    """Measured on the real API server: a request without a subresource has no
    `request.subResource` key ("no such key", the policy then denied every patch); and a
    validation without a reason denies with 422 Invalid, not 403."""
    policy = node_report_policy("nemo-rl")
    expressions = [v["expression"] for v in policy["validations"]]
    assert "request.?subResource.orValue('') == ''" in expressions
    assert {v["reason"] for v in policy["validations"]} == {"Forbidden"}
