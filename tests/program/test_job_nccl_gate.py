"""The job NCCL gate as planned and as the program emits it (mock runtime).

Its driver's reading of NCCL's log is in tests/verify/test_job_nccl_driver.py (real torch and
NCCL output); the rendered gate against real Ray is in tests/program/test_ray_driver_under_ray.py.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
import shlex
from typing import Any

import kubernetes_validate
import pytest

from planning.ray import GIB_RESOURCE
from planning.verify import RAY_GATE_LABEL
from planning.verify_job_nccl import JOB_NCCL_SCRIPT_PATH, job_nccl_script, plan_job_nccl
from preflight.cli import Result
from program.verify import verify_inputs
from tests.harness import by_name, run_stack, stack_data, variant
from tests.program.test_order import closure, named
from tests.program.test_ray_schemas import KUBERNETES_VERSION, plain
from tests.program.test_verify import config


@pytest.fixture(scope="module")
def b200_run(tmp_path_factory: pytest.TempPathFactory) -> Result:
    """b200 with the smoke and the GRPO job on (the gate is on by default)."""
    changes: dict[str, Any] = {
        "nemo-rl-gke:verify": {"grpoSmoke": {"enabled": True}},
        "nemo-rl-gke:ray": {"job": {"enabled": True}},
        "nemo-rl-gke:hfToken": {"secure": "v1:ciphertext"},
    }
    return run_stack("b200", tmp_path_factory.mktemp("job-nccl"), variant("b200", changes))


def gate_job(result: Result) -> dict[str, Any]:
    job: dict[str, Any] = plain(by_name(result)["ray-job-nccl-job"].inputs)
    return job


def env_of(job: dict[str, Any]) -> dict[str, str]:
    (container,) = job["spec"]["template"]["spec"]["containers"]
    return {e["name"]: e["value"] for e in container["env"] if "value" in e}


def plan(stack: str, workers: int | None = None, **changes: Any) -> Any:
    cfg = config(stack, **changes)
    inputs = verify_inputs(cfg)
    return plan_job_nccl(
        cfg.grpo_run,
        inputs,
        cfg.gate_settings,
        workers=inputs.nodes if workers is None else workers,
        image="python:3",
    )


@pytest.mark.parametrize("stack", ["b200", "h200"])
def test_rdma_stacks_judge_every_gpu_of_every_worker_on_gib(stack: str) -> None:
    gate = plan(stack)
    assert gate.ranks == 16
    judged = {t.metric: (t.op, t.value) for t in gate.thresholds}
    assert judged["ranks_formed"] == (">=", "16")
    assert judged["nodes_spanned"] == (">=", "2")
    assert judged["ranks_with_nccl_version"] == (">=", "16")
    assert judged["ranks_on_gib"] == (">=", "16")
    assert judged["ranks_with_gdrdma"] == (">=", "16")
    assert judged["wrong_values"] == ("<=", "0")
    # The NCCL gate's floor: 85% of Google's all_gather figure at 8 GiB.
    assert judged["all_gather_busbw"] == (">=", {"b200": "292.8", "h200": "280.6"}[stack])


def test_no_gate_without_rdma_with_one_worker_or_turned_off() -> None:
    assert plan("dev") is None
    assert plan("b200", workers=1) is None
    assert plan("b200", verify={"jobNccl": {"enabled": False}}) is None
    assert plan("b200", verify={"enabled": False}) is None


def test_the_entrypoint_carries_the_driver_and_the_run_s_own_setup() -> None:
    gate = plan("b200")
    script = shlex.split(gate.entrypoint)[2]
    assert script.startswith("unset CUDA_VISIBLE_DEVICES RAY_worker_niceness && ")
    assert "export NCCL_NET=gIB" in script
    assert "source /usr/local/gib/scripts/set_nccl_env.sh" in script
    assert "export NCCL_SOCKET_IFNAME=eth0" in script
    (encoded,) = re.findall(r"export JOB_NCCL_DRIVER=([A-Za-z0-9+/=]+) ", script)
    assert script.count(encoded) == 1  # once: a failing step's message does not repeat it
    assert gzip.decompress(base64.b64decode(encoded)).decode() == job_nccl_script()
    assert f"uv run python {JOB_NCCL_SCRIPT_PATH}" in script
    assert "export NODES=2 GPUS_PER_NODE=8 " in script
    assert gate.entrypoint_resources == {GIB_RESOURCE: 1}


def test_the_gate_runs_again_when_the_image_or_the_threshold_changes() -> None:
    base = plan("b200").job_name
    assert plan("b200").job_name == base
    assert plan("b200", verify={"nccl": {"minBusBandwidthGBPerSecond": 250}}).job_name != base
    gpu = dict(stack_data("b200")["config"]["nemo-rl-gke:gpu"])
    assert plan("b200", gpu={**gpu, "reservation": "another-reservation"}).job_name != base
    assert plan("b200", verify={"jobNccl": {"timeoutMinutes": 30}}).job_name == base


def test_the_gate_runs_after_the_raycluster_before_the_smoke_and_the_rayjob(
    b200_run: Result,
) -> None:
    waits = closure(b200_run)
    gate = named(b200_run, "ray-job-nccl-job").urn
    assert named(b200_run, "ray-cluster").urn in waits[gate]
    assert gate in waits[named(b200_run, "ray-smoke-job").urn]
    assert gate in waits[named(b200_run, "ray-job").urn]


def test_the_gate_job_judges_the_driver_s_measures_from_the_system_pool(b200_run: Result) -> None:
    job = gate_job(b200_run)
    env = env_of(job)
    assert env["GATE_NAME"] == "job-nccl"
    assert env["GATE_SCOPE"] == "2 nodes x 8 GPUs"
    assert [m[0] for m in json.loads(env["MEASURES"])][:2] == ["ranks_formed", "nodes_spanned"]
    pod = job["spec"]["template"]
    assert pod["metadata"]["labels"][RAY_GATE_LABEL] == "true"
    (container,) = pod["spec"]["containers"]
    assert "nvidia.com/gpu" not in container["resources"]["limits"]
    assert container["command"] == ["python3", "/gates/grpo_smoke.py"]
    assert job["spec"]["activeDeadlineSeconds"] == 1200
    assert job["metadata"]["annotations"]["pulumi.com/replaceUnready"] == "true"


def test_the_dashboard_admits_both_ray_job_gates(b200_run: Result) -> None:
    policy = plain(by_name(b200_run)["ray-ingress"].inputs)["spec"]
    (_, dashboard) = policy["ingress"]
    assert {"podSelector": {"matchLabels": {RAY_GATE_LABEL: "true"}}} in dashboard["from"]
    smoke = plain(by_name(b200_run)["ray-smoke-job"].inputs)["spec"]["template"]
    assert smoke["metadata"]["labels"][RAY_GATE_LABEL] == "true"


def test_the_gate_objects_match_kubernetes_openapi(b200_run: Result) -> None:
    for name in ("ray-job-nccl-job", "ray-job-nccl-script"):
        obj = plain(by_name(b200_run)[name].inputs)
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)


def test_verify_jobs_name_the_gate(b200_run: Result) -> None:
    jobs = b200_run.run.exports["verifyJobs"].value
    assert jobs["job-nccl"] == gate_job(b200_run)["metadata"]["name"]
    assert {"grpo-smoke", "nccl"} <= set(jobs)
