"""The acceptance gates' config: which gates `pulumi up` runs, their thresholds and timeouts.

A threshold's key names the unit its gate compares (nccl-tests prints bus bandwidth in GB/s,
fio throughput in MB/s), and a threshold is refused where it could never do its job: above
Google's published figure for the GPU (no healthy fabric passes it, so every `up` would fail
after the cluster is built), or set for a collective, a GPU or a volume the gate never runs on.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

from pydantic import Field, field_validator

from planning.verify import (
    NCCL_PLAUSIBLE_FACTOR,
    NCCL_PUBLISHED_AVG_BUSBW,
    NCCL_PUBLISHED_BUSBW_8G,
    SMOKE_STOP_MARGIN_SECONDS,
    GateSettings,
)
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
        max_length=len(DEFAULT_COLLECTIVES),
        description="nccl-tests collectives to run, 1K to 8G each.",
    )
    min_bus_bandwidth_gb_per_second: float | None = Field(
        None,
        alias="minBusBandwidthGBPerSecond",
        gt=0,
        le=2000,
        description="all_gather bus bandwidth needed at 8 GiB, in GB/s as nccl-tests prints it"
        " (default: 85% of Google's published figure for the GPU).",
    )
    min_avg_bus_bandwidth_gb_per_second: float = Field(
        100.0,
        alias="minAvgBusBandwidthGBPerSecond",
        ge=0,
        le=2000,
        description="all_gather average bus bandwidth over every size, in GB/s.",
    )
    min_all_reduce_bus_bandwidth_gb_per_second: float | None = Field(
        None,
        alias="minAllReduceBusBandwidthGBPerSecond",
        gt=0,
        le=2000,
        description="all_reduce bus bandwidth needed at 8 GiB, in GB/s (default: reported, not"
        " judged; no published figure).",
    )

    @field_validator("collectives")
    @classmethod
    def _once_each(cls, value: list[Collective]) -> list[Collective]:
        for i, name in enumerate(value):
            if value.index(name) != i:
                raise ConfigProblem((i,), f"{name} is listed twice", "list each collective once")
        return value


class StorageGate(GateSwitch):
    """Throughput of /data from every GPU node at once (fio)."""

    min_fraction: float = Field(
        0.5, gt=0, le=1, description="Share of Lustre's provisioned throughput needed."
    )
    bucket_min_mb_per_second: float = Field(
        100,
        alias="bucketMinMBPerSecond",
        gt=0,
        le=100_000,
        description="Throughput needed when /data is the GCS bucket, in MB/s as fio reports it.",
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
    job_nccl: GateSwitch = Field(
        default_factory=GateSwitch,
        description="NCCL of the NeMo RL image over every GPU of the RayCluster's workers.",
    )


def verify_enabled(verify: VerifyConfig, gpu: GpuConfig) -> bool:
    """verify.enabled, defaulting to on where the GPUs have RDMA NICs."""
    if verify.enabled is not None:
        return verify.enabled
    return gpu.profile.rdma_nics > 0


def _parked(gpu: GpuConfig) -> bool:
    """A fixed pool of 0 nodes: parked (or not bought yet)."""
    return gpu.autoscaling is None and gpu.max_nodes == 0


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
            ("job-nccl", v.job_nccl),
        )
        if gate.timeout_minutes is not None
    }
    return GateSettings(
        gpu_health=on and v.gpu_health.enabled,
        rdma=on and v.rdma.enabled,
        nccl=on and v.nccl.enabled,
        storage=on and v.storage.enabled,
        nccl_collectives=tuple(v.nccl.collectives),
        nccl_min_busbw=v.nccl.min_bus_bandwidth_gb_per_second,
        nccl_min_all_reduce_busbw=v.nccl.min_all_reduce_bus_bandwidth_gb_per_second,
        nccl_min_avg_busbw=v.nccl.min_avg_bus_bandwidth_gb_per_second,
        storage_min_fraction=v.storage.min_fraction,
        bucket_min_mbps=v.storage.bucket_min_mb_per_second,
        timeouts=timeouts,
        # A parked pool (gpu.nodes 0) keeps the smoke's settings for when it has nodes again:
        # parking stays a one-key change, and nothing is planned meanwhile.
        grpo_smoke=on and v.grpo_smoke.enabled and not _parked(gpu),
        smoke_steps=v.grpo_smoke.steps,
        job_nccl=on and v.job_nccl.enabled,
    )


def smoke_problems(verify: VerifyConfig, gpu: GpuConfig) -> Iterator[ConfigProblem]:
    """The smoke needs GPU workers when it starts. Paths relative to the stack."""
    autoscaling = gpu.autoscaling
    if not gate_settings(verify, gpu).grpo_smoke:
        return
    if autoscaling is not None and autoscaling.min == 0:
        yield ConfigProblem(
            ("verify", "grpoSmoke", "enabled"),
            "the smoke runs on the stack's RayCluster, whose workers start at 0 with"
            " gpu.autoscaling.min 0, and NeMo RL never asks the autoscaler for GPUs",
            "set gpu.autoscaling.min to 1 or more, or turn verify.grpoSmoke off",
        )


_NCCL_THRESHOLDS: dict[str, tuple[str, Collective]] = {
    # field -> (key, the collective it judges)
    "min_bus_bandwidth_gb_per_second": ("minBusBandwidthGBPerSecond", "all_gather"),
    "min_avg_bus_bandwidth_gb_per_second": ("minAvgBusBandwidthGBPerSecond", "all_gather"),
    "min_all_reduce_bus_bandwidth_gb_per_second": (
        "minAllReduceBusBandwidthGBPerSecond",
        "all_reduce",
    ),
}


def threshold_problems(
    verify: VerifyConfig, gpu: GpuConfig, lustre_enabled: bool
) -> Iterator[ConfigProblem]:
    """Thresholds that can never do their job. Paths relative to the stack."""
    nccl = verify.nccl
    rdma = gpu.profile.rdma_nics > 0
    for name in sorted(nccl.model_fields_set & set(_NCCL_THRESHOLDS)):
        key, collective = _NCCL_THRESHOLDS[name]
        path = ("verify", "nccl", key)
        if not rdma:
            yield ConfigProblem(
                path,
                f"the NCCL gate runs only on GPUs with RDMA NICs (b200, h200), not on"
                f" {gpu.profile.machine_type}: the threshold would do nothing",
                f"remove verify.nccl.{key}",
            )
            return
        if collective not in nccl.collectives:
            yield ConfigProblem(
                path,
                f"judges {collective}, which verify.nccl.collectives"
                f" ({', '.join(nccl.collectives)}) does not run: the threshold would do nothing",
                f"add {collective} to verify.nccl.collectives, or remove verify.nccl.{key}",
            )
    published = {
        "min_bus_bandwidth_gb_per_second": (
            NCCL_PUBLISHED_BUSBW_8G.get(gpu.type),
            "8 GiB all_gather bus bandwidth",
        ),
        "min_avg_bus_bandwidth_gb_per_second": (
            NCCL_PUBLISHED_AVG_BUSBW.get(gpu.type),
            "average all_gather bus bandwidth",
        ),
    }
    for name, (figure, what) in published.items():
        value = getattr(nccl, name)
        if figure is None or value is None or value <= figure * NCCL_PLAUSIBLE_FACTOR:
            continue
        key = _NCCL_THRESHOLDS[name][0]
        yield ConfigProblem(
            ("verify", "nccl", key),
            f"{value:g} GB/s is more than {NCCL_PLAUSIBLE_FACTOR - 1:.0%} above Google's"
            f" published {figure:g} GB/s ({what} of two healthy {gpu.profile.machine_type}"
            " nodes): no healthy fabric passes it, so every up would fail after the cluster is"
            " built",
            f"set verify.nccl.{key} to at most {figure * NCCL_PLAUSIBLE_FACTOR:.1f} (or remove"
            " it for the default, 85% of the published figure)",
        )
    storage = verify.storage
    if lustre_enabled and "bucket_min_mb_per_second" in storage.model_fields_set:
        yield ConfigProblem(
            ("verify", "storage", "bucketMinMBPerSecond"),
            "judges the GCS bucket, but /data is Managed Lustre here (its floor is minFraction"
            " of the provisioned throughput): the threshold would do nothing",
            "remove verify.storage.bucketMinMBPerSecond, or set verify.storage.minFraction",
        )
    if not lustre_enabled and "min_fraction" in storage.model_fields_set:
        yield ConfigProblem(
            ("verify", "storage", "minFraction"),
            "is a share of Managed Lustre's provisioned throughput, but /data is the GCS bucket"
            " here (it has none): the threshold would do nothing",
            "remove verify.storage.minFraction, or set verify.storage.bucketMinMBPerSecond",
        )


def timeout_problems(verify: VerifyConfig) -> Iterator[ConfigProblem]:
    """The Ray-job gates stop their job SMOKE_STOP_MARGIN_SECONDS before their deadline, so
    that their own verdict ends a hung run: a timeout no longer than that margin leaves the
    gate no time at all. Paths relative to the stack."""
    for key, gate in (("grpoSmoke", verify.grpo_smoke), ("jobNccl", verify.job_nccl)):
        minutes = gate.timeout_minutes
        if minutes is not None and minutes * 60 <= SMOKE_STOP_MARGIN_SECONDS:
            yield ConfigProblem(
                ("verify", key, "timeoutMinutes"),
                f"{minutes} minute(s) leaves the gate no time: it stops its Ray job"
                f" {SMOKE_STOP_MARGIN_SECONDS} s before the deadline to give its own verdict",
                f"set verify.{key}.timeoutMinutes to more than"
                f" {SMOKE_STOP_MARGIN_SECONDS // 60} (the default suits a first run), or"
                " remove it",
            )


_GATES = (
    ("gpuHealth", "gpu_health"),
    ("rdma", "rdma"),
    ("nccl", "nccl"),
    ("storage", "storage"),
    ("grpoSmoke", "grpo_smoke"),
    ("jobNccl", "job_nccl"),
)
_RDMA_GATES = frozenset({"rdma", "nccl", "job_nccl"})


def _nodes_for(field: str, gpu: GpuConfig) -> int | None:
    """The GPU nodes the two-node gates run over (None for the other gates): the NCCL gate
    over the whole pool, the Ray-job NCCL gate over the workers the RayCluster starts with."""
    if field == "nccl":
        return gpu.max_nodes
    if field == "job_nccl":
        return gpu.autoscaling.min if gpu.autoscaling else gpu.max_nodes
    return None


def unused_gate_problems(
    verify: VerifyConfig, gpu: GpuConfig, checked: frozenset[str] = frozenset()
) -> Iterator[ConfigProblem]:
    """Settings of a gate that never runs on this stack do nothing: the gates are off, or the
    gate needs RDMA NICs the machine lacks. Turning such a gate off is harmless and accepted.
    A scheduled health check runs its gate's script with the gate's floors and timeout, so
    the settings of a gate in `checked` (health checks, planning.health) are used either way.
    Paths relative to the stack."""
    on = verify_enabled(verify, gpu)
    for key, field in _GATES:
        gate = getattr(verify, field)
        given = set(gate.model_fields_set)
        if gate.enabled is False:
            given.discard("enabled")
        if field not in verify.model_fields_set or not given:
            continue
        if not on and field.replace("_", "-") in checked:
            continue
        if not on:
            yield ConfigProblem(
                ("verify", key),
                "sets up a gate, and no gate runs on this stack (verify.enabled"
                f"{' false' if verify.enabled is False else ' defaults to off without RDMA'}):"
                " it would do nothing",
                f"remove verify.{key}, or set verify.enabled: true",
            )
            return
        if field in _RDMA_GATES and not gpu.profile.rdma_nics:
            yield ConfigProblem(
                ("verify", key),
                f"the {key} gate runs only on GPUs with RDMA NICs (b200, h200), not on"
                f" {gpu.profile.machine_type}: its settings would do nothing",
                f"remove verify.{key}",
            )
            return
        nodes = _nodes_for(field, gpu)
        if nodes is not None and nodes < 2 and not _parked(gpu):
            yield ConfigProblem(
                ("verify", key),
                f"the {key} gate needs two GPU nodes or more (on one, NCCL goes over NVLink and"
                f" proves nothing about the network), and this pool gives it {nodes}: its"
                " settings would do nothing",
                f"remove verify.{key}, or give the pool two nodes or more",
            )
            return
