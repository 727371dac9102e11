"""What the Ray containers and the GRPO driver do in a real bash, computed from what we emit.

NeMo RL's rule (v0.7.0, `nemo_rl/distributed/virtual_cluster.py`, SOURCE.md): the driver
forwards its whole environment to every training and generation process, so a variable set
only on the worker pods survives only where the driver does not define it. The image sets
LD_LIBRARY_PATH itself (cuDNN for Transformer Engine); a pod env var of that name replaces it.

The tests run, in a real bash, the commands we emit: a Ray container's command as KubeRay
v1.6.2 builds it (`<our args> && ulimit -n 65536; ray start ...`, `common/pod.go` BuildPod; the
engine tests check the real operator's output has that shape), and the RayJob's entrypoint (the
driver, started by the raylet of the node whose resources it asks for, with what Ray's job
manager adds to its environment). Google's `set_nccl_env.sh` is not available here: a stand-in
`source` records that the script was sourced and sets what the real one sets (its plugin path,
never NCCL_NET). `uv` and `ray` record how they were called and the environment they got.
Container paths the tests must not touch on this host (/tmp, /usr/local/nvidia/bin) are pointed
at the test's folder.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from components.ray.workload import SECRET_ENV
from planning.ray import (
    DATASET_PREPARE,
    GIB_ENV_SCRIPT,
    GIB_RESOURCE,
    NUMA_AFFINITY_FILE,
    TOKEN_ENV,
    TOKEN_WAIT_SECONDS,
    TOKENS_DIR,
    site_hook,
)
from tests.harness import by_name, run_stack, variant

IMAGE_LD_LIBRARY_PATH = (
    "/opt/venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/usr/local/cuda/lib64"
)
"""Stands for the image's own value (docker/Dockerfile of NeMo RL v0.7.0 sets one)."""
KUBERAY_START = "ulimit -n 65536; ray start --address=head:6379 --block --num-gpus=8"
"""What KubeRay appends to a worker container's args after ` && ` (pod.go, v1.6.2)."""

MOCKS = f"""
source() {{
  if [ "$1" = {GIB_ENV_SCRIPT} ]; then
    [ -n "$FAIL_GIB" ] && return 1
    export GIB_SCRIPT_SOURCED=yes NCCL_NET_PLUGIN=/usr/local/gib/lib64/libnccl-net_internal.so
    return
  fi
  builtin source "$@"
}}
ldconfig() {{ [ -z "$FAIL_LDCONFIG" ]; }}
mkdir() {{ :; }}
cd() {{ :; }}
ulimit() {{ :; }}
uv() {{
  printf '%s\\n' "$*" >> "$CALLS"; env -0 > "$ENV_OUT"
  [ -z "$FAIL_UV" ] || [ "${{*#*run_grpo.py}}" = "$*" ] || return 1
  local all="$*"
  [ -z "$FAIL_UV_ON" ] || [ "${{all#*"$FAIL_UV_ON"}}" = "$all" ]
}}
ray() {{ printf 'ray %s\\n' "$*" >> "$CALLS"; env -0 > "$ENV_OUT"; }}
"""


def bash(
    script: str, env: dict[str, str], tmp_path: Path, name: str
) -> tuple[subprocess.CompletedProcess[str], dict[str, str], list[str]]:
    """Run `script` (with the stand-ins above) in bash from `env`: how it ended, the environment
    of its last `uv`/`ray` call, and every `uv`/`ray` call."""
    out, calls = tmp_path / f"{name}.env", tmp_path / f"{name}.calls"
    out.unlink(missing_ok=True)
    calls.unlink(missing_ok=True)
    script = script.replace(NUMA_AFFINITY_FILE, str(tmp_path / "nrl_gpu_cpu_affinity"))
    script = script.replace("/usr/local/nvidia/bin/nvidia-smi", str(tmp_path / "nvidia-smi"))
    script = script.replace(TOKENS_DIR, str(tmp_path / "tokens"))
    # The tokenizer guard's folder on the shared volume (mkdir is a no-op here).
    (tmp_path / "site").mkdir(exist_ok=True)
    script = re.sub(
        r"/data/nemo-rl/runs/[^/ ]+/\.nemo-rl-gke/python", str(tmp_path / "site"), script
    )
    proc = subprocess.run(
        ["bash", "-c", f"{MOCKS}\n{script}\n"],
        env={**env, "ENV_OUT": str(out), "CALLS": str(calls)},
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )
    pairs = (
        [i.split("=", 1) for i in out.read_text().split("\0") if "=" in i] if out.exists() else []
    )
    hidden = ("ENV_OUT", "CALLS", "PWD", "SHLVL", "_", "OLDPWD")
    final = {k: v for k, v in pairs if k not in hidden}
    return proc, final, calls.read_text().splitlines() if calls.exists() else []


def pod_env(container: dict[str, Any]) -> dict[str, str]:
    """The image's environment overlaid with the container's env (secrets as placeholders)."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LD_LIBRARY_PATH": IMAGE_LD_LIBRARY_PATH}
    for item in container.get("env", []):
        env[item["name"]] = item.get("value", f"<from {json.dumps(item.get('valueFrom'))}>")
    return env


def job_driver_env(raylet: dict[str, str]) -> dict[str, str]:
    """What a driver submitted with entrypoint resources inherits (ray 2.55.1, SOURCE.md): the
    job's runtime env keeps RAY_worker_niceness=0, and the supervisor (num_gpus=0) is started with
    CUDA_VISIBLE_DEVICES=""."""
    return {**raylet, "RAY_worker_niceness": "0", "CUDA_VISIBLE_DEVICES": ""}


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


def worker_of(result: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(worker group, its Ray container) of the stack's RayCluster."""
    group = by_name(result)["ray-cluster"].inputs["spec"]["workerGroupSpecs"][0]
    (container,) = group["template"]["spec"]["containers"]
    return group, container


def test_a_training_process_on_b200_gets_the_full_gib_environment(
    b200_job: Any, tmp_path: Path
) -> None:
    group, container = worker_of(b200_job)
    job = by_name(b200_job)["ray-job"].inputs["spec"]

    # The driver starts where its resources are: only RDMA workers advertise the gIB one.
    assert json.loads(job["entrypointResources"]) == {GIB_RESOURCE: 1}
    assert group["resources"] == {"GPU": "8", GIB_RESOURCE: "1"}

    # The raylet of an RDMA worker: the pod's env, then the container args KubeRay runs first.
    (args,) = container["args"]
    proc, raylet, calls = bash(f"{args} && {KUBERAY_START}", pod_env(container), tmp_path, "node")
    assert proc.returncode == 0, proc.stderr
    assert calls[-1].startswith("ray start")
    # The driver: started by that raylet, runs the entrypoint's script.
    (bash_word, flag, script) = shlex.split(job["entrypoint"])
    assert (bash_word, flag) == ("bash", "-c")
    (tmp_path / "tokens").mkdir(exist_ok=True)
    (tmp_path / "tokens" / "HF_TOKEN").write_text("hf_from_the_secret")
    proc, driver, _ = bash(script, job_driver_env(raylet), tmp_path, "driver")
    assert proc.returncode == 0, proc.stderr
    # NeMo RL forwards the driver's whole environment to each training process.
    training = {**raylet, **driver}

    assert training["GIB_SCRIPT_SOURCED"] == "yes"  # Google's script, not a hand copy
    # NCCL must use gIB or fail: the script itself does not say so (Google's A4 example sets it).
    assert training["NCCL_NET"] == "gIB"
    assert training["NCCL_NET_PLUGIN"] == "/usr/local/gib/lib64/libnccl-net_internal.so"
    assert training["NCCL_IB_GID_INDEX"] == "3"
    assert training["NCCL_TUNER_CONFIG_PATH"] == "/usr/local/gib/configs/tuner_config_a4.txtpb"
    paths = training["LD_LIBRARY_PATH"].split(":")
    assert paths[0] == "/usr/local/gib/lib64"  # the gIB plugin first
    assert "/usr/local/nvidia/lib64" in paths
    assert ":".join(paths).endswith(IMAGE_LD_LIBRARY_PATH)  # the image's path kept (cuDNN)
    # The tokens' files are named, their values never enter an environment NeMo RL copies
    # into every actor's runtime env (served by Ray's State API).
    assert training["HF_TOKEN_PATH"] == str(tmp_path / "tokens" / "HF_TOKEN")
    assert training["NETRC"] == str(tmp_path / "tokens" / "wandb-netrc")
    assert "hf_from_the_secret" not in json.dumps(training)
    assert "HF_TOKEN" not in training
    # NCCL's bootstrap and Gloo on the pod network; the Hub off once the files are cached.
    assert (training["NCCL_SOCKET_IFNAME"], training["GLOO_SOCKET_IFNAME"]) == ("eth0", "eth0")
    assert (training["HF_HUB_OFFLINE"], training["HF_DATASETS_OFFLINE"]) == ("1", "1")
    assert training["RAY_memory_monitor_refresh_ms"] == "0"
    # Nothing on the pod replaces the image's library path.
    assert "LD_LIBRARY_PATH" not in {e["name"] for e in container["env"]}
    # What Ray's job manager gives the driver is not forwarded (real Ray shows why:
    # tests/program/test_ray_driver_under_ray.py, tests/engine/test_driver_under_ray.py).
    assert "CUDA_VISIBLE_DEVICES" not in driver
    assert "RAY_worker_niceness" not in driver


@pytest.mark.parametrize(
    ("failing", "step"),
    [
        ({"FAIL_LDCONFIG": "1"}, "ldconfig /usr/local/nvidia/lib64"),
        ({"FAIL_GIB": "1"}, f"source {GIB_ENV_SCRIPT}"),
    ],
)
def test_a_failed_setup_step_ends_the_worker_container_before_ray_starts(
    b200_job: Any, tmp_path: Path, failing: dict[str, str], step: str
) -> None:
    """KubeRay appends `&& ulimit ...; ray start` to our args: `;` binds looser than `&&`, so
    without a stop of its own a worker whose gIB setup failed would start Ray without gIB."""
    _, container = worker_of(b200_job)
    (args,) = container["args"]
    env = {**pod_env(container), **failing}
    proc, _, calls = bash(f"{args} && {KUBERAY_START}", env, tmp_path, "node")
    assert proc.returncode == 1
    assert not [c for c in calls if c.startswith("ray start")], "Ray started without gIB"
    # The last lines of its log are the termination message (FallbackToLogsOnError).
    assert f"nemo-rl-gke: setup step failed: {step}" in proc.stderr.splitlines()[-1]
    assert container["terminationMessagePolicy"] == "FallbackToLogsOnError"


def test_the_driver_puts_the_model_into_the_shared_cache_before_training(
    b200_job: Any, tmp_path: Path
) -> None:
    _, container = worker_of(b200_job)
    job = by_name(b200_job)["ray-job"].inputs["spec"]
    (_, _, script) = shlex.split(job["entrypoint"])
    (tmp_path / "tokens").mkdir()
    (tmp_path / "tokens" / "HF_TOKEN").write_text("hf_from_the_secret")
    proc, _, calls = bash(script, job_driver_env(pod_env(container)), tmp_path, "driver")
    assert proc.returncode == 0, proc.stderr
    download, dataset, train = calls
    # Once, on the shared volume, before NeMo RL starts its 16 workers (which would each ask
    # the Hub for the same files at once); then the run is offline.
    assert download == "run hf download meta-llama/Llama-3.1-8B-Instruct --exclude original/*"
    assert dataset == f"run python -c {DATASET_PREPARE}"
    assert train.startswith("run python examples/run_grpo.py ")
    assert "policy.model_name=meta-llama/Llama-3.1-8B-Instruct" in train
    assert pod_env(container)["HF_HOME"] == "/data/huggingface_cache"


def test_the_driver_names_the_secret_s_files_never_their_values(
    b200_job: Any, tmp_path: Path
) -> None:
    """A pod's environment is fixed when it starts: a worker started before `hfToken` was set
    has no HF_TOKEN; the Secret's files follow the Secret, and the driver points the libraries
    at them (a token in its environment would reach every actor's runtime env)."""
    group, container = worker_of(b200_job)
    job = by_name(b200_job)["ray-job"].inputs["spec"]
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in group["template"]["spec"]["volumes"]}
    assert volumes[mounts[TOKENS_DIR]]["secret"] == {"secretName": "nemo-rl-tokens",
                                                     "optional": True}  # fmt: skip
    assert set(TOKEN_ENV) == set(SECRET_ENV.values())
    (tmp_path / "tokens").mkdir()
    (tmp_path / "tokens" / "HF_TOKEN").write_text("hf_set_later")
    # Started before any token was set: the optional references resolved to no variable.
    started_before = {k: v for k, v in pod_env(container).items() if k not in SECRET_ENV.values()}
    (_, _, script) = shlex.split(job["entrypoint"])
    proc, driver, _ = bash(script, job_driver_env(started_before), tmp_path, "driver")
    assert proc.returncode == 0, proc.stderr
    assert driver["HF_TOKEN_PATH"] == str(tmp_path / "tokens" / "HF_TOKEN")
    assert "hf_set_later" not in json.dumps(driver)
    assert not {"HF_TOKEN", "WANDB_API_KEY"} & set(driver)
    assert "hf_set_later" not in script


def test_the_driver_waits_for_a_token_the_kubelet_has_not_written_yet(
    b200_job: Any, tmp_path: Path
) -> None:
    """The kubelet rewrites a mounted Secret's files about a minute after the Secret changed: a
    token set in the `pulumi up` that starts the job reaches running pods after the job started
    (seen on the engine test bed: the gated model's download refused without HF_TOKEN). The
    driver waits for a token its run needs, and names it when it never comes."""
    _, container = worker_of(b200_job)
    (_, _, script) = shlex.split(by_name(b200_job)["ray-job"].inputs["spec"]["entrypoint"])
    assert f"{{1..{TOKEN_WAIT_SECONDS // 2}}}" in script
    tokens = tmp_path / "tokens"
    tokens.mkdir()
    later = threading.Timer(3, lambda: (tokens / "HF_TOKEN").write_text("hf_written_late"))
    later.start()
    proc, driver, calls = bash(script, job_driver_env(pod_env(container)), tmp_path, "driver")
    later.join()
    assert proc.returncode == 0, proc.stderr
    assert (tokens / "HF_TOKEN").read_text() == "hf_written_late"
    assert driver["HF_TOKEN_PATH"] == str(tokens / "HF_TOKEN")
    assert calls[0].startswith("run hf download meta-llama/")
    # Never written: the run stops before the download, naming the file (a 2 s wait here).
    (tokens / "HF_TOKEN").unlink()
    quick = script.replace(f"{{1..{TOKEN_WAIT_SECONDS // 2}}}", "{1..1}")
    proc, _, calls = bash(quick, job_driver_env(pod_env(container)), tmp_path, "never")
    assert proc.returncode != 0
    assert "nemo-rl-gke: setup step failed: " in proc.stderr
    assert f'[ -s "{tokens}/HF_TOKEN" ]' in proc.stderr
    assert calls == []


TOPO = """\
\tGPU0\tGPU1\tGPU2\tGPU3\tGPU4\tGPU5\tGPU6\tGPU7\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID
GPU0\t X \tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\tPIX\t0-55,112-167\t0\t\tN/A
GPU1\tNV18\t X \tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\tSYS\t0-55,112-167\t0\t\tN/A
GPU2\tNV18\tNV18\t X \tNV18\tNV18\tNV18\tNV18\tNV18\tSYS\t0-55,112-167\t0\t\tN/A
GPU3\tNV18\tNV18\tNV18\t X \tNV18\tNV18\tNV18\tNV18\tSYS\t0-55,112-167\t0\t\tN/A
GPU4\tNV18\tNV18\tNV18\tNV18\t X \tNV18\tNV18\tNV18\tSYS\t56-111,168-223\t1\t\tN/A
GPU5\tNV18\tNV18\tNV18\tNV18\tNV18\t X \tNV18\tNV18\tSYS\t56-111,168-223\t1\t\tN/A
GPU6\tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\t X \tNV18\tSYS\t56-111,168-223\t1\t\tN/A
GPU7\tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\t X \tSYS\t56-111,168-223\t1\t\tN/A
NIC0\tPIX\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\t X

Legend:

  X    = Self
  NV#  = Connection traversing a bonded set of # NVLinks

NIC Legend:

  NIC0: mlx5_0
"""
"""`nvidia-smi topo -m` of a two-socket 8-GPU node, in the tool's layout (tab separated; the
last columns are CPU Affinity, NUMA Affinity and GPU NUMA ID)."""


def test_workers_write_nemo_rl_s_numa_map_before_ray_starts(b200_job: Any, tmp_path: Path) -> None:
    """The file NeMo RL's workers pin themselves from (`bind_to_gpu_numa`), written as ray.sub
    writes it: GPU -> the CPU list of its NUMA node, read from this host's real sysfs."""
    _, container = worker_of(b200_job)
    (args,) = container["args"]
    smi = tmp_path / "nvidia-smi"
    smi.write_text(f"#!/bin/sh\n[ \"$*\" = 'topo -m' ] || exit 2\ncat <<'EOF'\n{TOPO}EOF\n")
    smi.chmod(0o755)
    proc, _, calls = bash(f"{args} && {KUBERAY_START}", pod_env(container), tmp_path, "node")
    assert proc.returncode == 0, proc.stderr
    assert calls[-1].startswith("ray start")
    node0 = Path("/sys/devices/system/node/node0/cpulist").read_text().strip()
    node1 = Path("/sys/devices/system/node/node1/cpulist")
    expected = [f"{gpu}:{node0}" for gpu in range(4)]
    if node1.exists():
        expected += [f"{gpu}:{node1.read_text().strip()}" for gpu in range(4, 8)]
    assert (tmp_path / "nrl_gpu_cpu_affinity").read_text().splitlines() == expected

    # No topology (no nvidia-smi): the worker starts anyway, saying NeMo RL runs unpinned.
    smi.unlink()
    proc, _, calls = bash(f"{args} && {KUBERAY_START}", pod_env(container), tmp_path, "node")
    assert proc.returncode == 0
    assert calls[-1].startswith("ray start")
    assert "NeMo RL runs unpinned" in proc.stderr


def test_gpus_without_rdma_keep_the_image_library_path(tmp_path: Path) -> None:
    result = run_stack(
        "dev", tmp_path, variant("dev", {"nemo-rl-gke:ray": {"job": {"enabled": True}}})
    )
    records = by_name(result)
    job = records["ray-job"].inputs["spec"]
    assert "entrypointResources" not in job  # no gIB: the driver may run on the head
    worker = job["rayClusterSpec"]["workerGroupSpecs"][0]
    (container,) = worker["template"]["spec"]["containers"]
    proc, raylet, _ = bash(
        f"{container['args'][0]} && {KUBERAY_START}", pod_env(container), tmp_path, "node"
    )
    assert proc.returncode == 0, proc.stderr
    (_, _, script) = shlex.split(job["entrypoint"])
    head = pod_env(job["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0])
    proc, driver, calls = bash(script, head, tmp_path, "driver")
    assert proc.returncode == 0, proc.stderr
    training = {**raylet, **driver}
    assert training["LD_LIBRARY_PATH"] == f"/usr/local/nvidia/lib64:{IMAGE_LD_LIBRARY_PATH}"
    assert "GIB_SCRIPT_SOURCED" not in training
    assert "NCCL_NET" not in training
    assert calls[0] == "run hf download Qwen/Qwen3-0.6B --exclude original/*"


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


def test_setting_a_token_later_leaves_the_ray_pods_spec_as_it_was(
    b200_job: Any, tmp_path: Path
) -> None:
    """The RayCluster does not depend on which tokens are set (they are files of the Secret's
    optional volume, never environment variables): on a queued
    stack a changed RayCluster is a server-side apply conflict with Kueue and a re-queued,
    restarted Ray cluster, which adding `wandbApiKey` to a running stack must not cause."""
    later = {
        "nemo-rl-gke:ray": {"job": {"enabled": True}},
        "nemo-rl-gke:hfToken": {"secure": "v1:x"},
        "nemo-rl-gke:wandbApiKey": {"secure": "v1:y"},
    }
    with_both = run_stack("b200", tmp_path, variant("b200", later))
    cluster = by_name(b200_job)["ray-cluster"].inputs
    assert by_name(with_both)["ray-cluster"].inputs == cluster
    # Nor do the tokens sit in the pods' environment (checkov CKV_K8S_35): files only.
    for pod in (cluster["spec"]["headGroupSpec"], *cluster["spec"]["workerGroupSpecs"]):
        for container in pod["template"]["spec"]["containers"]:
            assert not [e for e in container.get("env", []) if "valueFrom" in e], container["env"]


def test_the_run_s_status_survives_the_copy_of_its_output(b200_job: Any, tmp_path: Path) -> None:
    """The driver's output goes through `tee` into the run's logs: a failed run still fails the
    job (pipefail), and a log that cannot be written fails nothing."""
    job = by_name(b200_job)["ray-job"].inputs["spec"]
    (_, _, script) = shlex.split(job["entrypoint"])
    (tmp_path / "tokens").mkdir(exist_ok=True)
    (tmp_path / "tokens" / "HF_TOKEN").write_text("hf_from_the_secret")
    base = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    ok, _, _ = bash(script, base, tmp_path, "ok")
    assert ok.returncode == 0, ok.stderr
    assert "driver.log: No such file or directory" in ok.stderr  # /data is not here
    # NeMo RL's run fails (the downloads before it do not).
    failed, _, calls = bash(script, {**base, "FAIL_UV": "1"}, tmp_path, "failed")
    assert "run python examples/run_grpo.py" in calls[-1]
    assert failed.returncode == 1


def test_a_gated_model_the_token_cannot_read_stops_before_nemo_rl_naming_its_licence(
    b200_job: Any, tmp_path: Path
) -> None:
    """The Hub answers 403 to a token whose account has not accepted the model's licence: the
    download fails before NeMo RL starts, and the driver says what to do."""
    job = by_name(b200_job)["ray-job"].inputs["spec"]
    (_, _, script) = shlex.split(job["entrypoint"])
    (tmp_path / "tokens").mkdir(exist_ok=True)
    (tmp_path / "tokens" / "HF_TOKEN").write_text("hf_from_the_secret")
    base = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    refused, _, calls = bash(
        script, {**base, "FAIL_UV_ON": "hf download meta-llama/"}, tmp_path, "x"
    )
    assert refused.returncode == 1
    model = calls[-1].split("hf download ", 1)[1].split()[0]
    assert model.startswith("meta-llama/")
    assert (
        f"{model} is gated: the account of the stack's hfToken must have accepted its licence at"
        f" https://huggingface.co/{model}"
    ) in refused.stderr
    assert not any("run_grpo.py" in call for call in calls)


def test_the_driver_ships_the_tokenizer_guard_first_on_pythonpath(
    b200_job: Any, tmp_path: Path
) -> None:
    """NeMo RL hands the driver's environment to every worker: the hook written on the shared
    volume and first on PYTHONPATH reaches each of them (tests/workload: what it does)."""
    job = by_name(b200_job)["ray-job"].inputs["spec"]
    (_, _, script) = shlex.split(job["entrypoint"])
    (tmp_path / "tokens").mkdir(exist_ok=True)
    (tmp_path / "tokens" / "HF_TOKEN").write_text("hf_from_the_secret")
    base = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PYTHONPATH": "/image/path"}
    ran, env, calls = bash(script, base, tmp_path, "guard")
    assert ran.returncode == 0, ran.stderr
    assert "run python examples/run_grpo.py" in calls[-1]
    assert env["PYTHONPATH"] == f"{tmp_path / 'site'}:/image/path"  # the image's kept after it
    assert (tmp_path / "site" / "sitecustomize.py").read_text() == site_hook()
    assert "NEMO_RL_GKE_SITE" not in env
