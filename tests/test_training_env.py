"""The environment a NeMo RL training process ends up with on b200, computed from what we emit.

NeMo RL's rule (v0.7.0, `nemo_rl/distributed/virtual_cluster.py`, SOURCE.md): the driver
forwards its whole environment to every training and generation process, so a variable set
only on the worker pods survives only where the driver does not define it. The image sets
LD_LIBRARY_PATH itself (cuDNN for Transformer Engine); a pod env var of that name replaces it.

The test runs, in a real bash, the commands we emit: the worker container's args (KubeRay runs
them before `ray start` in the same shell, so they shape the raylet and every Ray process) and
the RayJob's entrypoint (the driver, started by the raylet of the node whose resources it asks
for). Google's `set_nccl_env.sh` is not available here: a stand-in `source` records that the
script was sourced and sets one of its variables. `uv` prints the driver's environment instead
of starting Python.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest

from planning.ray import GIB_ENV_SCRIPT, GIB_RESOURCE
from tests.harness import by_name, run_stack, variant

IMAGE_LD_LIBRARY_PATH = (
    "/opt/venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/usr/local/cuda/lib64"
)
"""Stands for the image's own value (docker/Dockerfile of NeMo RL v0.7.0 sets one)."""

MOCKS = f"""
source() {{
  if [ "$1" = {GIB_ENV_SCRIPT} ]; then export GIB_SCRIPT_SOURCED=yes NCCL_NET=gIB; return; fi
  builtin source "$@"
}}
ldconfig() {{ :; }}
mkdir() {{ :; }}
cd() {{ :; }}
uv() {{ env -0 > "$ENV_OUT"; }}
"""


def bash_env(script: str, env: dict[str, str], tmp_path: Path, name: str) -> dict[str, str]:
    """Run `script` (with the stand-ins above) in bash from `env`; the environment it ends with."""
    out = tmp_path / f"{name}.env"
    full = f"{MOCKS}\n{script}\n" + ("" if "uv run" in script else "uv")
    subprocess.run(["bash", "-c", full], env={**env, "ENV_OUT": str(out)}, check=True, timeout=30)
    pairs = [item.split("=", 1) for item in out.read_text().split("\0") if "=" in item]
    return {k: v for k, v in pairs if k not in ("ENV_OUT", "PWD", "SHLVL", "_", "OLDPWD")}


def pod_env(container: dict[str, Any]) -> dict[str, str]:
    """The image's environment overlaid with the container's env (secrets as placeholders)."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LD_LIBRARY_PATH": IMAGE_LD_LIBRARY_PATH}
    for item in container.get("env", []):
        env[item["name"]] = item.get("value", f"<from {json.dumps(item.get('valueFrom'))}>")
    return env


@pytest.fixture(scope="module")
def b200_job(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("b200-job")
    config = variant(
        "b200",
        {
            "nemo-rl-gke:ray": {"job": {"enabled": True}},
            "nemo-rl-gke:hfToken": {"secure": "v1:x"},
        },
    )
    return run_stack("b200", tmp, config)


def test_a_training_process_on_b200_gets_the_full_gib_environment(
    b200_job: Any, tmp_path: Path
) -> None:
    records = by_name(b200_job)
    worker_group = records["ray-cluster"].inputs["spec"]["workerGroupSpecs"][0]
    (container,) = worker_group["template"]["spec"]["containers"]
    job = records["ray-job"].inputs["spec"]

    # The driver starts where its resources are: only RDMA workers advertise the gIB one.
    assert json.loads(job["entrypointResources"]) == {GIB_RESOURCE: 1}
    advertised = json.loads(json.loads(worker_group["rayStartParams"]["resources"]))
    assert advertised == {GIB_RESOURCE: 1}

    # The raylet of an RDMA worker: the pod's env, then the container args KubeRay runs first.
    (setup,) = container["args"]
    raylet = bash_env(setup, pod_env(container), tmp_path, "raylet")
    # The driver: started by that raylet, runs the entrypoint's script.
    (bash, flag, script) = shlex.split(job["entrypoint"])
    assert (bash, flag) == ("bash", "-c")
    driver = bash_env(script, raylet, tmp_path, "driver")
    # NeMo RL forwards the driver's whole environment to each training process.
    training = {**raylet, **driver}

    assert training["GIB_SCRIPT_SOURCED"] == "yes"  # Google's script, not a hand copy
    assert training["NCCL_NET"] == "gIB"
    assert training["NCCL_IB_GID_INDEX"] == "3"
    assert training["NCCL_TUNER_CONFIG_PATH"] == "/usr/local/gib/configs/tuner_config_a4.txtpb"
    paths = training["LD_LIBRARY_PATH"].split(":")
    assert paths[0] == "/usr/local/gib/lib64"  # the gIB plugin first
    assert "/usr/local/nvidia/lib64" in paths
    assert ":".join(paths).endswith(IMAGE_LD_LIBRARY_PATH)  # the image's path kept (cuDNN)
    assert training["HF_TOKEN"].startswith("<from")  # the token comes from the Secret
    # Nothing on the pod replaces the image's library path.
    assert "LD_LIBRARY_PATH" not in {e["name"] for e in container["env"]}


def test_gpus_without_rdma_keep_the_image_library_path(tmp_path: Path) -> None:
    result = run_stack(
        "dev", tmp_path, variant("dev", {"nemo-rl-gke:ray": {"job": {"enabled": True}}})
    )
    records = by_name(result)
    job = records["ray-job"].inputs["spec"]
    assert "entrypointResources" not in job  # no gIB: the driver may run on the head
    worker = job["rayClusterSpec"]["workerGroupSpecs"][0]
    (container,) = worker["template"]["spec"]["containers"]
    raylet = bash_env(container["args"][0], pod_env(container), tmp_path, "raylet")
    (_, _, script) = shlex.split(job["entrypoint"])
    head = pod_env(job["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0])
    training = {**raylet, **bash_env(script, head, tmp_path, "driver")}
    assert training["LD_LIBRARY_PATH"] == f"/usr/local/nvidia/lib64:{IMAGE_LD_LIBRARY_PATH}"
    assert "GIB_SCRIPT_SOURCED" not in training


def test_preflight_shows_the_run_its_directories_and_workers(b200_job: Any) -> None:
    from preflight.report import render_summary

    (job,) = b200_job.summary.runs
    assert job["run"].startswith("grpo-gsm8k-")
    assert job["workers"] == 2
    assert job["gpus"] == "2x8"
    assert job["cluster"] == "the stack's RayCluster"
    text = render_summary(b200_job.summary)
    assert f"GRPO run {job['run']} (run id {job['runId']}, attempt 1)" in text
    assert f"checkpoints /data/nemo-rl/runs/{job['run']}/checkpoints" in text
    assert f"logs        /data/nemo-rl/runs/{job['run']}/logs" in text
