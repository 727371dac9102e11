"""KubeRay (Helm release or GKE add-on) and the NeMo RL RayCluster / GRPO RayJob."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pulumi

from components.ray.operator import KubeRayOperator, KubeRayOperatorArgs
from components.ray.workload import RayJobPlan, RayWorkload, RayWorkloadArgs
from planning.ray import KEEP_FAILED_HEAD_MINUTES, GrpoRun, grpo_entrypoint, worker_size
from planning.ray_logs import cluster_log_dir, log_shipping, run_log_dir
from planning.verify import plan_smoke, smoke_script
from planning.verify_job_nccl import plan_job_nccl
from planning.versions import VERSIONS
from program.cluster import Gke
from program.queue import Queue
from program.rdma import Rdma
from program.storage import Volumes
from program.verify import verify_inputs
from stack_config import StackConfig
from stack_config.ray import keeps_failed_head


def keep_failed_seconds(cfg: StackConfig) -> int | None:
    """How long a failed run keeps its own cluster's head; None where the RayJob cannot."""
    if not keeps_failed_head(cfg.ray, cfg.gpu, cfg.queue_enabled):
        return None
    minutes = cfg.ray.job.keep_failed_head_minutes
    return (KEEP_FAILED_HEAD_MINUTES if minutes is None else minutes) * 60


@dataclass(frozen=True)
class RayPlatform:
    """The Ray side of the stack."""

    operator: KubeRayOperator | None
    """None when GKE's Ray add-on is the operator."""
    workload: RayWorkload
    run: GrpoRun
    """The GRPO run (the RayJob's when the job is enabled)."""


def build_ray(
    cfg: StackConfig,
    gke: Gke,
    volumes: Volumes,
    secrets: Mapping[str, pulumi.Output[str]],
    labels: Mapping[str, str],
    rdma: Rdma,
    after: Sequence[pulumi.Resource] = (),
    queue: Queue | None = None,
) -> RayPlatform:
    """Operator first (CRDs), then the RayCluster sized from the GPU catalog; with the queue,
    the RayCluster (and a RayJob that brings its own cluster) go through it."""
    gpu = cfg.gpu.profile
    operator = operator_args = None
    if cfg.ray.operator == "helm":
        operator_args = KubeRayOperatorArgs(
            chart_version=VERSIONS.kuberay_chart.value,
            chart=cfg.ray.chart_path or "kuberay-operator",
            repository=None if cfg.ray.chart_path else VERSIONS.kuberay_helm_repo.value,
            kubectl_image=VERSIONS.kubectl_image.value,
            node_selector=gke.system_pool.node_selector,
        )
        operator = KubeRayOperator("kuberay", operator_args, opts=gke.k8s_opts)
    run = cfg.grpo_run
    autoscaling = cfg.gpu.autoscaling
    shipping = log_shipping(tuple(cfg.ray.ship_logs))
    # Ray's log files of the stack's RayCluster (every run on it) and of a cluster a run brings.
    cluster_logs = cluster_log_dir(cfg.ray.job.runs_dir, cfg.ray.cluster_name)
    own_logs = run_log_dir(run)
    job = None
    annotations = {
        "nemo-rl-gke/run": run.name,
        "nemo-rl-gke/run-id": run.id,
        "nemo-rl-gke/attempt": str(run.attempt),
        "nemo-rl-gke/checkpoint-dir": run.checkpoint_dir,
        "nemo-rl-gke/log-dir": run.log_dir,
        "nemo-rl-gke/gpus": f"{run.nodes}x{run.gpus_per_node}",
    }

    def ray_log_note(folder: str) -> dict[str, str]:
        """Where a RayJob's Ray log files are copied, when they are."""
        return {"nemo-rl-gke/ray-log-dir": folder} if shipping.volume else {}

    if cfg.ray.job.enabled:
        job = RayJobPlan(
            name=run.rayjob_name,
            entrypoint=grpo_entrypoint(run),
            # A pool that scales from zero has no worker when the job starts, and NeMo RL
            # checks the GPUs before it asks for any: the job brings up its own workers.
            own_cluster=autoscaling is not None,
            workers=run.nodes,
            start_deadline_seconds=cfg.ray.job.pre_running_deadline_seconds,
            annotations={**annotations, **ray_log_note(own_logs if autoscaling else cluster_logs)},
            run=run.name,
            ray_log_dir=own_logs,
        )
    # Another run through the queue brings its own cluster: one workload, admitted whole
    # once the GPUs are free (the stack's RayCluster holds them while it exists).
    queued_run = (
        RayJobPlan(
            name=run.rayjob_name,
            entrypoint=grpo_entrypoint(run),
            own_cluster=True,
            workers=run.nodes,
            start_deadline_seconds=cfg.ray.job.pre_running_deadline_seconds,
            annotations={**annotations, **ray_log_note(own_logs)},
            run=run.name,
            ray_log_dir=own_logs,
        )
        if queue is not None
        else None
    )
    settings = cfg.gate_settings
    smoke = (
        plan_smoke(
            run,
            verify_inputs(cfg),
            steps=settings.smoke_steps,
            image=VERSIONS.smoke_gate_image.value,
            timeout_seconds=settings.timeouts.get("grpo-smoke"),
        )
        if settings.grpo_smoke
        else None
    )
    low = autoscaling.min if autoscaling else cfg.gpu.max_nodes
    job_nccl = plan_job_nccl(
        run,
        verify_inputs(cfg),
        settings,
        workers=low,
        image=VERSIONS.smoke_gate_image.value,
        timeout_seconds=settings.timeouts.get("job-nccl"),
    )
    # A queued RayCluster has a fixed size: Kueue admits it whole, and refuses Ray's in-tree
    # autoscaling on a workload with a topology placement.
    high = low if queue is not None else cfg.gpu.max_nodes
    workload = RayWorkload(
        "ray",
        RayWorkloadArgs(
            namespace=volumes.identity.namespace,
            service_account=volumes.identity.service_account,
            cluster_name=cfg.ray.cluster_name,
            image=VERSIONS.nemo_rl_image.value,
            ray_version=VERSIONS.ray_version.value,
            head_cpu=cfg.ray.head.cpu,
            head_memory_gib=cfg.ray.head.memory_gib,
            head_node_selector=gke.system_pool.node_selector,
            worker=worker_size(gpu),
            worker_node_selector=gke.gpu_pool.node_selector,
            worker_tolerations=gke.gpu_pool.tolerations,
            replicas=low,
            min_replicas=low,
            max_replicas=high,
            data_claim=volumes.data_claim,
            data_is_gcsfuse=volumes.gcsfuse,
            rdma=rdma.wiring,
            secrets=secrets,
            job=job,
            smoke=smoke,
            job_nccl=job_nccl,
            smoke_script=smoke_script() if smoke is not None or job_nccl is not None else "",
            operator=[operator] if operator is not None else [],
            labels=labels,
            after=[*after, *(queue.ready if queue is not None else [])],
            queue=queue.placement if queue is not None else None,
            avoid_maintenance=cfg.ray.avoid_maintenance,
            log_shipping=shipping,
            ray_log_dir=cluster_logs,
            keep_failed_seconds=keep_failed_seconds(cfg),
            queued_run=queued_run,
            operator_namespace=operator_args.namespace if operator_args is not None else None,
        ),
        opts=gke.k8s_opts,
    )
    return RayPlatform(operator=operator, workload=workload, run=run)
