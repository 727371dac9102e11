"""Acceptance gates as Kubernetes Jobs that `pulumi up` waits for.

pulumi-kubernetes waits for a Job until it is Complete and fails the update at once when it
fails with BackoffLimitExceeded or DeadlineExceeded, quoting the pod messages (termination
messages among them) its pod watch has delivered by then (provider v4.25.0, pkg/await/job.go
with cloud-ready-checks' job and pod checks). So every gate Job has backoffLimit 0 and an
activeDeadlineSeconds, every gate script ends its container with one verdict line as its
termination message, and a sidecar holds the pod open until that message has been seen
(verdict_holder): a failed gate fails the update with that line.
`pulumi.com/replaceUnready` makes the next `pulumi up` replace a gate Job that did not
complete (a failed gate runs again once the cause is fixed, instead of being waited on
forever); a completed one is left alone until what it proves changes (its name carries a
fingerprint of that, see planning.verify).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.gpu_pool.pod import GPU_CONTAINER_SECURITY, RdmaWiring, gpu_pod_parts
from planning.ray import DATA_DIR, NVIDIA_DIR
from planning.verify import GATE_LABEL, GATE_MOUNT, GatePlan

GATE_DATA = f"{DATA_DIR}/.nemo-rl-gke/verify"
"""Scratch folder of the storage gate on the shared volume (removed after each run)."""
AWAIT_MARGIN_SECONDS = 300
"""pulumi up waits this much longer than a gate's deadline, so the Job's own deadline (and
its message) is what ends a gate that hangs."""
GCSFUSE_ANNOTATION = "gke-gcsfuse/volumes"
MEASURE_SECURITY: dict[str, Any] = {
    # Gates that only read tools and write /tmp (and /data): nothing of the root filesystem
    # and no capability. GPU health also runs as a non-root user (the device plugin's GPU
    # device nodes are world-accessible); the storage gate stays root because /data is
    # owned by root, as for the Ray workers that write there.
    "allowPrivilegeEscalation": False,
    "readOnlyRootFilesystem": True,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}
NON_ROOT = {"runAsNonRoot": True, "runAsUser": 65532, "runAsGroup": 65532}
VERDICT_HOLD_SECONDS = 5
"""How long a gate pod stays Running after its gate container ended (see verdict_holder)."""
VERDICT_HOLDER = "hold-verdict"


def scripts_config_map(
    name: str,
    prefix: str,
    scripts: Mapping[str, str],
    namespace: pulumi.Input[str],
    labels: Mapping[str, str],
    opts: pulumi.ResourceOptions,
) -> k8s.core.v1.ConfigMap:
    """Gate scripts as a ConfigMap named after their content: a Job that is running keeps the
    scripts it started with."""
    digest = hashlib.sha256(json.dumps(dict(scripts), sort_keys=True).encode()).hexdigest()
    return k8s.core.v1.ConfigMap(
        name,
        metadata={"name": f"{prefix}-{digest[:8]}", "namespace": namespace, "labels": labels},
        data=dict(scripts),
        opts=opts,
    )


def verdict_holder(image: str) -> dict[str, Any]:
    """A sidecar that keeps the pod Running for a few seconds after the gate container ended.

    pulumi-kubernetes (v4.25.0 pkg/await/job.go) fails the update as soon as its Job watch
    sees the Job Failed, with the pod messages its separate pod watch has delivered by then. A
    one-container pod fails in the same status update that ends its container, and the Job
    controller marks the Job Failed moments later: the gate's verdict line (the termination
    message) would race the Job's failure. While this sidecar drains (the kubelet stops
    sidecars only after the main container ended), the pod shows the ended gate container
    with its message for a few seconds before the Job can fail, so the order is certain.
    """
    return {
        "name": VERDICT_HOLDER,
        "image": image,
        # A native sidecar: an init container that runs beside the main one.
        "restart_policy": "Always",
        "command": [
            "/bin/sh",
            "-c",
            f"trap 'sleep {VERDICT_HOLD_SECONDS}; exit 0' TERM; while :; do sleep 1; done",
        ],
        "resources": {
            "requests": {"cpu": "10m", "memory": "16Mi"},
            "limits": {"cpu": "100m", "memory": "32Mi"},
        },
        "image_pull_policy": "Always",
        "security_context": {**MEASURE_SECURITY, **NON_ROOT},
    }


@dataclass(frozen=True, kw_only=True)
class VerificationArgs:
    """Inputs of the gates."""

    namespace: pulumi.Input[str]
    service_account: pulumi.Input[str]
    """The workload's account: the storage gate mounts /data as the Ray pods do (Workload
    Identity for the GCS FUSE bucket)."""
    gates: Sequence[GatePlan]
    """In order; each waits for the one before."""
    scripts: Mapping[str, str]
    """verify/gates/*.sh by file name (ConfigMap data)."""
    node_selector: pulumi.Input[Mapping[str, str]]
    """The GPU pool's."""
    tolerations: pulumi.Input[Sequence[Mapping[str, str]]]
    data_claim: pulumi.Input[str]
    data_is_gcsfuse: bool
    rdma: RdmaWiring | None
    after: Sequence[pulumi.Resource] = ()
    """What must exist before the first gate: the GPU networking objects, the /data claim
    (and with the queue, Kueue: its webhooks see every Job created in the namespace)."""
    labels: Mapping[str, str] = field(default_factory=dict)
    priority_class: str | None = None
    """With the queue: smoke/gate priority, below training and never preempting
    (program.queue says why the gates run outside the queue)."""


class PlatformVerification(pulumi.ComponentResource):
    """The gate scripts (a ConfigMap) and one Job per gate, run one after another."""

    jobs: pulumi.Output[dict[str, str]]
    """Gate -> Job name, once each Job has completed (what `make verify` reads)."""
    last: pulumi.Resource | None
    """The last gate's Job: what the Ray workload waits for."""

    def __init__(
        self, name: str, args: VerificationArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("nemo:verify:PlatformVerification", name, None, opts)
        labels = {"app.kubernetes.io/part-of": "nemo-rl-gke", **args.labels}
        scripts = scripts_config_map(
            f"{name}-scripts",
            "verify-gates",
            args.scripts,
            args.namespace,
            labels,
            pulumi.ResourceOptions(parent=self, depends_on=list(args.after)),
        )
        previous: list[pulumi.Resource] = [scripts, *args.after]
        names: dict[str, pulumi.Output[str]] = {}
        self.last = None
        for plan in args.gates:
            service: list[pulumi.Resource] = []
            if plan.peers:
                # Indexed Job pods are named <job>-<index>; with this headless Service as their
                # subdomain they resolve as <job>-<index>.<job>.<namespace>.svc.cluster.local.
                service = [
                    k8s.core.v1.Service(
                        f"{name}-{plan.gate}-peers",
                        metadata={
                            "name": plan.job_name,
                            "namespace": args.namespace,
                            "labels": labels,
                        },
                        spec={
                            "cluster_ip": "None",
                            "publish_not_ready_addresses": True,
                            "selector": {"job-name": plan.job_name},
                            "ports": [{"name": "ssh", "port": 222, "protocol": "TCP"}],
                        },
                        opts=pulumi.ResourceOptions(parent=self, depends_on=previous),
                    )
                ]
            job = k8s.batch.v1.Job(
                f"{name}-{plan.gate}",
                metadata={
                    "name": plan.job_name,
                    "namespace": args.namespace,
                    "labels": {**labels, GATE_LABEL: plan.gate},
                    "annotations": {
                        "pulumi.com/replaceUnready": "true",
                        "nemo-rl-gke/fingerprint": plan.fingerprint,
                    },
                },
                spec=gate_job_spec(args, plan, scripts.metadata.name),
                opts=pulumi.ResourceOptions(
                    parent=self,
                    depends_on=[*previous, *service],
                    custom_timeouts=pulumi.CustomTimeouts(
                        create=f"{plan.timeout_seconds + AWAIT_MARGIN_SECONDS}s",
                        update=f"{plan.timeout_seconds + AWAIT_MARGIN_SECONDS}s",
                    ),
                ),
            )
            names[plan.gate] = job.metadata.name
            previous = [job]
            self.last = job
        self.jobs = pulumi.Output.all(**names).apply(lambda found: dict(found))
        self.register_outputs({"jobs": self.jobs})


def gate_job_spec(
    args: VerificationArgs, plan: GatePlan, scripts: pulumi.Input[str]
) -> dict[str, Any]:
    """The Job spec of one gate (the scheduled health checks start from it too)."""
    parts = gpu_pod_parts(args.rdma if plan.worker_shaped else None)
    annotations: dict[str, Any] = dict(parts.annotations)
    mounts: list[dict[str, Any]] = [
        {"name": "gates", "mountPath": GATE_MOUNT, "readOnly": True},
        *parts.mounts,
    ]
    volumes: list[dict[str, Any]] = [
        {"name": "gates", "configMap": {"name": scripts}},
        *parts.volumes,
    ]
    env: list[dict[str, Any]] = [
        {"name": "GATE_NAME", "value": plan.gate},
        {"name": "GATE_JOB", "value": plan.job_name},
        {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {
            "name": "POD_NAMESPACE",
            "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}},
        },
        *[{"name": k, "value": v} for k, v in plan.env.items()],
    ]
    resources: dict[str, str] = {"cpu": "8", "memory": "32Gi"}
    pod: dict[str, Any] = {}
    # rdma and nccl run as the Ray workers do (root: sshd, ldconfig of the host's driver).
    security: dict[str, Any] = GPU_CONTAINER_SECURITY
    if not plan.worker_shaped:
        security = {**MEASURE_SECURITY, **(NON_ROOT if plan.gate == "gpu-health" else {})}
        mounts.append({"name": "tmp", "mountPath": "/tmp"})  # the pod's own /tmp
        volumes.append({"name": "tmp", "emptyDir": {}})
    if plan.gpus:
        resources["nvidia.com/gpu"] = str(plan.gpus)
    if plan.gate == "gpu-health":
        # nvidia-smi and its library from the host's driver folder, as Google's pods do.
        mounts.append({"name": "nvidia", "mountPath": NVIDIA_DIR, "readOnly": True})
        volumes.append({"name": "nvidia", "hostPath": {"path": "/home/kubernetes/bin/nvidia"}})
        env.append({"name": "LD_LIBRARY_PATH", "value": f"{NVIDIA_DIR}/lib64"})
    if plan.peers:
        pod["subdomain"] = plan.job_name
        env.append(
            {
                "name": "GATE_DOMAIN",
                "value": f"{plan.job_name}.$(POD_NAMESPACE).svc.cluster.local",
            }
        )
    if parts.pod_claims is not None:
        pod["resourceClaims"] = parts.pod_claims  # the RDMA NICs, under DRANET
    if plan.worker_shaped:
        # NCCL exchanges through /dev/shm; the container default of 64 MiB is far too small.
        mounts.append({"name": "dshm", "mountPath": "/dev/shm"})
        volumes.append({"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "64Gi"}})
        resources["memory"] = "96Gi"
    if plan.gate == "storage":
        mounts.append({"name": "data", "mountPath": DATA_DIR})
        volumes.append({"name": "data", "persistentVolumeClaim": {"claimName": args.data_claim}})
        if args.data_is_gcsfuse:
            annotations[GCSFUSE_ANNOTATION] = "true"
        env += [
            {"name": "GATE_DATA", "value": GATE_DATA},
            {
                # The Job's UID: one scratch folder per run of the Job.
                "name": "GATE_RUN_ID",
                "valueFrom": {
                    "fieldRef": {
                        "fieldPath": "metadata.labels['batch.kubernetes.io/controller-uid']"
                    }
                },
            },
        ]
        # No GPU to spread the pods: one per node by anti-affinity.
        pod["affinity"] = {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {"job-name": plan.job_name}},
                        "topologyKey": "kubernetes.io/hostname",
                    }
                ]
            }
        }
    return {
        "completion_mode": "Indexed",
        "completions": plan.nodes,
        "parallelism": plan.nodes,
        # One failed pod fails the gate at once (pulumi-kubernetes stops waiting on
        # BackoffLimitExceeded); a hung gate ends at its deadline (DeadlineExceeded).
        "backoff_limit": 0,
        "active_deadline_seconds": plan.timeout_seconds,
        "template": {
            "metadata": {
                "labels": {GATE_LABEL: plan.gate},
                "annotations": annotations,
            },
            "spec": {
                "restart_policy": "Never",
                "service_account_name": args.service_account,
                "automount_service_account_token": False,
                "security_context": {"seccomp_profile": {"type": "RuntimeDefault"}},
                "node_selector": args.node_selector,
                "tolerations": args.tolerations,
                **({"priority_class_name": args.priority_class} if args.priority_class else {}),
                **pod,
                "init_containers": [verdict_holder(plan.image)],
                "containers": [
                    {
                        "name": "gate",
                        "image": plan.image,
                        "command": [plan.interpreter, f"{GATE_MOUNT}/{plan.script}"],
                        "env": env,
                        "resources": {
                            "requests": resources,
                            "limits": resources,
                            **(
                                {"claims": parts.container_claims} if parts.container_claims else {}
                            ),
                        },
                        "volume_mounts": mounts,
                        # Tags are pinned (planning.versions); Always re-checks the tag's
                        # digest on every run, the layers stay cached on the node.
                        "image_pull_policy": "Always",
                        "security_context": security,
                        "termination_message_path": "/dev/termination-log",
                    }
                ],
                "volumes": volumes,
            },
        },
    }
