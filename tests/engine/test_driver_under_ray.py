"""The GRPO driver script and the smoke gate as rendered, judged by real Ray 2.55.1 on one node.

One Ray head with the b200 worker's start parameters (8 GPUs declared, the gIB resource), started
by the worker container's own setup (the stand-in gIB folder, the driver folder, the claim on
/data; testbed.node_fs). The smoke gate's script (gates/grpo_smoke.py) runs with the environment
of the rendered smoke Job and submits the GRPO smoke to that head's real job API, exactly as the
gate does in a cluster: the entrypoint and entrypoint resources of the rendered stack. The NeMo RL
stand-in at /opt/nemo-rl does with Ray what NeMo RL does and fails when a worker gets no GPU or
no gIB environment. The same run with the driver's environment as it was before fails, with the
driver's own error in the gate's verdict. The engine tests run the same on the clusters KubeRay
builds (tests/engine/test_local_cluster.py).

They need no engine, only Ray (about 45 s on 2 cores: a Ray head starts in about 7 s, each job
imports Ray again). `make test` could not hold them and stay under two minutes, so they run
first among the engine tests (`make engine-test`) and alone with `make ray-test`.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
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
from testbed.ray_node import (
    NodeAddress,
    allocate,
    kuberay_ray_start,
    localize_ray_start,
    start_process,
)
from tests.gates.harness import run_smoke_script
from tests.harness import by_name, run_stack, variant

pytestmark = pytest.mark.skipif(
    not nemo_rl_configs().exists() and os.environ.get("NEMO_RL_GKE_REQUIRE_SHARED") != "1",
    reason=f"NeMo RL v0.7.0 configs not found at {nemo_rl_configs()} (set NEMO_RL_GKE_SHARED)",
)
CLEAN_ENV = "unset CUDA_VISIBLE_DEVICES RAY_worker_niceness && "


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
def ray_node(b200_smoke: Any) -> Iterator[tuple[str, Path]]:
    """A Ray head shaped like a b200 worker pod: its dashboard's URL and the claim's folder."""
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
    script, _ = localize_ray_start(
        f"{args} && {kuberay_ray_start(group, container, head=True)}",
        address,
        fs.map_text("/tmp/ray"),
    )
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
        yield f"http://127.0.0.1:{address.host_port(8265)}", fs.mounts["/data"]
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except Exception:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        shutil.rmtree(root, ignore_errors=True)


def smoke_env_of(result: Any) -> dict[str, str]:
    """The smoke gate container's environment (its plain values) in the rendered Job."""
    (container,) = by_name(result)["ray-smoke-job"].inputs["spec"]["template"]["spec"]["containers"]
    return {e["name"]: e["value"] for e in container["env"] if "value" in e}


def run_gate(
    url: str, result: Any, tmp: Path, **overrides: str
) -> tuple[subprocess.CompletedProcess[str], str]:
    """gates/grpo_smoke.py against the Ray head at `url`: how it ended, its termination message."""
    env = {
        **smoke_env_of(result),
        "POD_NAMESPACE": "nemo-rl",
        "GATE_RUN_ID": "6f1d2c3b-4a5e-uid",
        "RAY_DASHBOARD": url,
        "POLL_SECONDS": "0.5",
        **overrides,
    }
    return run_smoke_script(env, tmp, timeout=240)


def test_the_smoke_gate_passes_on_a_real_ray_head_with_gpu_and_gib(
    ray_node: tuple[str, Path], b200_smoke: Any, tmp_path: Path
) -> None:
    url, data = ray_node
    env = smoke_env_of(b200_smoke)
    assert json.loads(env["ENTRYPOINT_RESOURCES"]) == {GIB_RESOURCE: 1}
    assert shlex.split(env["ENTRYPOINT"])[2].startswith(CLEAN_ENV)
    proc, message = run_gate(url, b200_smoke, tmp_path)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr
    assert message.startswith("grpo-smoke gate passed on 1 GPU: job_status SUCCEEDED")
    assert f"Ray 2.55.1 answers at {url}" in proc.stdout
    assert "NeMo RL stand-in" in proc.stdout  # the job's log tail is in the pod's log
    # One submission, of exactly the rendered entrypoint, under the Job's own id.
    job = JobSubmissionClient(url).get_job_info(f"{env['SUBMISSION_PREFIX']}-6f1d2c3b")
    assert job.entrypoint == env["ENTRYPOINT"]
    assert job.metadata == {"nemo-rl-gke/gate": "grpo-smoke"}
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
        ("", "ValueError: Failed to merge the Job's runtime env"),
        # Past that, CUDA_VISIBLE_DEVICES="" copied into every GPU actor: Ray's GPU-id lookup.
        ("unset RAY_worker_niceness && ", "IndexError: list index out of range"),
    ],
)
def test_the_environment_ray_gives_a_placed_driver_fails_the_smoke_with_its_error(
    ray_node: tuple[str, Path], b200_smoke: Any, tmp_path: Path, clean_up: str, error: str
) -> None:
    """What Ray's job manager gives a driver with entrypoint resources, forwarded by NeMo RL to
    `ray.init` and to every actor, is refused by Ray itself: the run dies in its first seconds,
    and the gate's verdict carries the driver's own error."""
    url, _ = ray_node
    script = shlex.split(smoke_env_of(b200_smoke)["ENTRYPOINT"])[2]
    before = f"bash -c {shlex.quote(clean_up + script.removeprefix(CLEAN_ENV))}"
    proc, message = run_gate(url, b200_smoke, tmp_path, ENTRYPOINT=before,
                             GATE_RUN_ID=f"{len(clean_up):08x}-uid")  # fmt: skip
    assert proc.returncode == 1, proc.stdout[-4000:]
    first = message.splitlines()[0]
    assert first.startswith("grpo-smoke gate FAILED on 1 GPU: job_status FAILED name"), first
    assert "Job entrypoint command failed with exit code 1:" in first, first
    assert error in first, first


def test_a_run_that_outlives_the_deadline_is_stopped(
    ray_node: tuple[str, Path], b200_smoke: Any, tmp_path: Path
) -> None:
    url, _ = ray_node
    proc, message = run_gate(url, b200_smoke, tmp_path, ENTRYPOINT="sleep 600",
                             DEADLINE_SECONDS="4", GATE_RUN_ID="0000dead-uid")  # fmt: skip
    assert proc.returncode == 1
    assert "job_status TIMEOUT" in message.splitlines()[0]
    client = JobSubmissionClient(url)
    submission = f"{smoke_env_of(b200_smoke)['SUBMISSION_PREFIX']}-0000dead"
    deadline = time.monotonic() + 30
    while client.get_job_status(submission) != JobStatus.STOPPED:  # the GPUs are given back
        assert time.monotonic() < deadline
        time.sleep(0.5)


def test_ray_refuses_a_submission_id_it_has_seen_and_a_new_job_submits_anew(
    ray_node: tuple[str, Path], b200_smoke: Any, tmp_path: Path
) -> None:
    url, _ = ray_node
    first, _ = run_gate(url, b200_smoke, tmp_path / "a", ENTRYPOINT="true",
                        GATE_RUN_ID="0000000a-uid")  # fmt: skip
    again, message = run_gate(url, b200_smoke, tmp_path / "b", ENTRYPOINT="true",
                              GATE_RUN_ID="0000000a-uid")  # fmt: skip
    replaced, _ = run_gate(url, b200_smoke, tmp_path / "c", ENTRYPOINT="true",
                           GATE_RUN_ID="0000000c-uid")  # fmt: skip
    assert (first.returncode, again.returncode, replaced.returncode) == (0, 1, 0)
    # Real Ray answers a seen id with HTTP 500 and its traceback (not 400).
    assert "Ray refused the submission: HTTP 500" in message.splitlines()[0]
    assert "already exists" in message.splitlines()[0]
