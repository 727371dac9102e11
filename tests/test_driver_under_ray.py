"""The GRPO driver script as rendered, run by real Ray 2.55.1 on one node shaped like a b200 worker.

One Ray head with the b200 worker's start parameters (8 GPUs declared, the gIB resource), started
by the worker container's own setup (the stand-in gIB folder, the driver folder, the claim on
/data; testbed.node_fs), accepts the GRPO smoke exactly as the smoke gate submits it: the
entrypoint and entrypoint resources of the rendered stack, through Ray's job API. The NeMo RL
stand-in at /opt/nemo-rl does with Ray what NeMo RL does and fails when a worker gets no GPU or
no gIB environment. The same run with the driver's environment as it was before (no clean-up of
what Ray's job manager gives it) fails in `ray.init`, with Ray's own message. The engine tests
run the same on the clusters KubeRay builds (tests/engine/test_local_cluster.py).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ray.job_submission import JobStatus, JobSubmissionClient

from planning.ray import GATED_MODEL_ORGS, GIB_RESOURCE
from testbed.node_fs import (
    NodeFolders,
    container_environment,
    install_node_folders,
    nemo_rl_configs,
    pod_fs,
    register_node,
)
from testbed.ray_node import NodeAddress, allocate, localize_ray_start, start_process
from tests.harness import by_name, run_stack, variant

pytestmark = pytest.mark.skipif(
    not nemo_rl_configs().exists() and os.environ.get("NEMO_RL_GKE_REQUIRE_SHARED") != "1",
    reason=f"NeMo RL v0.7.0 configs not found at {nemo_rl_configs()} (set NEMO_RL_GKE_SHARED)",
)
CLEAN_ENV = "unset CUDA_VISIBLE_DEVICES RAY_worker_niceness && "


def kuberay_start(group: dict[str, Any], container: dict[str, Any]) -> str:
    """The `ray start` KubeRay v1.6.2 generates for this group's container, as a head (one node):
    its start parameters, the typed resources, CPUs and memory from the limits (pod.go)."""
    limits = container["resources"]["limits"]
    params = {
        **group["rayStartParams"],
        "dashboard-host": "0.0.0.0",  # noqa: S104 - what KubeRay gives a head
        "metrics-export-port": "8080",
        "dashboard-agent-listen-port": "52365",
        "num-cpus": limits["cpu"],
        "memory": str(int(limits["memory"].removesuffix("Gi")) * 2**30),
    }
    resources = {k: float(v) for k, v in group.get("resources", {}).items()}
    if resources:
        params["resources"] = f"'{json.dumps(resources)}'"
    flags = " ".join(f"--{k}={v}" for k, v in sorted(params.items()))
    return f"ulimit -n 65536; ray start --head --block {flags}"


@pytest.fixture(scope="module")
def b200_smoke(tmp_path_factory: pytest.TempPathFactory) -> Any:
    config = variant(
        "b200",
        {
            "nemo-rl-gke:ray": {"job": {"enabled": True}},
            "nemo-rl-gke:verify": {"grpoSmoke": {"enabled": True}},
            "nemo-rl-gke:hfToken": {"secure": "v1:x"},
        },
    )
    return run_stack("b200", tmp_path_factory.mktemp("b200-smoke"), config)


@pytest.fixture(scope="module")
def ray_node(b200_smoke: Any) -> Iterator[tuple[JobSubmissionClient, Path]]:
    """A Ray head shaped like a b200 worker pod; its job client and the claim's folder."""
    records = by_name(b200_smoke)
    group = records["ray-cluster"].inputs["spec"]["workerGroupSpecs"][0]
    template = group["template"]
    (container,) = template["spec"]["containers"]
    pod = {"metadata": {"name": "b200-worker", "namespace": "nemo-rl"}, "spec": template["spec"]}
    # Short: Ray's socket paths live under the pod's /tmp (at most 107 characters).
    root = Path(tempfile.mkdtemp(prefix="nrg-", dir="/tmp"))
    folders = NodeFolders(root / "n")
    install_node_folders(folders, GATED_MODEL_ORGS)
    fs = pod_fs(root / "p", pod, container, folders)
    address: NodeAddress = allocate("127.102.0.1", head=True, index=0)
    (args,) = container["args"]
    script, _ = localize_ray_start(f"{args} && {kuberay_start(group, container)}", address)
    env = container_environment(pod, container, fs, folders, secret=lambda *_: "hf_fake_not_real")
    register_node(folders.root / "nodes", address.ip, {"pod": "b200-worker", "rdma": True,
                                                        "tmp": str(fs.mounts["/tmp"])})  # fmt: skip
    log = fs.root / "container.log"
    proc = start_process(["/bin/bash", "-c", "--", fs.map_text(script)], env, folders.nemo_rl, log)
    client = None
    try:
        deadline = time.monotonic() + 120
        while client is None:
            assert proc.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, "the Ray node never answered"
            try:
                client = JobSubmissionClient(f"http://127.0.0.1:{address.host_port(8265)}")
            except Exception:
                time.sleep(1)
        data = fs.mounts["/data"]
        yield client, data
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except Exception:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        shutil.rmtree(root, ignore_errors=True)


def run_job(client: JobSubmissionClient, entrypoint: str, resources: dict[str, float]) -> str:
    """Submit as the smoke gate does; wait for Ray's final status; that status."""
    job = client.submit_job(entrypoint=entrypoint, entrypoint_resources=resources)
    deadline = time.monotonic() + 180
    while (status := client.get_job_status(job)) not in {
        JobStatus.SUCCEEDED,
        JobStatus.FAILED,
        JobStatus.STOPPED,
    }:
        assert time.monotonic() < deadline, client.get_job_logs(job)[-3000:]
        time.sleep(1)
    return f"{status}\n{client.get_job_logs(job)}"


def smoke_of(result: Any) -> tuple[str, dict[str, float]]:
    """The smoke gate's entrypoint and entrypoint resources, as its Job submits them."""
    (container,) = by_name(result)["ray-smoke-job"].inputs["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    return env["ENTRYPOINT"], json.loads(env["ENTRYPOINT_RESOURCES"])


def test_the_rendered_driver_trains_on_a_gpu_with_the_gib_environment(
    ray_node: tuple[JobSubmissionClient, Path], b200_smoke: Any
) -> None:
    client, data = ray_node
    entrypoint, resources = smoke_of(b200_smoke)
    assert resources == {GIB_RESOURCE: 1}
    assert shlex.split(entrypoint)[2].startswith(CLEAN_ENV)
    outcome = run_job(client, entrypoint, resources)
    assert outcome.startswith("SUCCEEDED"), outcome[-4000:]
    assert "NeMo RL stand-in" in outcome
    (workers,) = [json.loads(p.read_text()) for p in data.glob("nemo-rl/runs/*/logs/*.json")]
    (worker,) = workers
    assert worker["gpu_ids"]
    assert worker["cuda_visible_devices"] == worker["gpu_ids"][0]
    assert worker["nccl"]["NCCL_NET"] == "gIB"
    assert worker["gib_plugin_present"] is True
    assert worker["model_cached"] is True  # downloaded once by the driver, before the workers


@pytest.mark.parametrize(
    ("clean_up", "error"),
    [
        # As before the fix: Ray's RAY_worker_niceness in NeMo RL's runtime env and the job's.
        ("", "Failed to merge the Job's runtime env"),
        # Past that, CUDA_VISIBLE_DEVICES="" copied into every GPU actor: Ray's GPU-id lookup.
        ("unset RAY_worker_niceness && ", "IndexError: list index out of range"),
    ],
)
def test_the_driver_environment_ray_gives_a_placed_driver_kills_the_run(
    ray_node: tuple[JobSubmissionClient, Path], b200_smoke: Any, clean_up: str, error: str
) -> None:
    """What Ray's job manager gives a driver with entrypoint resources, forwarded by NeMo RL to
    `ray.init` and to every actor, is refused by Ray itself: the run dies in its first seconds."""
    client, _ = ray_node
    entrypoint, resources = smoke_of(b200_smoke)
    script = shlex.split(entrypoint)[2]
    before = f"bash -c {shlex.quote(clean_up + script.removeprefix(CLEAN_ENV))}"
    outcome = run_job(client, before, resources)
    assert outcome.startswith("FAILED"), outcome[-4000:]
    assert error in outcome, outcome[-4000:]
