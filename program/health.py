"""The scheduled health checks of the GPU pool: planned from the stack, run through its queue."""

from __future__ import annotations

from collections.abc import Mapping

from components.health import HealthCheckArgs, HealthChecks
from planning.health import HealthCheckPlan, health_scripts, plan_health_checks
from planning.queue import HEALTH_PRIORITY, UNCONSTRAINED_TOPOLOGY
from planning.verify import gate_scripts
from planning.versions import VERSIONS
from program.cluster import Gke
from program.queue import Queue
from program.rdma import Rdma
from program.storage import Volumes
from program.verify import verification_args, verify_inputs
from stack_config import StackConfig


def plan_checks(cfg: StackConfig) -> list[HealthCheckPlan]:
    """The stack's checks (none without health.schedule)."""
    if not cfg.health_checks or cfg.health.schedule is None:
        return []
    return plan_health_checks(
        verify_inputs(cfg),
        cfg.gate_settings,
        cfg.health_checks,
        cfg.health.schedule,
        cfg.health.time_zone,
    )


def build_health_checks(
    cfg: StackConfig,
    gke: Gke,
    volumes: Volumes,
    labels: Mapping[str, str],
    rdma: Rdma,
    queue: Queue | None,
) -> HealthChecks | None:
    """The checks' CronJobs, after the queue they go through; None when none is scheduled."""
    checks = plan_checks(cfg)
    if not checks or queue is None:
        return None
    pair = dict(queue.placement.worker_annotations)
    # Per-node checks may land anywhere the TAS flavor has a node; the NCCL pair in one domain,
    # as the run's workers do. A flavor without topology takes unannotated pod sets only.
    anywhere = {UNCONSTRAINED_TOPOLOGY: "true"} if pair else {}
    return HealthChecks(
        "health",
        HealthCheckArgs(
            checks=checks,
            gates=verification_args(
                gke, volumes, labels, rdma, scripts=health_scripts(gate_scripts())
            ),
            local_queue=queue.placement.local_queue,
            placement={c.check: pair if c.gate.peers else anywhere for c in checks},
            reporter_image=VERSIONS.smoke_gate_image.value,
            priority_class=HEALTH_PRIORITY.name,
            after=queue.ready,
            labels=labels,
        ),
        opts=gke.k8s_opts,
    )
