"""The NeMo RL workload: token Secret, RayCluster wired for RDMA and storage, GRPO RayJob.

The RayCluster is emitted directly (not through Google's Helm chart, which drops pod
annotations so its workers never get their RDMA NICs; tutorial-facts §11.1).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.gpu_pool.pod import GPU_CONTAINER_SECURITY, RdmaWiring, gpu_pod_parts
from components.verify.smoke import GrpoSmokeGate, JobNcclGate, SmokeGateArgs
from planning.kube import avoid_maintenance_affinity
from planning.queue import QueuedPlacement, queued_cluster_spec
from planning.ray import (
    DASHBOARD_PORT,
    DATA_DIR,
    GIB_RESOURCE,
    HF_HOME,
    OWN_CLUSTER_RETRIES,
    SUCCEEDED_CLUSTER_TTL_SECONDS,
    TOKENS_DIR,
    WANDB_NETRC,
    PodSize,
    dashboard_ingress,
    dashboard_token_command,
    deletion_rules,
    numa_affinity_setup,
    port_forward_command,
    wandb_netrc,
)
from planning.ray_logs import (
    SHIPPER_CONFIG_MAP,
    SHIPPER_SCRIPT,
    LogShipping,
    shipper_container,
    shipper_script,
    shipper_volumes,
)
from planning.verify import RAY_GATE_LABEL, SmokePlan
from planning.verify_job_nccl import JobNcclPlan

RAY_API = "ray.io/v1"
QUEUED_APPLY = {"pulumi.com/patchForce": "true"}
"""On objects Kueue manages: Kueue writes the worker groups when it admits a run (node
selectors, tolerations, topology gates; KubeRay's `workerGroupSpecs` is an atomic list), so a
later change of ours would be refused as a server-side apply conflict with the `kueue` field
manager. Pulumi takes the field back; Kueue then sees a workload that no longer matches the
admitted one, suspends it and admits it again with the new spec (the pods restart on it)."""
TOKEN_SECRET = "nemo-rl-tokens"  # noqa: S105 - the Secret's name, not its content
SECRET_ENV = {"hfToken": "HF_TOKEN", "wandbApiKey": "WANDB_API_KEY"}
"""Stack secret -> environment variable (and Secret key) the NeMo RL scripts read."""
GCSFUSE_ANNOTATION = "gke-gcsfuse/volumes"


def token_data(secrets: Mapping[str, pulumi.Output[str]]) -> dict[str, pulumi.Output[str]]:
    """The token Secret's files: each token under its library's name, and the W&B key also as
    the netrc entry wandb reads (derived Outputs stay secret)."""
    data = {SECRET_ENV[k]: v for k, v in secrets.items() if k in SECRET_ENV}
    if "wandbApiKey" in secrets:
        data[WANDB_NETRC] = secrets["wandbApiKey"].apply(wandb_netrc)
    return data


@dataclass(frozen=True, kw_only=True)
class RayJobPlan:
    """One GRPO run as a RayJob."""

    name: str
    """RayJob name: the run's identity (and attempt)."""
    entrypoint: str
    own_cluster: bool
    """Bring up its own workers (a cluster spec of `workers` GPU workers, deleted when the run
    ends) instead of running on the stack's RayCluster. For pools that scale from zero: NeMo RL
    checks the GPUs before it asks for any, so an idle cluster would never grow for it."""
    workers: int
    """GPU workers the job's own cluster gets (one per node)."""
    start_deadline_seconds: int
    """KubeRay's preRunningDeadlineSeconds: how long the job may take to start running."""
    annotations: Mapping[str, str] = field(default_factory=dict)
    """The run's id, directories and size, for `kubectl get rayjob -o yaml` and preflight."""
    run: str = ""
    """The run's name: the `run` label of its own cluster's Ray log lines in Cloud Logging."""
    ray_log_dir: str | None = None
    """Where its own cluster's pods copy Ray's log files (the run's folder)."""


@dataclass(frozen=True, kw_only=True)
class RayWorkloadArgs:
    """Inputs of the RayCluster and its job."""

    namespace: pulumi.Input[str]
    service_account: pulumi.Input[str]
    cluster_name: str
    image: str
    ray_version: str
    head_cpu: int
    head_memory_gib: int
    head_node_selector: pulumi.Input[Mapping[str, str]]
    worker: PodSize
    worker_node_selector: pulumi.Input[Mapping[str, str]]
    worker_tolerations: pulumi.Input[Sequence[Mapping[str, str]]]
    replicas: int
    min_replicas: int
    max_replicas: int
    data_claim: pulumi.Input[str]
    """PVC mounted at /data (Lustre in production, the GCS FUSE bucket on dev)."""
    keep_failed_seconds: int | None = None
    """How long a failed run's own cluster keeps its head (KubeRay deletionRules); None: the
    cluster goes when the run ends, however it ended."""
    data_is_gcsfuse: bool
    """GCS FUSE volumes need the sidecar annotation on every pod that mounts them."""
    rdma: RdmaWiring | None
    secrets: Mapping[str, pulumi.Output[str]] = field(default_factory=dict)
    """Stack secrets (keys of SECRET_ENV) as secret Outputs."""
    job: RayJobPlan | None = None
    """The GRPO run; None: no RayJob (the default - `pulumi up` never starts training)."""
    operator: Sequence[pulumi.Resource] = ()
    """The KubeRay operator (its CRDs must exist before any Ray object); empty with the GKE
    add-on, which installs them with the cluster."""
    labels: Mapping[str, str] = field(default_factory=dict)
    after: Sequence[pulumi.Resource] = ()
    """What must finish first: the acceptance gates (they need every GPU of the pool, which
    the workers would otherwise hold)."""
    smoke: SmokePlan | None = None
    """The GRPO smoke gate: runs on the RayCluster once it exists; the RayJob waits for it."""
    smoke_script: str = ""
    """verify/gates/grpo_smoke.py (with `smoke` or `job_nccl`)."""
    job_nccl: JobNcclPlan | None = None
    """The job NCCL gate: runs on the RayCluster once it exists, before the smoke; the RayJob
    waits for it."""
    queue: QueuedPlacement | None = None
    """The LocalQueue the RayCluster, and a RayJob that brings its own cluster, go through
    (Kueue admits each as one workload); None without the queue. `after` holds the queue."""
    avoid_maintenance: bool = True
    """Workers never land on a node with host maintenance scheduled (GKE's label)."""
    log_shipping: LogShipping = field(default_factory=lambda: LogShipping(False, False))
    """Where each Ray pod's sidecar sends Ray's own log files; off: no sidecar."""
    ray_log_dir: str | None = None
    """Where the RayCluster's pods copy Ray's log files on /data."""
    queued_run: RayJobPlan | None = None
    """With the queue: a run that brings its own cluster, published as a manifest (never
    created) - how another run is submitted to the queue."""
    operator_namespace: str | None = None
    """Where the KubeRay operator's pods run (the dashboard admits them); None with the GKE
    add-on, whose operator's place Google does not document: the dashboard port stays open
    to the cluster (its token still guards it)."""


class RayWorkload(pulumi.ComponentResource):
    """Token Secret, RayCluster (head on the system pool, one worker per GPU node), a PDB that
    keeps voluntary evictions (node drains) away from a running cluster, the GRPO smoke gate
    when asked for, and the RayJob (after the smoke)."""

    cluster_name: pulumi.Output[str]
    """RayCluster name."""
    head_service: pulumi.Output[str]
    """Head service (`<cluster>-head-svc`): dashboard 8265, GCS 6379, client 10001."""
    port_forward_command: pulumi.Output[str]
    """`kubectl port-forward` to the Ray dashboard."""
    dashboard_token_command: pulumi.Output[str]
    """Prints the dashboard's token (KubeRay's Secret of the RayCluster), for Ray's client."""
    smoke_job: pulumi.Output[str] | None
    """The GRPO smoke gate's Job name once it passed; None without the gate."""
    job_nccl_job: pulumi.Output[str] | None
    """The job NCCL gate's Job name once it passed; None without the gate."""
    queued_run_manifest: pulumi.Output[str] | None
    """With the queue: the RayJob (JSON) of another run of the configured GRPO job, bringing its
    own cluster through the queue; `kubectl create -f` it under a new name (README)."""

    def __init__(
        self, name: str, args: RayWorkloadArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("nemo:apps:RayWorkload", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        labels = {"app.kubernetes.io/part-of": "nemo-rl-gke", **args.labels}

        if args.secrets:
            k8s.core.v1.Secret(
                f"{name}-tokens",
                metadata={"name": TOKEN_SECRET, "namespace": args.namespace, "labels": labels},
                type="Opaque",
                # Values are secret Outputs: Pulumi stores them encrypted and never prints them.
                string_data=token_data(args.secrets),
                opts=child,
            )

        cluster_after: list[pulumi.Resource] = [*args.operator, *args.after]
        if args.log_shipping.on:
            # The log sidecar's program, for every Ray pod of the namespace (a queued run's
            # cluster too).
            cluster_after.append(
                k8s.core.v1.ConfigMap(
                    f"{name}-log-shipper",
                    metadata={
                        "name": SHIPPER_CONFIG_MAP,
                        "namespace": args.namespace,
                        "labels": labels,
                    },
                    data={SHIPPER_SCRIPT: shipper_script()},
                    opts=child,
                )
            )
        spec = self._cluster_spec(args, log_dir=args.ray_log_dir)
        queued = args.queue.labels if args.queue is not None else {}
        if args.queue is not None:
            spec = queued_cluster_spec(spec, args.queue)
        ray_cluster = k8s.apiextensions.CustomResource(
            f"{name}-cluster",
            api_version=RAY_API,
            kind="RayCluster",
            metadata={
                "name": args.cluster_name,
                "namespace": args.namespace,
                "labels": {**labels, **queued},
                **({"annotations": QUEUED_APPLY} if args.queue is not None else {}),
            },
            spec=spec,
            opts=pulumi.ResourceOptions(parent=self, depends_on=cluster_after),
        )
        # Ray's pods talk among themselves on every port; from elsewhere only the dashboard,
        # and only for the KubeRay operator (it submits the RayJob and reads its status) and
        # the smoke gate. Users come through a port-forward, which the policy does not see.
        k8s.networking.v1.NetworkPolicy(
            f"{name}-ingress",
            metadata={"name": f"{args.cluster_name}-ingress", "namespace": args.namespace},
            spec=dashboard_ingress(args.operator_namespace, {RAY_GATE_LABEL: "true"}),
            opts=child,
        )
        # Drains (node upgrades, repairs, autoscaler scale-down) are voluntary evictions; with
        # no disruption allowed they wait for the run instead of killing it.
        k8s.policy.v1.PodDisruptionBudget(
            f"{name}-pdb",
            metadata={"name": f"{args.cluster_name}-no-disruption", "namespace": args.namespace},
            spec={
                "max_unavailable": 0,
                "selector": {"match_labels": {"ray.io/cluster": args.cluster_name}},
            },
            opts=child,
        )
        head_service = f"{args.cluster_name}-head-svc"
        job_after: list[pulumi.Resource] = [ray_cluster]
        self.smoke_job = None
        self.job_nccl_job = None
        # The Ray job gates hold the workers' GPUs: one after the other, then the RayJob.
        if args.job_nccl is not None:
            job_nccl = JobNcclGate(
                f"{name}-job-nccl",
                self._gate_args(args, args.job_nccl, head_service, [ray_cluster]),
                opts=child,
            )
            self.job_nccl_job = job_nccl.job_name
            job_after.append(job_nccl.job)
        if args.smoke is not None:
            smoke = GrpoSmokeGate(
                f"{name}-smoke",
                self._gate_args(args, args.smoke, head_service, list(job_after)),
                opts=child,
            )
            self.smoke_job = smoke.job_name
            job_after.append(smoke.job)
        if args.job is not None:
            job = args.job
            job_labels, job_spec = self._job_spec(args, job, labels)
            k8s.apiextensions.CustomResource(
                f"{name}-job",
                api_version=RAY_API,
                kind="RayJob",
                metadata={
                    "name": job.name,
                    "namespace": args.namespace,
                    "labels": job_labels,
                    "annotations": {
                        **job.annotations,
                        **(QUEUED_APPLY if "rayClusterSpec" in job_spec and args.queue else {}),
                    },
                },
                spec=job_spec,
                opts=pulumi.ResourceOptions(parent=self, depends_on=job_after),
            )
        self.queued_run_manifest = None
        if args.queued_run is not None and args.queue is not None:
            run = args.queued_run
            run_labels, run_spec = self._job_spec(args, run, labels)
            manifest = {
                "apiVersion": RAY_API,
                "kind": "RayJob",
                "metadata": {
                    "name": run.name,
                    "namespace": args.namespace,
                    "labels": run_labels,
                    "annotations": dict(run.annotations),
                },
                "spec": run_spec,
            }
            self.queued_run_manifest = pulumi.Output.from_input(manifest).apply(
                lambda m: json.dumps(m, indent=2)
            )

        self.cluster_name = pulumi.Output.from_input(args.cluster_name)
        self.head_service = ray_cluster.urn.apply(lambda _: head_service)
        self.port_forward_command = pulumi.Output.from_input(args.namespace).apply(
            lambda ns: port_forward_command(ns, head_service)
        )
        self.dashboard_token_command = pulumi.Output.from_input(args.namespace).apply(
            lambda ns: dashboard_token_command(ns, args.cluster_name)
        )
        self.register_outputs(
            {
                "cluster_name": self.cluster_name,
                "head_service": self.head_service,
                "port_forward_command": self.port_forward_command,
                "dashboard_token_command": self.dashboard_token_command,
                "smoke_job": self.smoke_job,
                "job_nccl_job": self.job_nccl_job,
                "queued_run_manifest": self.queued_run_manifest,
            }
        )

    @classmethod
    def _job_spec(
        cls,
        args: RayWorkloadArgs,
        job: RayJobPlan,
        labels: Mapping[str, str],
    ) -> tuple[dict[str, str], dict[str, Any]]:
        """(labels, spec) of the RayJob of `job`."""
        job_labels = dict(labels)
        job_spec: dict[str, Any] = {
            "entrypoint": job.entrypoint,
            # Submitted over the dashboard's HTTP API: no extra submitter pod pulling
            # the 25 GB image onto the system pool.
            "submissionMode": "HTTPMode",
            # A job that never starts (no capacity for its workers, an image that does not
            # pull) fails and gives its nodes back instead of waiting forever.
            "preRunningDeadlineSeconds": job.start_deadline_seconds,
        }
        if args.rdma is not None:
            # The driver starts on an RDMA worker, in the gIB environment its shell sets up.
            job_spec["entrypointResources"] = json.dumps({GIB_RESOURCE: 1})
        if job.own_cluster:
            job_spec["rayClusterSpec"] = cls._cluster_spec(
                args,
                workers=(job.workers, job.workers, job.workers),
                log_dir=job.ray_log_dir,
                run=job.run,
            )
            if args.queue is not None:
                # Its own cluster makes the run one queued workload, admitted whole.
                job_spec["rayClusterSpec"] = queued_cluster_spec(
                    job_spec["rayClusterSpec"], args.queue
                )
                job_labels.update(args.queue.labels)
            if args.keep_failed_seconds is not None and args.queue is None:
                # The pool goes back to zero when the run ends; a failed run keeps its head
                # (dashboard, Ray's logs) for a post-mortem while its GPU workers go at once.
                job_spec["deletionStrategy"] = {
                    "deletionRules": deletion_rules(args.keep_failed_seconds)
                }
            else:
                # The pool goes back to zero when the run ends: KubeRay deletes the cluster
                # (a queued RayJob must: KubeRay suspends only such a RayJob).
                job_spec["shutdownAfterJobFinishes"] = True
                job_spec["ttlSecondsAfterFinished"] = SUCCEEDED_CLUSTER_TTL_SECONDS
            # A Spot node taken away fails the run; KubeRay then runs it again on a new
            # cluster, and NeMo RL resumes from the newest checkpoint in the run's folder.
            # (KubeRay refuses backoffLimit with clusterSelector: the stack's RayCluster.)
            job_spec["backoffLimit"] = OWN_CLUSTER_RETRIES
        else:
            # Runs inside the RayCluster, which the queue admitted and which holds the
            # quota; never labelled for the queue (Kueue skips a clusterSelector RayJob).
            job_spec["clusterSelector"] = {"ray.io/cluster": args.cluster_name}
        return job_labels, job_spec

    @staticmethod
    def _env() -> list[dict[str, Any]]:
        env: list[dict[str, Any]] = [
            {"name": "HF_HOME", "value": HF_HOME},
            # Ray's OOM killer off, as NeMo RL's Kubernetes guide sets it on head and workers
            # (docs/cluster.md@v0.7.0: false positives kill training and vLLM workers); the
            # pod's memory limit stays the real bound.
            {"name": "RAY_memory_monitor_refresh_ms", "value": "0"},
        ]
        # No token in the environment: a pod's environment is fixed when it starts, and adding
        # a token would change the Ray pods' spec (on a queued stack: re-queue the cluster). The
        # tokens are files of the Secret's volume, which follow the Secret; the driver's script
        # names the files to the libraries (planning.ray.token_files), never their values.
        return env

    @staticmethod
    def _gate_args(
        args: RayWorkloadArgs,
        plan: SmokePlan | JobNcclPlan,
        head_service: str,
        after: Sequence[pulumi.Resource],
    ) -> SmokeGateArgs:
        """A Ray job gate's inputs: it reaches the dashboard with KubeRay's token, from the
        system pool (it takes no GPU itself), at gate priority with the queue."""
        return SmokeGateArgs(
            namespace=args.namespace,
            plan=plan,
            script=args.smoke_script,
            dashboard_service=head_service,
            dashboard_token_secret=args.cluster_name,
            node_selector=args.head_node_selector,
            priority_class=args.queue.verify_priority if args.queue else None,
            after=after,
            labels=args.labels,
        )

    @classmethod
    def _cluster_spec(
        cls,
        args: RayWorkloadArgs,
        workers: tuple[int, int, int] | None = None,
        log_dir: str | None = None,
        run: str = "",
    ) -> dict[str, Any]:
        """The RayCluster spec; `workers` = (replicas, min, max) overrides the stack's sizing;
        its pods copy Ray's log files to `log_dir` and label their lines with `run`."""
        replicas, min_replicas, max_replicas = workers or (
            args.replicas,
            args.min_replicas,
            args.max_replicas,
        )
        env = cls._env()
        pod_annotations: dict[str, Any] = (
            {GCSFUSE_ANNOTATION: "true"} if args.data_is_gcsfuse else {}
        )
        data_volume = {"name": "data", "persistentVolumeClaim": {"claimName": args.data_claim}}
        # The token Secret as files too: they follow the Secret in running pods, where the
        # environment stays what it was at start (planning.ray.token_files). Optional: a stack
        # without tokens has no Secret.
        tokens_volume = {"name": "tokens", "secret": {"secretName": TOKEN_SECRET, "optional": True}}
        tokens_mount = {"name": "tokens", "mountPath": TOKENS_DIR, "readOnly": True}
        # Ray's own log files out of the pod (planning.ray_logs): a native sidecar, first.
        shipping: dict[str, Any] = (
            {"initContainers": [shipper_container(args.image, args.log_shipping, log_dir, run)]}
            if args.log_shipping.on
            else {}
        )
        log_volumes = shipper_volumes() if args.log_shipping.on else []
        head_resources = {"cpu": str(args.head_cpu), "memory": f"{args.head_memory_gib}Gi"}
        head = {
            "serviceType": "ClusterIP",
            # The dashboard listens inside the pod network; the head Service is ClusterIP.
            "rayStartParams": {"dashboard-host": "0.0.0.0"},  # noqa: S104
            "template": {
                "metadata": {"annotations": dict(pod_annotations)},
                "spec": {
                    "serviceAccountName": args.service_account,
                    # Only Ray's autoscaler (a sidecar of the head) talks to the API server.
                    "automountServiceAccountToken": min_replicas != max_replicas,
                    "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                    "nodeSelector": args.head_node_selector,
                    **shipping,
                    "containers": [
                        {
                            "name": "ray-head",
                            "image": args.image,
                            "ports": [
                                {"containerPort": 6379, "name": "gcs-server"},
                                {"containerPort": DASHBOARD_PORT, "name": "dashboard"},
                                {"containerPort": 10001, "name": "client"},
                            ],
                            "env": env,
                            "resources": {"requests": head_resources, "limits": head_resources},
                            "securityContext": GPU_CONTAINER_SECURITY,
                            "terminationMessagePolicy": "FallbackToLogsOnError",
                            "volumeMounts": [
                                {"name": "data", "mountPath": DATA_DIR},
                                {"name": "ray-logs", "mountPath": "/tmp/ray"},
                                tokens_mount,
                            ],
                        }
                    ],
                    "volumes": [
                        data_volume,
                        {"name": "ray-logs", "emptyDir": {}},
                        tokens_volume,
                        *log_volumes,
                    ],
                },
            },
        }

        size = args.worker
        worker_resources = {
            "cpu": str(size.cpu),
            "memory": f"{size.memory_gib}Gi",
            "nvidia.com/gpu": str(size.gpus),
        }
        worker_env = list(env)
        worker_annotations = dict(pod_annotations)
        mounts: list[dict[str, Any]] = [
            {"name": "data", "mountPath": DATA_DIR},
            {"name": "dshm", "mountPath": "/dev/shm"},
            {"name": "ray-logs", "mountPath": "/tmp/ray"},
            tokens_mount,
        ]
        volumes: list[dict[str, Any]] = [
            data_volume,
            # NCCL and vLLM exchange tensors through /dev/shm; the default 64 MiB is far too small.
            {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": f"{size.shm_gib}Gi"}},
            {"name": "ray-logs", "emptyDir": {}},
            tokens_volume,
            *log_volumes,
        ]
        # KubeRay runs the container's args, then `&& ulimit ...; ray start`, in one bash: the
        # environment set here is the one of the raylet and of every Ray process it starts.
        # The image's LD_LIBRARY_PATH (cuDNN for Transformer Engine) is extended, never set.
        # Because `;` binds looser than `&&`, a failed setup step would still start Ray (without
        # gIB): `|| exit 1` ends the container instead, its step named in the termination message.
        parts = gpu_pod_parts(args.rdma)
        setup = f"{parts.setup} && {numa_affinity_setup()} || exit 1"
        worker_annotations.update(parts.annotations)
        mounts += parts.mounts
        volumes += parts.volumes
        # The object store sized with /dev/shm (planning.ray.worker_size).
        ray_start_params = {"object-store-memory": str(size.object_store_bytes)}
        # GPUs declared explicitly (NeMo RL's Kubernetes guide does; KubeRay otherwise derives
        # them from the GPU limit only when it can read every other start parameter), and once
        # per RDMA worker the gIB resource the job's driver asks for (see planning.ray): in the
        # group's typed `resources`, which KubeRay turns into `--num-gpus` and `--resources`
        # itself. (It refuses a group that also sets num-gpus or resources in rayStartParams.)
        group_resources = {"GPU": str(size.gpus)}
        if args.rdma is not None:
            group_resources[GIB_RESOURCE] = "1"
        worker = {
            "groupName": "gpu-workers",
            "replicas": replicas,
            "minReplicas": min_replicas,
            "maxReplicas": max_replicas,
            "rayStartParams": ray_start_params,
            "resources": group_resources,
            "template": {
                "metadata": {"annotations": worker_annotations},
                "spec": {
                    "serviceAccountName": args.service_account,
                    # Workers never call the API server (Workload Identity goes through the
                    # metadata server, GCS FUSE requests its own tokens).
                    "automountServiceAccountToken": False,
                    "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                    "nodeSelector": args.worker_node_selector,
                    **(
                        {"affinity": avoid_maintenance_affinity()} if args.avoid_maintenance else {}
                    ),
                    "tolerations": args.worker_tolerations,
                    # The RDMA NICs, under DRANET: KubeRay passes the template through.
                    **(
                        {"resourceClaims": parts.pod_claims} if parts.pod_claims is not None else {}
                    ),
                    **shipping,
                    "containers": [
                        {
                            "name": "ray-worker",
                            "image": args.image,
                            "args": [setup],
                            "env": worker_env,
                            "resources": {
                                "requests": worker_resources,
                                "limits": worker_resources,
                                **(
                                    {"claims": parts.container_claims}
                                    if parts.container_claims
                                    else {}
                                ),
                            },
                            "volumeMounts": mounts,
                            "securityContext": GPU_CONTAINER_SECURITY,
                            "terminationMessagePolicy": "FallbackToLogsOnError",
                        }
                    ],
                    "volumes": volumes,
                },
            },
        }
        return {
            "rayVersion": args.ray_version,
            # The dashboard takes job submissions (code on the GPU nodes) and serves every
            # actor's runtime env: KubeRay generates a token Secret named after the cluster,
            # gives its pods RAY_AUTH_MODE/RAY_AUTH_TOKEN and sends the token itself; everyone
            # else must present it (planning.ray.dashboard_token_command).
            "authOptions": {"mode": "token"},
            # With an autoscaling GPU pool, Ray asks for workers and GKE adds nodes for them.
            "enableInTreeAutoscaling": min_replicas != max_replicas,
            "headGroupSpec": head,
            "workerGroupSpecs": [worker],
        }
