"""GPU catalog: the hardware facts every other module derives from.

One row per `nemo-rl-gke:gpu.type`. Components, policies and the Ray workload read the
machine type, accelerator, NIC count and tuner file from here instead of retyping them,
so adding a GPU is one row, and b200/h200 differ only in data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from planning.versions import VERSIONS

GpuType = Literal["b200", "h200", "l4"]
Capacity = Literal["reservation", "spot", "flex-start", "on-demand"]


@dataclass(frozen=True)
class GpuProfile:
    """Everything the platform needs to know about one GPU node shape."""

    key: GpuType
    machine_type: str
    accelerator_type: str
    """GKE accelerator name; also the `cloud.google.com/gke-accelerator` node label."""
    gpus_per_node: int
    host_nics: int
    """gVNIC NICs per node. The first sits on the cluster VPC; a second one (A4, A3 Ultra)
    needs the separate gVNIC network and becomes eth1 in pods."""
    rdma_nics: int
    """RoCE NICs per node; each needs its own subnet in the RDMA VPC (0 = no RDMA)."""
    nccl_tuner_config: str | None
    """File under /usr/local/gib/configs shipped by the gIB plugin (None without RDMA)."""
    min_gke_version: str
    quota_metric: str
    """Regional Compute Engine quota for on-demand and reserved VMs."""
    preemptible_quota_metric: str
    """Regional quota consumed by Spot (and, as reported, flex-start) VMs."""
    capacity_types: frozenset[Capacity]
    """How Google sells this machine; anything else fails at create time."""
    boot_disk_type: str
    local_ssds: int
    """Bundled local SSDs, used as the node's ephemeral storage (emptyDir, image layers)."""
    vcpus: int
    memory_gb: int
    grpo_config: str
    """Default NeMo RL GRPO config for this shape (path inside the image)."""
    grpo_model: str
    """Default model: one that trains comfortably on this shape."""
    source: str


_AI_HYPERCOMPUTER = "https://docs.cloud.google.com/ai-hypercomputer/docs/create/gke-ai-hypercompute"
_MACHINES = "https://cloud.google.com/compute/docs/accelerator-optimized-machines"
_QUOTA = "https://cloud.google.com/compute/resource-usage#gpu_quota"

GPU_CATALOG: Final[dict[GpuType, GpuProfile]] = {
    # A4: 8x B200, 8 CX-7 RoCE NICs, sold only as reservation, flex-start or spot
    # (AI Hypercomputer page tabs); A4 boots from Hyperdisk only; 32 x 375 GiB local SSD
    # (12 TiB) bundled, used as ephemeral storage as in Cluster Toolkit's gke-a4 blueprint.
    "b200": GpuProfile(
        key="b200",
        machine_type="a4-highgpu-8g",
        accelerator_type="nvidia-b200",
        gpus_per_node=8,
        host_nics=2,
        rdma_nics=8,
        nccl_tuner_config="tuner_config_a4.txtpb",
        min_gke_version=VERSIONS.gke_min_a4_rdma.value,
        quota_metric="NVIDIA_B200_GPUS",
        preemptible_quota_metric="PREEMPTIBLE_NVIDIA_B200_GPUS",
        capacity_types=frozenset({"reservation", "flex-start", "spot"}),
        boot_disk_type="hyperdisk-balanced",
        local_ssds=32,
        vcpus=224,
        memory_gb=3968,
        grpo_config="examples/configs/grpo_math_8B.yaml",
        grpo_model="meta-llama/Llama-3.1-8B-Instruct",
        source=f"{_AI_HYPERCOMPUTER}; {_MACHINES} (A4); {_QUOTA}",
    ),
    # A3 Ultra: 8x H200 141 GB, 8 RoCE NICs; node pools must use hyperdisk-balanced.
    "h200": GpuProfile(
        key="h200",
        machine_type="a3-ultragpu-8g",
        accelerator_type="nvidia-h200-141gb",
        gpus_per_node=8,
        host_nics=2,
        rdma_nics=8,
        nccl_tuner_config="tuner_config_a3u.txtpb",
        min_gke_version=VERSIONS.gke_min_a3_ultra_rdma.value,
        quota_metric="NVIDIA_H200_GPUS",
        preemptible_quota_metric="PREEMPTIBLE_NVIDIA_H200_GPUS",
        capacity_types=frozenset({"reservation", "flex-start", "spot"}),
        boot_disk_type="hyperdisk-balanced",
        local_ssds=32,
        vcpus=224,
        memory_gb=2952,
        grpo_config="examples/configs/grpo_math_8B.yaml",
        grpo_model="meta-llama/Llama-3.1-8B-Instruct",
        source=f"{_AI_HYPERCOMPUTER}; {_MACHINES} (A3 Ultra); {_QUOTA}",
    ),
    # G2 with one L4 (24 GB) for development: no RDMA, no gIB, sold every way.
    "l4": GpuProfile(
        key="l4",
        machine_type="g2-standard-16",
        accelerator_type="nvidia-l4",
        gpus_per_node=1,
        host_nics=1,
        rdma_nics=0,
        nccl_tuner_config=None,
        min_gke_version=VERSIONS.gke_min_l4_driver.value,
        quota_metric="NVIDIA_L4_GPUS",
        preemptible_quota_metric="PREEMPTIBLE_NVIDIA_L4_GPUS",
        capacity_types=frozenset({"reservation", "spot", "flex-start", "on-demand"}),
        boot_disk_type="pd-balanced",
        local_ssds=0,
        vcpus=16,
        memory_gb=64,
        # NeMo RL v0.7.0's smoke recipe: Qwen3-0.6B on GSM8K, fits one 24 GB L4.
        grpo_config="examples/configs/grpo_smoke.yaml",
        grpo_model="Qwen/Qwen3-0.6B",
        source=f"{_MACHINES} (G2: g2-standard-16 = 1 L4, 16 vCPU, 64 GB); {_QUOTA}",
    ),
}


def profile(gpu_type: GpuType) -> GpuProfile:
    """The catalog row for a GPU type."""
    return GPU_CATALOG[gpu_type]


def profile_for_accelerator(accelerator_type: str) -> GpuProfile | None:
    """Reverse lookup used by policies, which see only the node pool's accelerator type."""
    for row in GPU_CATALOG.values():
        if row.accelerator_type == accelerator_type:
            return row
    return None


def extra_gvnic_networks(row: GpuProfile) -> int:
    """Additional gVNIC networks a node of this shape attaches (beyond the cluster VPC)."""
    return row.host_nics - 1


def machine_family(machine_type: str) -> str:
    """`a4-highgpu-8g` -> `a4-highgpu`: the machine series and shape without its size, the
    prefix Google sells capacity by."""
    return machine_type.rsplit("-", 1)[0]
