"""Pure Ray planning: sizing, NCCL env, the GRPO command, image facts."""

from __future__ import annotations

import shlex
import tomllib

import pytest
import ray

from planning.catalog import GPU_CATALOG
from planning.ray import (
    IMAGE_CUDA,
    IMAGE_RAY,
    GrpoRun,
    curves_board_script,
    curves_command,
    dashboard_token_command,
    gib_setup_steps,
    gpu_shell_setup,
    grpo_entrypoint,
    grpo_script,
    image_tag,
    model_is_gated,
    submit_command,
    worker_size,
)
from planning.versions import VERSIONS
from tests.harness import REPO


def test_worker_takes_the_whole_node_with_headroom() -> None:
    b200 = worker_size(GPU_CATALOG["b200"])
    assert b200.gpus == 8
    # tutorial-facts §11.1: the sample's B200 worker asks 206 CPU / 2400Gi; ours stays below
    # the node (224 vCPU / 3968 GB) and leaves room for DaemonSets.
    assert 190 <= b200.cpu < 224
    assert 2400 <= b200.memory_gib < 3968 / 1.073741824
    # Ray's default object store (capped at 200 GB) plus 8 GiB per GPU: the 250Gi of /dev/shm
    # Google's RDMA test pods use.
    assert (b200.object_store_gib, b200.shm_gib) == (186, 250)
    l4 = worker_size(GPU_CATALOG["l4"])
    assert (l4.gpus, l4.cpu) == (1, 14)
    # 30% of 47 GiB in a /dev/shm that holds it (5 GiB before: Ray put the store on disk).
    assert (l4.object_store_gib, l4.shm_gib) == (14, 22)
    assert l4.shm_gib < l4.memory_gib


def test_pinned_image_matches_pinned_ray_version() -> None:
    tag = image_tag(VERSIONS.nemo_rl_image.value)
    assert IMAGE_RAY[tag] == VERSIONS.ray_version.value  # rayVersion must equal the image's Ray
    # The test bed's Ray (the project's dev group) is the image's.
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    pins = [d for d in project["dependency-groups"]["dev"] if d.startswith("ray[")]
    assert pins == [f"ray[default]=={VERSIONS.ray_version.value}"]
    assert ray.__version__ == VERSIONS.ray_version.value
    assert IMAGE_CUDA[tag] == (13, 2)  # platform-facts §h: v0.7.0 is CUDA 13.2
    assert VERSIONS.gpu_driver_version.value == "LATEST"


@pytest.mark.parametrize(
    ("image", "script"),
    [
        ("nvcr.io/nvidia/nemo-rl:v0.5.0", "examples/run_grpo_math.py"),
        ("nvcr.io/nvidia/nemo-rl:v0.6.0", "examples/run_grpo.py"),
        ("nvcr.io/nvidia/nemo-rl:v0.7.0", "examples/run_grpo.py"),
    ],
)
def test_grpo_script_by_image(image: str, script: str) -> None:
    assert grpo_script(image) == script  # run_grpo_math.py removed in v0.6.0 (platform-facts §h)


def run(**changes: object) -> GrpoRun:
    base: dict[str, object] = {
        "image": "nvcr.io/nvidia/nemo-rl:v0.7.0",
        "config": "examples/configs/grpo_math_8B.yaml",
        "model": "meta-llama/Llama-3.1-8B-Instruct",
        "steps": 10,
        "nodes": 2,
        "gpus_per_node": 8,
        "wandb": False,
        "wandb_project": "p",
        "job": "grpo-gsm8k",
        "runs_dir": "/data/nemo-rl/runs",
    }
    base.update(changes)
    return GrpoRun(**base)  # type: ignore[arg-type]


def words_of(command: str) -> list[str]:
    """The words of the GRPO command inside the entrypoint's bash script."""
    (bash, flag, script) = shlex.split(command)
    assert (bash, flag) == ("bash", "-c")
    return shlex.split(
        "uv run python " + script.split(" && uv run python ", 1)[1].split(" 2>&1 | ", 1)[0]
    )


def test_entrypoint_carries_every_setting() -> None:
    planned = run()
    words = words_of(grpo_entrypoint(planned))
    assert words[:5] == ["uv", "run", "python", "examples/run_grpo.py", "--config"]
    for expected in (
        "examples/configs/grpo_math_8B.yaml",
        "policy.model_name=meta-llama/Llama-3.1-8B-Instruct",
        "cluster.num_nodes=2",
        "cluster.gpus_per_node=8",
        "grpo.max_num_steps=10",
        f"checkpointing.checkpoint_dir={planned.checkpoint_dir}",
        f"logger.log_dir={planned.log_dir}",
        "data.train.dataset_name=gsm8k",
        "data.validation={dataset_name:gsm8k,split:test}",
        "logger.wandb_enabled=false",
        "logger.tensorboard_enabled=true",  # curves under the run's logs
    ):
        assert expected in words
    # The driver's output is kept with the run, and the run's status is the script's.
    (_, _, script) = shlex.split(grpo_entrypoint(planned))
    assert " && set -o pipefail && uv run python " in script
    assert script.endswith(f" 2>&1 | {{ tee -a {planned.log_dir}/driver.log || true; }}")
    assert not any(w.startswith("logger.wandb.name") for w in words)
    with_wandb = words_of(grpo_entrypoint(run(wandb=True)))
    assert "logger.wandb_enabled=true" in with_wandb
    assert f"logger.wandb.name={run(wandb=True).name}" in with_wandb


def test_a_run_s_identity_follows_what_it_is() -> None:
    base = run()
    assert base.id == base.fingerprint()
    assert len(base.id) == 8
    assert base.name == f"grpo-gsm8k-{base.id}"
    assert base.rayjob_name == base.name
    assert base.checkpoint_dir == f"/data/nemo-rl/runs/{base.name}/checkpoints"
    assert base.log_dir == f"/data/nemo-rl/runs/{base.name}/logs"
    # What the run is changes its identity (new directories: never another run's checkpoints)
    for change in ({"steps": 50}, {"model": "Qwen/Qwen3-8B"}, {"nodes": 1}, {"gpus_per_node": 4},
                   {"config": "examples/configs/grpo_math_1B.yaml"}):  # fmt: skip
        assert run(**change).id != base.id, change
    # ... how it is logged does not.
    assert run(wandb=True, wandb_project="other").id == base.id
    # A pinned id keeps the directories (resume, or extend to more steps); a new attempt is a
    # new RayJob of the same run.
    pinned = run(run_id="exp1", steps=50, attempt=2)
    assert pinned.name == "grpo-gsm8k-exp1"
    assert pinned.rayjob_name == "grpo-gsm8k-exp1-a2"
    assert pinned.checkpoint_dir == "/data/nemo-rl/runs/grpo-gsm8k-exp1/checkpoints"


def test_v05_entrypoint_uses_the_tutorials_dataset_overrides() -> None:
    command = grpo_entrypoint(run(image="nvcr.io/nvidia/nemo-rl:v0.5.0"))
    assert "examples/run_grpo_math.py" in command
    assert "+data.train_data_path=openai/gsm8k" in command


def test_submit_command_runs_the_same_script() -> None:
    planned = run(rdma=True, tuner_config="tuner_config_a4.txtpb")
    fetch = dashboard_token_command("nemo-rl", "nemo-rl")
    assert fetch == (
        "kubectl -n nemo-rl get secret nemo-rl -o jsonpath='{.data.auth_token}' | base64 -d"
    )
    command = submit_command(planned, fetch)
    words = shlex.split(command)
    assert words[:2] == ["RAY_AUTH_MODE=token", f"RAY_AUTH_TOKEN=$({fetch})"]
    assert words[2:6] == ["ray", "job", "submit", "--address"]
    assert words[words.index("--entrypoint-resources") + 1] == '{"nemo_rl_gib": 1}'
    assert words[-3:] == ["bash", "-c", shlex.split(grpo_entrypoint(planned))[-1]]
    assert "--entrypoint-resources" not in submit_command(run(), fetch)


@pytest.mark.parametrize(
    ("gpu", "tuner"), [("b200", "tuner_config_a4.txtpb"), ("h200", "tuner_config_a3u.txtpb")]
)
def test_gib_setup_sources_google_s_script_and_keeps_the_image_library_path(
    gpu: str, tuner: str
) -> None:
    steps = gib_setup_steps(GPU_CATALOG[gpu].nccl_tuner_config or "")  # type: ignore[index]
    library_path = (
        "export LD_LIBRARY_PATH=/usr/local/gib/lib64:/usr/local/nvidia/lib64"
        "${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    )
    assert steps == [
        "ldconfig /usr/local/nvidia/lib64",
        library_path,
        # Before Google's script, as Google's A4 NCCL example: a gIB plugin that fails to load
        # stops NCCL instead of degrading to another transport.
        "export NCCL_NET=gIB",
        "source /usr/local/gib/scripts/set_nccl_env.sh",
        "export NCCL_IB_GID_INDEX=3",
        f"export NCCL_TUNER_CONFIG_PATH=/usr/local/gib/configs/{tuner}",
        # After the script: the pod network is the platform's choice, as in Google's sample.
        "export NCCL_SOCKET_IFNAME=eth0",
        "export GLOO_SOCKET_IFNAME=eth0",
    ]
    assert "${LD_LIBRARY_PATH" in gpu_shell_setup()
    for word in ("export NCCL_SOCKET_IFNAME=eth0", "export GLOO_SOCKET_IFNAME=eth0"):
        assert word in gpu_shell_setup()  # L4 and other GPUs without RDMA too


def test_gated_models() -> None:
    assert model_is_gated("meta-llama/Llama-3.1-8B-Instruct")
    assert model_is_gated("google/gemma-3-27b-it")
    # The Hub reads repo ids without regard to case: another spelling is still gated.
    assert model_is_gated("Meta-Llama/Llama-3.1-8B-Instruct")
    assert model_is_gated("GOOGLE/gemma-3-27b-it")
    assert not model_is_gated("Qwen/Qwen3-0.6B")


def test_the_curves_command_shows_the_run_s_logs_on_localhost_only() -> None:
    planned = run()
    command = curves_command("nemo-rl", "nemo-rl", planned)
    logs, head, rest = command.split(" && ", 2)
    start, forward = rest.rsplit(" && ", 1)
    assert logs == f'RUN_LOGS="${{RUN_LOGS:-{planned.log_dir}}}"'
    assert head == (
        "HEAD=$(kubectl -n nemo-rl get pod -l ray.io/cluster=nemo-rl,ray.io/node-type=head -o name)"
    )
    words = shlex.split(start)
    assert words[:7] == ["kubectl", "-n", "nemo-rl", "exec", "$HEAD", "-c", "ray-head"]
    assert words[-4:] == ["-c", curves_board_script(), "curves", "$RUN_LOGS"]
    assert shlex.split(forward) == [
        "kubectl", "-n", "nemo-rl", "port-forward", "$HEAD", "6006:6006"
    ]  # fmt: skip
