"""Pure Ray planning: sizing, NCCL env, the GRPO command, image facts."""

from __future__ import annotations

import shlex

import pytest

from planning.catalog import GPU_CATALOG
from planning.ray import (
    IMAGE_CUDA,
    IMAGE_RAY,
    GrpoRun,
    grpo_entrypoint,
    grpo_script,
    image_tag,
    model_is_gated,
    nccl_gib_env,
    submit_command,
    worker_size,
)
from planning.versions import VERSIONS


def test_worker_takes_the_whole_node_with_headroom() -> None:
    b200 = worker_size(GPU_CATALOG["b200"])
    assert b200.gpus == 8
    # tutorial-facts §11.1: the sample's B200 worker asks 206 CPU / 2400Gi; ours stays below
    # the node (224 vCPU / 3968 GB) and leaves room for DaemonSets.
    assert 190 <= b200.cpu < 224
    assert 2400 <= b200.memory_gib < 3968 / 1.073741824
    assert b200.shm_gib == 250  # Google's RDMA test pods use 250Gi of /dev/shm
    l4 = worker_size(GPU_CATALOG["l4"])
    assert (l4.gpus, l4.cpu) == (1, 14)
    assert l4.shm_gib < l4.memory_gib


def test_pinned_image_matches_pinned_ray_version() -> None:
    tag = image_tag(VERSIONS.nemo_rl_image.value)
    assert IMAGE_RAY[tag] == VERSIONS.ray_version.value  # rayVersion must equal the image's Ray
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
        "checkpoint_dir": "/data/ckpt",
        "wandb": False,
        "wandb_project": "p",
        "run_name": "grpo-gsm8k",
    }
    base.update(changes)
    return GrpoRun(**base)  # type: ignore[arg-type]


def test_entrypoint_carries_every_setting() -> None:
    command = grpo_entrypoint(run())
    assert command.startswith("cd /opt/nemo-rl && uv run python examples/run_grpo.py")
    words = shlex.split(command.split("&&", 1)[1])
    for expected in (
        "--config",
        "examples/configs/grpo_math_8B.yaml",
        "policy.model_name=meta-llama/Llama-3.1-8B-Instruct",
        "cluster.num_nodes=2",
        "cluster.gpus_per_node=8",
        "grpo.max_num_steps=10",
        "checkpointing.checkpoint_dir=/data/ckpt",
        "data.train.dataset_name=gsm8k",
        "logger.wandb_enabled=false",
    ):
        assert expected in words
    assert not any(w.startswith("logger.wandb.name") for w in words)
    with_wandb = shlex.split(grpo_entrypoint(run(wandb=True)).split("&&", 1)[1])
    assert "logger.wandb_enabled=true" in with_wandb
    assert "logger.wandb.name=grpo-gsm8k" in with_wandb


def test_v05_entrypoint_uses_the_tutorials_dataset_overrides() -> None:
    command = grpo_entrypoint(run(image="nvcr.io/nvidia/nemo-rl:v0.5.0"))
    assert "examples/run_grpo_math.py" in command
    assert "+data.train_data_path=openai/gsm8k" in command


def test_submit_command_quotes_the_entrypoint() -> None:
    entry = grpo_entrypoint(run())
    command = submit_command(entry)
    assert command.startswith("ray job submit --address http://localhost:8265 -- bash -c ")
    assert shlex.split(command)[-1] == entry


@pytest.mark.parametrize(
    ("gpu", "tuner"), [("b200", "tuner_config_a4.txtpb"), ("h200", "tuner_config_a3u.txtpb")]
)
def test_nccl_env_points_at_the_gpu_tuner(gpu: str, tuner: str) -> None:
    env = dict(nccl_gib_env(GPU_CATALOG[gpu].nccl_tuner_config or ""))  # type: ignore[index]
    assert env["NCCL_TUNER_CONFIG_PATH"] == f"/usr/local/gib/configs/{tuner}"
    assert env["NCCL_NET_PLUGIN"] == "/usr/local/gib/lib64/libnccl-net_internal.so"
    assert env["GLOO_SOCKET_IFNAME"] == "eth0"
    assert env["LD_LIBRARY_PATH"].split(":") == ["/usr/local/gib/lib64", "/usr/local/nvidia/lib64"]


def test_gated_models() -> None:
    assert model_is_gated("meta-llama/Llama-3.1-8B-Instruct")
    assert model_is_gated("google/gemma-3-27b-it")
    assert not model_is_gated("Qwen/Qwen3-0.6B")
