"""The job queue: Kueue installed first, its queue opened after the acceptance gates.

Order in the stack (each arrow a dependency):
Kueue release + PriorityClasses -> acceptance gates (outside the queue) -> LocalQueue -> Ray
objects. The gates need every GPU of the pool at once and prove the hardware the queue's quota
stands for, so they run before the queue admits any Ray work rather than through it: queued,
they would wait behind the very RayCluster they must precede. They still wait for the Kueue
release because its webhooks intercept every Job created in the workload namespace. When a
gate runs again later (its Job replaced), it runs at smoke/gate priority - below training and
never preempting - so it waits for the GPUs instead of evicting a run, and Kueue's topology
scheduler counts its pods on the nodes, so nothing is admitted onto GPUs a gate holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi

from components.queue import JobQueue, JobQueueArgs, KueueOperator, KueueOperatorArgs
from planning.kube import ACCELERATOR_LABEL, GPU_TAINT_KEY
from planning.queue import (
    HEALTH_PRIORITY,
    POOL_LABEL,
    TRAINING_PRIORITY,
    VERIFY_PRIORITY,
    Flavor,
    QueuedPlacement,
    QueuePlan,
    gke_allocatable,
    machine_shape,
    pod_set_annotations,
    reports_topology,
)
from planning.versions import VERSIONS
from program.cluster import Gke
from program.storage import Volumes
from stack_config import StackConfig
from stack_config.queue import pool_gpus, queue_topology

TOPOLOGY = "gke-default"
"""Topology name (the one Google's TAS documentation and Cluster Toolkit use)."""
LOCAL_QUEUE = "nemo-rl"


def plan_queue(cfg: StackConfig) -> QueuePlan:
    """Every Kueue object of the stack, from its config (sizes from the pools' shapes)."""
    gpu, system = cfg.gpu.profile, cfg.cluster.system_pool
    shape = machine_shape(system.machine_type)
    if shape is None:  # StackConfig refuses such a stack when the queue is on
        raise ValueError(f"unknown machine type {system.machine_type}")
    system_cpu, system_memory = gke_allocatable(*shape)
    gpu_cpu, gpu_memory = gke_allocatable(gpu.vcpus, gpu.memory_gb)
    nodes = cfg.gpu.max_nodes
    return QueuePlan(
        namespace=cfg.ray.namespace,
        cluster_queue=cfg.name,
        local_queue=LOCAL_QUEUE,
        topology=TOPOLOGY,
        level=queue_topology(cfg.kueue, cfg.gpu),
        system=Flavor(
            name="system",
            node_labels={POOL_LABEL: "system"},
            tolerations=(),
            topology=None,
            cpu_millis=system.max * system_cpu,
            memory_mib=system.max * system_memory,
            gpus=0,
            rdma_nics=0 if cfg.dranet else None,
        ),
        gpu=Flavor(
            name=f"gpu-{gpu.key}",
            node_labels=cfg.kueue.flavor_labels or {ACCELERATOR_LABEL: gpu.accelerator_type},
            tolerations=({"key": GPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"},),
            topology=TOPOLOGY if reports_topology(gpu) else None,
            cpu_millis=nodes * gpu_cpu,
            memory_mib=nodes * gpu_memory,
            gpus=cfg.kueue.gpu_quota if cfg.kueue.gpu_quota is not None else pool_gpus(cfg.gpu),
            # Every RDMA NIC of the pool: the GPUs' quota is what limits a run.
            rdma_nics=nodes * gpu.rdma_nics if cfg.dranet else None,
        ),
        provisioning=cfg.gpu.capacity == "flex-start",
    )


def build_kueue(cfg: StackConfig, gke: Gke) -> KueueOperator | None:
    """The Kueue release and the PriorityClasses; None when the queue is off."""
    if not cfg.queue_enabled:
        return None
    chart = cfg.kueue.chart_path or VERSIONS.kueue_chart_repo.value
    return KueueOperator(
        "kueue",
        KueueOperatorArgs(
            chart=chart,
            chart_version=VERSIONS.kueue_chart.value,
            image=VERSIONS.kueue_image.value,
            workload_namespace=cfg.ray.namespace,
            priority_classes=(
                TRAINING_PRIORITY,
                VERIFY_PRIORITY,
                *([HEALTH_PRIORITY] if cfg.health_checks else []),
            ),
            node_selector=gke.system_pool.node_selector,
            dranet=cfg.dranet,
            batch_jobs=bool(cfg.health_checks),
        ),
        opts=gke.k8s_opts,
    )


@dataclass(frozen=True)
class Queue:
    """The queue the Ray objects go through."""

    operator: KueueOperator
    queue: JobQueue
    placement: QueuedPlacement

    @property
    def ready(self) -> list[pulumi.Resource]:
        """What a queued object waits for: the LocalQueue, and the PriorityClasses its pods use."""
        return [self.queue.entry, *self.operator.priority_classes.values()]


def build_job_queue(
    cfg: StackConfig,
    gke: Gke,
    volumes: Volumes,
    operator: KueueOperator | None,
    open_after: Sequence[pulumi.Resource] = (),
) -> Queue | None:
    """Topology, flavors, ClusterQueue and the LocalQueue (opened after `open_after`)."""
    if operator is None:
        return None
    plan = plan_queue(cfg)
    queue = JobQueue(
        "queue",
        JobQueueArgs(
            plan=plan,
            operator=operator,
            open_after=[volumes.identity, *open_after],
        ),
        opts=gke.k8s_opts,
    )
    return Queue(
        operator=operator,
        queue=queue,
        placement=QueuedPlacement(
            local_queue=plan.local_queue,
            # A flavor without a topology takes only unannotated pod sets.
            worker_annotations=pod_set_annotations(plan.level) if plan.gpu.topology else {},
        ),
    )
