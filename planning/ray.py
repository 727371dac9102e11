"""Pure planning for the Ray workload: pod sizing, gIB/NCCL environment, the GRPO command.

Nothing here touches Pulumi; the RayCluster component only places these values.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from planning.catalog import GpuProfile

NEMO_RL_DIR = "/opt/nemo-rl"
"""WORKDIR of the NeMo RL image (NVIDIA-NeMo/RL:docker/Dockerfile)."""
GIB_DIR = "/usr/local/gib"
NVIDIA_DIR = "/usr/local/nvidia"
DATA_DIR = "/data"
HF_HOME = f"{DATA_DIR}/huggingface_cache"
GB_PER_GIB = 1.073741824

GATED_MODEL_ORGS = frozenset({"meta-llama", "google", "mistralai", "nvidia"})
"""Hugging Face orgs whose models need an accepted licence and a token to download."""

# CUDA runtime of each NeMo RL image, and the driver branch that CUDA needs
# (NVIDIA-NeMo/RL:docker/Dockerfile per tag; CUDA 13 needs R580+, CUDA 12.9 R575+).
IMAGE_CUDA: dict[str, tuple[int, int]] = {"v0.5.0": (12, 9), "v0.6.0": (12, 9), "v0.7.0": (13, 2)}
IMAGE_RAY: dict[str, str] = {"v0.5.0": "2.49.2", "v0.6.0": "2.54.0", "v0.7.0": "2.55.1"}
"""Ray pinned in each tag's uv.lock: the RayCluster's rayVersion must equal it."""


@dataclass(frozen=True)
class PodSize:
    """Requests (= limits) of a Ray pod."""

    cpu: int
    memory_gib: int
    gpus: int
    shm_gib: int


def worker_size(gpu: GpuProfile) -> PodSize:
    """One Ray worker per GPU node, taking every GPU and most of the node.

    About 10% of vCPUs and 20% of memory stay free for the kubelet, GKE's DaemonSets and
    sidecars. /dev/shm counts against the pod's memory, so it is carved from the same limit.
    The tutorial's B200 worker (206 CPU / 2400Gi) sits inside these bounds.
    """
    memory_gib = int(gpu.memory_gb / GB_PER_GIB * 0.8)
    return PodSize(
        cpu=int(gpu.vcpus * 0.9),
        memory_gib=memory_gib,
        gpus=gpu.gpus_per_node,
        shm_gib=min(250, max(1, memory_gib // 8)),
    )


def image_tag(image: str) -> str:
    """`nvcr.io/nvidia/nemo-rl:v0.7.0` -> `v0.7.0`."""
    return image.rsplit(":", 1)[-1]


def _version(tag: str) -> tuple[int, ...]:
    match = re.match(r"^v?(\d+)\.(\d+)\.(\d+)", tag)
    if match is None:
        raise ValueError(f"cannot read a NeMo RL version from image tag {tag!r}")
    return tuple(int(p) for p in match.groups())


def grpo_script(image: str) -> str:
    """The GRPO entry point of the image: `run_grpo_math.py` was removed in v0.6.0."""
    return (
        "examples/run_grpo.py"
        if _version(image_tag(image)) >= (0, 6, 0)
        else "examples/run_grpo_math.py"
    )


def gsm8k_overrides(image: str) -> list[str]:
    """Dataset overrides that train on GSM8K in the image's config schema."""
    if _version(image_tag(image)) >= (0, 6, 0):
        return ["data.train.dataset_name=gsm8k"]
    # v0.5.0 (Google's sample, tutorial-facts §12.1): a response dataset from the HF Hub.
    return [
        "data.dataset_name=ResponseDataset",
        "+data.train_data_path=openai/gsm8k",
        "+data.val_data_path=openai/gsm8k",
        "+data.train_split=train",
        "+data.val_split=test",
        '+data.subset="main"',
        '+data.input_key="question"',
        '+data.output_key="answer"',
    ]


def model_is_gated(model: str) -> bool:
    """True for models whose download needs a Hugging Face token."""
    return model.split("/", 1)[0] in GATED_MODEL_ORGS


@dataclass(frozen=True)
class GrpoRun:
    """Everything that shapes one GRPO run."""

    image: str
    config: str
    model: str
    steps: int
    nodes: int
    gpus_per_node: int
    checkpoint_dir: str
    wandb: bool
    wandb_project: str
    run_name: str


def grpo_entrypoint(run: GrpoRun) -> str:
    """Shell command that runs NeMo RL's GRPO example from the image's source tree."""
    overrides = [
        f"policy.model_name={run.model}",
        f"cluster.num_nodes={run.nodes}",
        f"cluster.gpus_per_node={run.gpus_per_node}",
        f"grpo.max_num_steps={run.steps}",
        "checkpointing.enabled=true",
        f"checkpointing.checkpoint_dir={run.checkpoint_dir}",
        *gsm8k_overrides(run.image),
        f"logger.wandb_enabled={str(run.wandb).lower()}",
    ]
    if run.wandb:
        overrides += [
            f"logger.wandb.project={run.wandb_project}",
            f"logger.wandb.name={run.run_name}",
        ]
    args = " ".join(shlex.quote(o) for o in overrides)
    return (
        f"cd {NEMO_RL_DIR} && uv run python {grpo_script(run.image)}"
        f" --config {shlex.quote(run.config)} {args}"
    )


def nccl_gib_env(tuner_config: str) -> list[tuple[str, str]]:
    """NCCL settings for the gIB plugin (what `set_nccl_env.sh` sets; platform-facts §d).

    Bootstrap and Gloo stay on eth0 (the pod network); data moves over the RDMA NICs.
    """
    return [
        ("NCCL_NET", "gIB"),
        ("NCCL_NET_PLUGIN", f"{GIB_DIR}/lib64/libnccl-net_internal.so"),
        ("NCCL_TUNER_CONFIG_PATH", f"{GIB_DIR}/configs/{tuner_config}"),
        ("NCCL_CROSS_NIC", "0"),
        ("NCCL_NET_GDR_LEVEL", "PIX"),
        ("NCCL_P2P_NET_CHUNKSIZE", "131072"),
        ("NCCL_NVLS_CHUNKSIZE", "524288"),
        ("NCCL_IB_ADAPTIVE_ROUTING", "1"),
        ("NCCL_IB_QPS_PER_CONNECTION", "4"),
        ("NCCL_IB_TC", "52"),
        ("NCCL_IB_FIFO_TC", "84"),
        ("NCCL_SOCKET_IFNAME", "eth0"),
        ("GLOO_SOCKET_IFNAME", "eth0"),
        ("TP_SOCKET_IFNAME", "eth0"),
        ("LD_LIBRARY_PATH", f"{GIB_DIR}/lib64:{NVIDIA_DIR}/lib64"),
    ]


def port_forward_command(namespace: str, service: str) -> str:
    """Reach the Ray dashboard on localhost:8265."""
    return f"kubectl -n {namespace} port-forward svc/{service} 8265:8265"


def submit_command(entrypoint: str) -> str:
    """`ray job submit` of the GRPO entry point through a dashboard port-forward.

    Tokens are not on the command line: the Ray pods read them from the Kubernetes Secret.
    """
    return f"ray job submit --address http://localhost:8265 -- bash -c {shlex.quote(entrypoint)}"
