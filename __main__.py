"""nemo-rl-gke: GKE platform for NVIDIA NeMo RL. Wiring only: config -> components -> exports."""

from __future__ import annotations

import pulumi

from planning.health import health_status_command
from planning.naming import base_labels
from planning.queue import queue_status_command
from planning.ray import curves_command, submit_command
from planning.ray_logs import logs_command
from program.apis import build_apis
from program.cluster import build_gke, read_engine_versions
from program.guard import MULTI_NETWORKING, REPLACEMENT_EXPORT, stop_surprise_replacements
from program.health import build_health_checks
from program.network import build_networks
from program.queue import build_job_queue, build_kueue
from program.ray import build_ray
from program.rdma import build_rdma
from program.reservation import check_reservation, gpu_pool_running, live_versions
from program.storage import build_cloud_storage, build_volumes
from program.verify import build_verification
from stack_config import load_stack_config
from stack_config.pulumi_source import current_config_values, current_secret_keys, secret_outputs

# Validate everything before the first resource is registered: a bad stack fails here
# with one message naming the key, and nothing is half-applied.
stack = pulumi.get_stack()
values = current_config_values()
cfg = load_stack_config(values, stack, current_secret_keys(values))
# The reservation the GPU pool names is read now, before anything is planned: a reservation
# that cannot hold the pool stops here, naming gpu.reservation.
check_reservation(cfg)
labels = base_labels(stack, cfg.labels)
# A protected stack never recreates its GPU pool, Lustre or cluster by surprise: compared with
# what this stack's last deployment exported, before anything is registered.
# A zone change under a running RDMA GPU pool stops too (the real provider cannot plan it), and
# so does a GKE version that GKE does not offer in the region (read only when a version changes).
replacement_config = stop_surprise_replacements(
    cfg,
    stack,
    pool_running=lambda: gpu_pool_running(cfg),
    read_versions=lambda: read_engine_versions(cfg),
    read_live_versions=lambda: live_versions(cfg),
)

apis = build_apis(cfg)  # every resource that calls an API waits for it to be on
nets = build_networks(cfg, apis)
# Multi-networking stays as the cluster had it (a switch to DRANET keeps it on, per pool).
gke = build_gke(
    cfg, nets, labels, apis, multi_networking=bool(replacement_config[MULTI_NETWORKING])
)
storage = build_cloud_storage(cfg, nets, gke, labels, apis)  # Lustre beside the cluster
# The claim keeps the size Lustre was created at while the instance grows (program.guard).
volumes = build_volumes(
    cfg, storage, gke, claim_gib=int(replacement_config["lustre.createdCapacityGib"])
)
kueue = build_kueue(cfg, gke)  # the job queue's controller, before any Job in the namespace
# The gates prove GPUs, RDMA, NCCL and /data before the RayCluster takes the GPUs.
rdma = build_rdma(cfg, gke, volumes)  # the NICs' path: Network objects or DRANET claims
verification = build_verification(cfg, gke, volumes, {"stack": stack}, rdma, kueue)
gates = [verification.last] if verification is not None and verification.last else []
queue = build_job_queue(cfg, gke, volumes, kueue, open_after=gates)  # opens after the gates
ray = build_ray(
    cfg, gke, volumes, secret_outputs(), {"stack": stack}, rdma, after=gates, queue=queue
)
# After day one the gates run again on a schedule, through the queue, on free GPUs only.
health = build_health_checks(cfg, gke, volumes, {"stack": stack}, rdma, queue)

pulumi.export(REPLACEMENT_EXPORT, replacement_config)
pulumi.export("clusterName", gke.cluster.name)
pulumi.export("clusterLocation", gke.cluster.location)
pulumi.export("kubeconfig", gke.cluster.kubeconfig)
pulumi.export("getCredentialsCommand", gke.cluster.get_credentials_command)
pulumi.export("gpuNodePool", gke.gpu_pool.pool_name)
pulumi.export("gpuType", cfg.gpu.type)
pulumi.export("additionalNodeNetworks", nets.node_networks)
if gke.gpu_networking is not None:
    pulumi.export("interfacesAnnotation", gke.gpu_networking.interfaces_annotation)
pulumi.export("workloadNamespace", volumes.identity.namespace)
if storage.lustre is not None and volumes.lustre is not None:
    pulumi.export("lustreInstance", storage.lustre.instance_id)
    pulumi.export("lustreClaim", volumes.lustre.claim_name)
if storage.bucket is not None and volumes.bucket is not None:
    pulumi.export("bucketUrl", storage.bucket.url)
    pulumi.export("bucketClaim", volumes.bucket.claim_name)
pulumi.export("rayHeadService", ray.workload.head_service)
pulumi.export("rayDashboardCommand", ray.workload.port_forward_command)
pulumi.export("rayDashboardTokenCommand", ray.workload.dashboard_token_command)
pulumi.export(
    "grpoSubmitCommand",
    ray.workload.dashboard_token_command.apply(lambda token: submit_command(ray.run, token)),
)
pulumi.export(
    "grpoCurvesCommand",
    pulumi.Output.all(volumes.identity.namespace, ray.workload.cluster_name).apply(
        lambda names: curves_command(names[0], names[1], ray.run)
    ),
)
if queue is not None:
    pulumi.export("kueueLocalQueue", queue.queue.local_queue)
    pulumi.export("kueueClusterQueue", queue.queue.cluster_queue)
    # Why each run waits (Kueue's reason) and where it stands in the queue.
    pulumi.export(
        "queueStatusCommand",
        pulumi.Output.all(queue.queue.local_queue, queue.queue.cluster_queue).apply(
            lambda names: queue_status_command(cfg.ray.namespace, names[1])
        ),
    )
    if ray.workload.queued_run_manifest is not None:
        pulumi.export("grpoQueuedRunManifest", ray.workload.queued_run_manifest)
if health is not None:
    pulumi.export("healthChecks", health.cronjobs)
    # Every GPU node's last results and taints.
    pulumi.export("healthStatusCommand", health_status_command(cfg.health_checks))
if "cloudLogging" in cfg.ray.ship_logs:
    # The RayCluster's Ray log lines (every process's, workers' and actors') from Cloud Logging.
    pulumi.export(
        "rayLogsCommand",
        pulumi.Output.all(volumes.identity.namespace, ray.workload.cluster_name).apply(
            lambda names: logs_command(cfg.project, names[0], names[1])
        ),
    )
if cfg.ray.job.enabled:
    pulumi.export("grpoRun", ray.run.name)
    pulumi.export("grpoCheckpointDir", ray.run.checkpoint_dir)
# Gate -> Job name (the GRPO smoke's too): what `make verify` reads.
gate_jobs = [verification.jobs] if verification is not None else []
if ray.workload.job_nccl_job is not None:
    gate_jobs.append(ray.workload.job_nccl_job.apply(lambda job: {"job-nccl": job}))
if ray.workload.smoke_job is not None:
    gate_jobs.append(ray.workload.smoke_job.apply(lambda job: {"grpo-smoke": job}))
if gate_jobs:
    pulumi.export(
        "verifyJobs",
        pulumi.Output.all(*gate_jobs).apply(
            lambda maps: {k: v for m in maps for k, v in m.items()}
        ),
    )
    pulumi.export("verifyCommand", f"make verify STACK={stack}")
