"""The acceptance gates' config: which gates `pulumi up` runs, their thresholds and timeouts."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

from pydantic import Field

from planning.verify import GateSettings
from stack_config.base import ConfigModel
from stack_config.errors import ConfigProblem
from stack_config.gpu_pool import GpuConfig

Collective = Literal["all_gather", "all_reduce"]
DEFAULT_COLLECTIVES: tuple[Collective, ...] = ("all_gather", "all_reduce")


class GateSwitch(ConfigModel):
    """One acceptance gate: on or off, and how long `pulumi up` waits for it."""

    enabled: bool = Field(True, description="Run this gate (when verify is on).")
    timeout_minutes: int | None = Field(
        None,
        ge=1,
        le=600,
        description="How long the Job may take, image pull included (default per gate).",
    )


class NcclGate(GateSwitch):
    """NCCL across every GPU node over gIB (nccl-tests, Google's diagnostic image)."""

    collectives: list[Collective] = Field(
        default_factory=lambda: list(DEFAULT_COLLECTIVES),
        min_length=1,
        description="nccl-tests collectives to run, 1K to 8G each.",
    )
    min_bus_bandwidth_gbps: float | None = Field(
        None,
        gt=0,
        le=2000,
        description="all_gather bus bandwidth needed at 8 GiB (default: 85% of Google's"
        " published figure for the GPU).",
    )
    min_avg_bus_bandwidth_gbps: float = Field(
        100.0, ge=0, le=2000, description="all_gather average bus bandwidth over every size."
    )
    min_all_reduce_bus_bandwidth_gbps: float | None = Field(
        None,
        gt=0,
        le=2000,
        description="all_reduce bus bandwidth needed at 8 GiB (default: reported, not judged;"
        " no published figure).",
    )


class StorageGate(GateSwitch):
    """Throughput of /data from every GPU node at once (fio)."""

    min_fraction: float = Field(
        0.5, gt=0, le=1, description="Share of Lustre's provisioned throughput needed."
    )
    bucket_min_mbps: float = Field(
        100, gt=0, le=100_000, description="MB/s needed when /data is the GCS bucket."
    )


class SmokeGate(GateSwitch):
    """A short GRPO run (NeMo RL's own smoke config) through the same RayJob path as the job."""

    enabled: bool = Field(
        False, description="Run the GRPO smoke gate (when verify is on); off by default."
    )
    steps: int = Field(3, ge=1, le=100, description="grpo.max_num_steps of the smoke run.")


class VerifyConfig(ConfigModel):
    """Acceptance gates `pulumi up` waits for before the RayCluster is created."""

    enabled: bool | None = Field(
        None,
        description="Run the gates (default: on for GPUs with RDMA - b200, h200 - off otherwise).",
    )
    gpu_health: GateSwitch = Field(default_factory=GateSwitch, description="GPU count and ECC.")
    rdma: GateSwitch = Field(
        default_factory=GateSwitch, description="RDMA devices and NCCL's network, per node."
    )
    nccl: NcclGate = Field(default_factory=NcclGate, description="NCCL over gIB, all nodes.")
    storage: StorageGate = Field(default_factory=StorageGate, description="/data throughput.")
    grpo_smoke: SmokeGate = Field(
        default_factory=SmokeGate,
        description="A few GRPO steps on the RayCluster before the job starts (off by default).",
    )


def verify_enabled(verify: VerifyConfig, gpu: GpuConfig) -> bool:
    """verify.enabled, defaulting to on where the GPUs have RDMA NICs."""
    if verify.enabled is not None:
        return verify.enabled
    return gpu.profile.rdma_nics > 0


def gate_settings(verify: VerifyConfig, gpu: GpuConfig) -> GateSettings:
    """The verify settings as planning.verify takes them (gates off when verify is off)."""
    v, on = verify, verify_enabled(verify, gpu)
    timeouts = {
        name: gate.timeout_minutes * 60
        for name, gate in (
            ("gpu-health", v.gpu_health),
            ("rdma", v.rdma),
            ("nccl", v.nccl),
            ("storage", v.storage),
            ("grpo-smoke", v.grpo_smoke),
        )
        if gate.timeout_minutes is not None
    }
    return GateSettings(
        gpu_health=on and v.gpu_health.enabled,
        rdma=on and v.rdma.enabled,
        nccl=on and v.nccl.enabled,
        storage=on and v.storage.enabled,
        nccl_collectives=tuple(v.nccl.collectives),
        nccl_min_busbw=v.nccl.min_bus_bandwidth_gbps,
        nccl_min_all_reduce_busbw=v.nccl.min_all_reduce_bus_bandwidth_gbps,
        nccl_min_avg_busbw=v.nccl.min_avg_bus_bandwidth_gbps,
        storage_min_fraction=v.storage.min_fraction,
        bucket_min_mbps=v.storage.bucket_min_mbps,
        timeouts=timeouts,
        grpo_smoke=on and v.grpo_smoke.enabled,
        smoke_steps=v.grpo_smoke.steps,
    )


def smoke_problems(verify: VerifyConfig, gpu: GpuConfig) -> Iterator[ConfigProblem]:
    """The smoke needs GPU workers when it starts. Paths relative to the stack."""
    autoscaling = gpu.autoscaling
    if gate_settings(verify, gpu).grpo_smoke and autoscaling is not None and autoscaling.min == 0:
        yield ConfigProblem(
            ("verify", "grpoSmoke", "enabled"),
            "the smoke runs on the stack's RayCluster, whose workers start at 0 with"
            " gpu.autoscaling.min 0, and NeMo RL never asks the autoscaler for GPUs",
            "set gpu.autoscaling.min to 1 or more, or turn verify.grpoSmoke off",
        )
