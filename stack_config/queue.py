"""The job queue's config: Kueue with topology-aware scheduling in front of the GPU pool.

On by default where the GPUs have RDMA (b200, h200: multi-node runs on a reservation), off
on dev unless asked. The queue's quota and its GPU flavor come from the pool; what a user
may change is checked against the pool here, before anything is created.
"""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import Field, field_validator

from planning.queue import TopologyLevel, gpu_pool_node_labels, machine_shape, reports_topology
from planning.versions import VERSIONS
from stack_config.base import ConfigModel
from stack_config.errors import ConfigProblem
from stack_config.gpu_pool import GpuConfig
from stack_config.local_chart import check_pinned_chart


class QueueConfig(ConfigModel):
    """Kueue: one ClusterQueue over the GPU pool, a LocalQueue in the workload namespace."""

    enabled: bool | None = Field(
        None,
        description="Install Kueue and queue the Ray workloads (default: on for GPUs with RDMA"
        " - b200, h200 - off otherwise).",
    )
    topology: TopologyLevel | None = Field(
        None,
        description="Where a run's GPU workers must land together: subblock, block (of the"
        " reservation) or none. Default: subblock where GKE labels the nodes with the"
        " reservation's topology (b200, h200), none otherwise.",
    )
    gpu_quota: int | None = Field(
        None,
        ge=0,
        description="GPUs the queue admits at once (default: every GPU of the pool; never more).",
    )
    flavor_labels: dict[str, str] | None = Field(
        None,
        description="Node labels of the GPU flavor (default: the pool's accelerator label);"
        " every label must be one the GPU pool's nodes carry.",
    )
    chart_path: str | None = Field(
        None,
        description="A local Kueue chart folder or .tgz instead of the public OCI chart"
        " (air-gapped installs, the engine test bed); it must be the pinned version.",
    )

    @field_validator("chart_path")
    @classmethod
    def _chart_is_the_pinned_one(cls, value: str | None) -> str | None:
        if value is None:
            return None
        check_pinned_chart(
            value,
            VERSIONS.kueue_chart.value,
            key="kueue.chartPath",
            chart="kueue",
            name="Kueue",
            pin="kueue_chart",
        )
        return value


def queue_enabled(queue: QueueConfig, gpu: GpuConfig) -> bool:
    """kueue.enabled, defaulting to on where the GPUs have RDMA NICs."""
    if queue.enabled is not None:
        return queue.enabled
    return gpu.profile.rdma_nics > 0


def queue_topology(queue: QueueConfig, gpu: GpuConfig) -> TopologyLevel:
    """kueue.topology, defaulting to subblock where the nodes report their topology."""
    if queue.topology is not None:
        return queue.topology
    return "subblock" if reports_topology(gpu.profile) else "none"


def pool_gpus(gpu: GpuConfig) -> int:
    """Every GPU the pool can have: its nodes (or autoscaling maximum) times the node's GPUs."""
    return gpu.max_nodes * gpu.profile.gpus_per_node


def queue_problems(
    queue: QueueConfig, gpu: GpuConfig, system_machine_type: str
) -> Iterator[ConfigProblem]:
    """The queue never promises more than the pool holds, its flavor names the pool's nodes,
    and the system pool's shape is known (the head's flavor is sized from it). Paths relative
    to the stack."""
    if not queue_enabled(queue, gpu):
        return
    if machine_shape(system_machine_type) is None:
        yield ConfigProblem(
            ("cluster", "systemPool", "machineType"),
            f"the queue sizes the Ray head's flavor from the system pool, and {system_machine_type}"
            " is not a predefined FAMILY-standard|highmem|highcpu-CPUS or FAMILY-custom-CPUS-MB"
            " machine type",
            "use a predefined machine type such as n2-highmem-16, or set kueue.enabled to false",
        )
    if queue.topology in ("subblock", "block") and not reports_topology(gpu.profile):
        yield ConfigProblem(
            ("kueue", "topology"),
            f"{gpu.profile.machine_type} nodes carry no reservation topology labels"
            " (cloud.google.com/gce-topology-*), so no run could ever be placed in a"
            f" {queue.topology}",
            "set kueue.topology to none, or remove it",
        )
    total = pool_gpus(gpu)
    if queue.gpu_quota is not None and queue.gpu_quota > total:
        yield ConfigProblem(
            ("kueue", "gpuQuota"),
            f"{queue.gpu_quota} GPUs is more than the pool holds ({gpu.max_nodes} nodes x"
            f" {gpu.profile.gpus_per_node} = {total}): the queue would admit runs no node can"
            " take, and on a reservation they would wait forever",
            f"set kueue.gpuQuota to at most {total}, or remove it to use the pool's GPUs",
        )
    pool_labels = gpu_pool_node_labels(gpu.profile)
    for key, value in (queue.flavor_labels or {}).items():
        if pool_labels.get(key) != value:
            known = ", ".join(f"{k}={v}" for k, v in sorted(pool_labels.items()))
            yield ConfigProblem(
                ("kueue", "flavorLabels", key),
                f"{key}={value} matches no node of the GPU pool, so the flavor would match no"
                " node and nothing would ever be admitted",
                f"use labels the GPU pool's nodes carry ({known}), or remove kueue.flavorLabels",
            )
    if gpu.capacity == "flex-start" and gpu.placement == "compact":
        yield ConfigProblem(
            ("gpu", "placement"),
            "a flex-start pool behind the queue uses queued provisioning, which GKE does not"
            " offer with compact placement",
            "set gpu.placement to none, or kueue.enabled to false",
        )


QUEUE_ONLY_KEYS = (
    ("topology", "topology"),
    ("gpu_quota", "gpuQuota"),
    ("flavor_labels", "flavorLabels"),
    ("chart_path", "chartPath"),
)


def unused_queue_key_problems(queue: QueueConfig, gpu: GpuConfig) -> Iterator[ConfigProblem]:
    """A queue key set while the queue is off does nothing: refused, naming it."""
    if queue_enabled(queue, gpu):
        return
    for field, key in QUEUE_ONLY_KEYS:
        if field in queue.model_fields_set and getattr(queue, field) is not None:
            yield ConfigProblem(
                ("kueue", key),
                "is read only with the job queue on, and it is off here (kueue.enabled"
                f"{' false' if queue.enabled is False else ' defaults to off without RDMA'}):"
                " it would do nothing",
                f"remove kueue.{key}, or set kueue.enabled: true",
            )
            return


def admits_own_workload_problems(
    queue: QueueConfig, gpu: GpuConfig, cluster_workers: int, run_gpus: int | None
) -> Iterator[ConfigProblem]:
    """Kueue admits a workload only when every pod set fits the quota at once: a gpuQuota below
    what the stack's own RayCluster (`cluster_workers` whole nodes) or its GRPO RayJob
    (`run_gpus`, None without the job) needs would leave it queued forever."""
    if not queue_enabled(queue, gpu) or queue.gpu_quota is None:
        return
    needs = {"the RayCluster's workers": cluster_workers * gpu.profile.gpus_per_node}
    if run_gpus is not None:
        needs["the GRPO RayJob"] = run_gpus
    for what, gpus in needs.items():
        if gpus > queue.gpu_quota:
            yield ConfigProblem(
                ("kueue", "gpuQuota"),
                f"{queue.gpu_quota} GPUs cannot admit {what}, which needs {gpus} at once (Kueue"
                " admits a workload only when all its pod sets fit): it would wait forever",
                f"set kueue.gpuQuota to at least {gpus}, or remove it to use the pool's GPUs",
            )
            return
