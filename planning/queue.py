"""Pure planning of the job queue: Kueue with topology-aware scheduling (TAS).

Kueue decides when a Ray workload may start: a RayCluster or a RayJob that brings its own
cluster is one Kueue Workload whose pods are created only once the whole of it fits, inside
one domain of the reservation's topology (sub-block by default). This module derives every
Kueue object of a stack from plain values (the stack config is read by program.queue):
the Topology with GKE's levels, a non-TAS flavor for the Ray head on the system pool, a TAS
flavor for the GPU pool, one ClusterQueue covering cpu, memory and nvidia.com/gpu, the
LocalQueue of the workload namespace, the PriorityClasses, the manager configuration given
to the Helm chart, and on flex-start pools the ProvisioningRequest admission check.

Only Kueue's `v1beta2` API is written (v1beta1 stops being served in 0.20).
Facts: ../shared/reference/kueue-facts.md (Kueue v0.19.2, Cluster Toolkit v1.95.0).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import yaml

from planning.catalog import GpuProfile
from planning.kube import ACCELERATOR_LABEL
from planning.rdma import KUEUE_RDMA_RESOURCE, kueue_device_mappings

KUEUE_API: Final = "kueue.x-k8s.io/v1beta2"
QUEUE_LABEL: Final = "kueue.x-k8s.io/queue-name"
"""Label that puts a RayCluster or RayJob into a LocalQueue of its namespace."""
REQUIRED_TOPOLOGY: Final = "kueue.x-k8s.io/podset-required-topology"
UNCONSTRAINED_TOPOLOGY: Final = "kueue.x-k8s.io/podset-unconstrained-topology"

BLOCK_LABEL: Final = "cloud.google.com/gce-topology-block"
SUBBLOCK_LABEL: Final = "cloud.google.com/gce-topology-subblock"
HOST_LABEL: Final = "cloud.google.com/gce-topology-host"
HOSTNAME_LABEL: Final = "kubernetes.io/hostname"
TOPOLOGY_LEVELS: Final[tuple[str, ...]] = (BLOCK_LABEL, SUBBLOCK_LABEL, HOST_LABEL, HOSTNAME_LABEL)
"""GKE's node labels for the reserved capacity's physical topology, widest first (A4 / A3
Ultra nodes carry them; Cluster Toolkit's gke-a4 and gke-a3-ultragpu Topology uses the same
four levels in this order)."""

TopologyLevel = Literal["subblock", "block", "none"]
LEVEL_LABELS: Final[dict[TopologyLevel, str]] = {"subblock": SUBBLOCK_LABEL, "block": BLOCK_LABEL}

PROVISIONING_CONTROLLER: Final = "kueue.x-k8s.io/provisioning-request"
QUEUED_PROVISIONING_CLASS: Final = "queued-provisioning.gke.io"
"""GKE's ProvisioningRequest class for flex-start with queued provisioning (DWS)."""
GPU_RESOURCE: Final = "nvidia.com/gpu"
COVERED_RESOURCES: Final[tuple[str, ...]] = ("cpu", "memory", GPU_RESOURCE)
"""Every resource the Ray pods ask for. A GPU-only queue never admits a RayJob: its head asks
for cpu and memory only, which the queue would not cover (kueue-facts §4, measured)."""

POOL_LABEL: Final = "nemo-rl-gke/pool"
"""Node label the program puts on each pool's nodes (components.gpu_pool.node_pools)."""
NODEPOOL_LABEL: Final = "cloud.google.com/gke-nodepool"
INSTANCE_TYPE_LABEL: Final = "node.kubernetes.io/instance-type"


def gpu_pool_node_labels(gpu: GpuProfile) -> dict[str, str]:
    """Labels every node of the GPU pool carries: the program's own pool label, and what GKE
    sets on every node (accelerator, node pool `gpu-<type>`, machine type)."""
    return {
        POOL_LABEL: "gpu",
        ACCELERATOR_LABEL: gpu.accelerator_type,
        NODEPOOL_LABEL: f"gpu-{gpu.key}",
        INSTANCE_TYPE_LABEL: gpu.machine_type,
    }


@dataclass(frozen=True)
class PriorityClassPlan:
    """A Kubernetes PriorityClass: Kueue orders a queue's workloads by it, the scheduler uses
    it for preemption."""

    name: str
    role: str
    """Short role name (logical resource names)."""
    value: int
    preempts: bool
    description: str


TRAINING_PRIORITY: Final = PriorityClassPlan(
    name="nemo-rl-training",
    role="training",
    value=1000,
    preempts=True,
    description="NeMo RL training: the RayCluster and GRPO RayJobs admitted by the queue.",
)
VERIFY_PRIORITY: Final = PriorityClassPlan(
    name="nemo-rl-verify",
    role="gates",
    value=100,
    # A gate that runs again on a platform where a run holds the GPUs must wait for them, never
    # evict the run: lower than training, and never preempting anything itself.
    preempts=False,
    description="Acceptance gates and the GRPO smoke: never preempt training, wait for it.",
)


HEALTH_PRIORITY: Final = PriorityClassPlan(
    name="nemo-rl-health",
    role="health",
    value=50,
    # A scheduled check takes the GPUs only when nothing else wants them: below the gates,
    # never preempting anything itself.
    preempts=False,
    description="Scheduled health checks of the GPU pool: run only on free GPUs, wait for all.",
)


@dataclass(frozen=True)
class Flavor:
    """A ResourceFlavor and the quota the ClusterQueue gives it."""

    name: str
    node_labels: Mapping[str, str]
    tolerations: tuple[Mapping[str, str], ...]
    topology: str | None
    """Topology name for TAS, None for a flavor scheduled without TAS."""
    cpu_millis: int
    memory_mib: int
    gpus: int
    rdma_nics: int | None = None
    """Quota of DRANET RDMA NICs (Kueue's mapped device class); None: the stack claims none."""


@dataclass(frozen=True)
class QueuePlan:
    """Every Kueue object of one stack."""

    namespace: str
    """The workload namespace: its LocalQueue is the only way into the ClusterQueue, and
    Kueue manages (and its job webhooks intercept) Ray objects there only."""
    cluster_queue: str
    local_queue: str
    topology: str
    level: TopologyLevel
    system: Flavor
    gpu: Flavor
    provisioning: bool
    """Flex-start: admit only once GKE's queued provisioning has the nodes (all at once)."""
    priority_classes: tuple[PriorityClassPlan, ...] = (TRAINING_PRIORITY, VERIFY_PRIORITY)
    admission_check: str = "dws-prov"
    provisioning_config: str = "dws-config"
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def gpu_quota(self) -> int:
        """GPUs the queue admits at once (the GPU flavor's nominal quota)."""
        return self.gpu.gpus


GB_PER_VCPU: Final[dict[str, float]] = {"standard": 4, "highmem": 8, "highcpu": 1}
"""Memory per vCPU of Compute Engine's predefined general-purpose shapes (N2, N2D, E2, N1-like);
C3, C3D and C4 high-CPU shapes have 2 GB per vCPU
(https://cloud.google.com/compute/docs/general-purpose-machines). Compute Engine's "GB" of
machine memory are GiB: its machineTypes API answers `memoryMb` in MiB, 131072 for
n2-highmem-16 ("16 vCPUs 128 GB RAM")."""
HIGHCPU_2GB_FAMILIES: Final = frozenset({"c3", "c3d", "c4", "c4d"})
N1_GB_PER_VCPU: Final[dict[str, float]] = {"standard": 3.75, "highmem": 6.5, "highcpu": 0.9}
"""N1's own ratios (n1-highmem-16: memoryMb 106496, "16 vCPUs, 104 GB RAM")."""


def machine_shape(machine_type: str) -> tuple[int, float] | None:
    """(vCPUs, memory GiB) of a predefined `FAMILY-KIND-CPUS` or `FAMILY-custom-CPUS-MB` machine
    type; None for shapes this table does not know."""
    parts = machine_type.split("-")
    if len(parts) == 4 and parts[1] == "custom" and parts[2].isdigit() and parts[3].isdigit():
        return int(parts[2]), int(parts[3]) / 1024
    if len(parts) != 3 or not parts[2].isdigit() or parts[1] not in GB_PER_VCPU:
        return None
    family, kind, cpus = parts[0], parts[1], int(parts[2])
    per_cpu = 2.0 if kind == "highcpu" and family in HIGHCPU_2GB_FAMILIES else GB_PER_VCPU[kind]
    if family == "n1":
        per_cpu = N1_GB_PER_VCPU[kind]
    return cpus, cpus * per_cpu


def gke_allocatable(vcpus: int, memory_gib: float) -> tuple[int, int]:
    """(millicores, MiB) a GKE Standard node of this shape offers pods.

    GKE reserves CPU and memory for the kubelet and the OS, then the kubelet keeps 100 MiB for
    its eviction threshold (https://cloud.google.com/kubernetes-engine/docs/concepts/
    plan-node-sizes#memory_cpu): CPU 6% of the first core, 1% of the second, 0.5% of the next
    two, 0.25% above four; memory 25% of the first 4 GiB, 20% of the next 4, 10% of the next 8,
    6% of the next 112, 2% above 128 GiB. Machine memory is Compute Engine's "GB", which are
    GiB (memoryMb / 1024), as in the catalog.
    """
    cpu_bands = ((1, 0.06), (1, 0.01), (2, 0.005), (math.inf, 0.0025))
    memory_bands = ((4, 0.25), (4, 0.20), (8, 0.10), (112, 0.06), (math.inf, 0.02))

    def reserved(total: float, bands: tuple[tuple[float, float], ...]) -> float:
        left, taken = total, 0.0
        for size, share in bands:
            part = min(left, size)
            taken += part * share
            left -= part
        return taken

    cpu_millis = math.floor((vcpus - reserved(vcpus, cpu_bands)) * 1000)
    memory_mib = math.floor((memory_gib - reserved(memory_gib, memory_bands)) * 1024 - 100)
    return cpu_millis, memory_mib


def pod_set_annotations(level: TopologyLevel) -> dict[str, str]:
    """What a worker group's pod template carries so Kueue places the whole group inside one
    domain of `level` (or anywhere with `none`, which still lets it use the TAS flavor)."""
    if level == "none":
        return {UNCONSTRAINED_TOPOLOGY: "true"}
    return {REQUIRED_TOPOLOGY: LEVEL_LABELS[level]}


def topology_spec() -> dict[str, Any]:
    """The Topology: GKE's levels, widest first."""
    return {"levels": [{"nodeLabel": label} for label in TOPOLOGY_LEVELS]}


def flavor_spec(flavor: Flavor) -> dict[str, Any]:
    """A ResourceFlavor: the pool's node labels, its taints' tolerations, and for the GPU
    flavor the topology (TAS cannot see tolerations added by admission plugins, so the
    flavor carries them; kueue-facts §5)."""
    spec: dict[str, Any] = {"nodeLabels": dict(flavor.node_labels)}
    if flavor.tolerations:
        spec["tolerations"] = [dict(t) for t in flavor.tolerations]
    if flavor.topology is not None:
        spec["topologyName"] = flavor.topology
    return spec


def cpu_quantity(millis: int) -> str:
    """Millicores in the canonical form Kubernetes writes back (`1500m`, `2`)."""
    return str(millis // 1000) if millis % 1000 == 0 else f"{millis}m"


def memory_quantity(mib: int) -> str:
    """MiB in the canonical form Kubernetes writes back: the largest binary suffix that keeps
    an integer (`1536Mi`, `2Gi`, `3Ti`)."""
    value, suffixes = mib, ["Mi", "Gi", "Ti", "Pi"]
    while value and value % 1024 == 0 and len(suffixes) > 1:
        value //= 1024
        suffixes.pop(0)
    return f"{value}{suffixes[0]}"


def _quota(flavor: Flavor) -> dict[str, Any]:
    # Quantities as the canonical strings Kueue's webhook writes back (it re-encodes the whole
    # object through its Go types): anything else reads back different after a refresh and
    # every preview would plan an update (found running the real controller).
    return {
        "name": flavor.name,
        "resources": [
            {"name": "cpu", "nominalQuota": cpu_quantity(flavor.cpu_millis)},
            {"name": "memory", "nominalQuota": memory_quantity(flavor.memory_mib)},
            {"name": GPU_RESOURCE, "nominalQuota": str(flavor.gpus)},
            *(
                [{"name": KUEUE_RDMA_RESOURCE, "nominalQuota": str(flavor.rdma_nics)}]
                if flavor.rdma_nics is not None
                else []
            ),
        ],
    }


def cluster_queue_spec(plan: QueuePlan) -> dict[str, Any]:
    """The ClusterQueue: one resource group over cpu, memory and GPUs with the system flavor
    first (the head has no topology annotation and takes the first flavor that fits; the
    workers are annotated and only fit the TAS flavor), admitting from the workload namespace."""
    spec: dict[str, Any] = {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": plan.namespace}},
        # A multi-node run waiting for a whole sub-block is not overtaken forever by smaller
        # runs that keep taking its nodes: strict order of priority, then arrival.
        "queueingStrategy": "StrictFIFO",
        "resourceGroups": [
            {
                "coveredResources": [
                    *COVERED_RESOURCES,
                    *([KUEUE_RDMA_RESOURCE] if plan.gpu.rdma_nics is not None else []),
                ],
                "flavors": [_quota(plan.system), _quota(plan.gpu)],
            }
        ],
    }
    if plan.provisioning:
        # v1beta2's field; Cluster Toolkit's `spec.admissionChecks` is v1beta1-only and the API
        # server prunes it from a v1beta2 object, so the check would never apply (kueue-facts §6).
        spec["admissionChecksStrategy"] = {
            "admissionChecks": [{"name": plan.admission_check, "onFlavors": [plan.gpu.name]}]
        }
    return spec


def local_queue_spec(plan: QueuePlan) -> dict[str, Any]:
    """The LocalQueue of the workload namespace."""
    return {"clusterQueue": plan.cluster_queue}


def admission_check_spec(plan: QueuePlan) -> dict[str, Any]:
    """The ProvisioningRequest admission check (flex-start pools)."""
    return {
        "controllerName": PROVISIONING_CONTROLLER,
        "parameters": {
            "apiGroup": "kueue.x-k8s.io",
            "kind": "ProvisioningRequestConfig",
            "name": plan.provisioning_config,
        },
    }


def provisioning_config_spec() -> dict[str, Any]:
    """GKE's queued provisioning for the GPUs: one ProvisioningRequest per admitted workload,
    for the pod sets that ask for GPUs; the workload starts once every node is there."""
    return {
        "provisioningClassName": QUEUED_PROVISIONING_CLASS,
        "managedResources": [GPU_RESOURCE],
    }


KUEUE_FEATURE_GATES: Final = {"UnadmittedWorkloadsObservability": True}
"""Feature gates the Configuration turns on (in the Configuration, not the chart's
`controllerManager.featureGates`: Kueue refuses both at once)."""


def queue_status_command(namespace: str, cluster_queue: str) -> str:
    """One command: every run in the queue with its state and Kueue's reason, then the
    pending runs in the order Kueue will admit them (Kueue's visibility API)."""
    condition = '.status.conditions[?(@.type=="QuotaReserved")]'
    columns = ",".join(
        [
            "RUN:.metadata.ownerReferences[0].name",
            "KIND:.metadata.ownerReferences[0].kind",
            "PRIORITY:.spec.priority",
            f"RESERVED:{condition}.status",
            f"REASON:{condition}.reason",
            f"WHY:{condition}.message",
        ]
    )
    return (
        f"kubectl get workloads.kueue.x-k8s.io -n {namespace} -o custom-columns='{columns}'"
        " && kubectl get --raw"
        f" /apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/{cluster_queue}/pendingworkloads"
    )


def manager_config(namespace: str, dranet: bool = False, batch_jobs: bool = False) -> str:
    """Kueue's Configuration for the Helm chart (`managerConfig.controllerManagerConfigYaml`).

    The chart's own defaults, except: Kueue manages the Ray kinds only (the chart's default list
    includes `pod`, whose webhook would then refuse every Pod created anywhere while Kueue is
    down), and only in the workload namespace, which also scopes the job webhooks the chart
    always installs (batch Jobs included, failurePolicy Fail) to that namespace: the KubeRay
    CRD Job and everything outside it never depend on Kueue being up. With DRANET, the RDMA
    device class is mapped to a logical resource the ClusterQueue gives quota to. With
    scheduled health checks Kueue also manages batch Jobs, those labelled with a queue only
    (`manageJobsWithoutQueueName` stays false: the gates' Jobs are left alone).
    """
    config = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "health": {"healthProbeBindAddress": ":8081"},
        "metrics": {"bindAddress": ":8443"},
        "webhook": {"port": 9443},
        "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
        "controller": {
            "groupKindConcurrency": {
                "Workload.kueue.x-k8s.io": 10,
                "LocalQueue.kueue.x-k8s.io": 5,
                "ClusterQueue.kueue.x-k8s.io": 5,
                "ResourceFlavor.kueue.x-k8s.io": 1,
            }
        },
        "clientConnection": {"qps": 300, "burst": 500},
        "managedJobsNamespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
        "integrations": {
            "frameworks": [
                "ray.io/rayjob",
                "ray.io/raycluster",
                *(["batch/job"] if batch_jobs else []),
            ]
        },
        # A waiting run says why (WaitingForQuota, TopologyPlacementFailed, ...) instead of
        # Pending: beta and off by default in 0.19, on in Kueue's main since #13063.
        "featureGates": dict(KUEUE_FEATURE_GATES),
    }
    if dranet:
        config["resources"] = {"deviceClassMappings": kueue_device_mappings()}
    return yaml.safe_dump(config, sort_keys=False)


def helm_values(
    namespace: str,
    image: str,
    node_selector: Mapping[str, str] | None = None,
    dranet: bool = False,
    batch_jobs: bool = False,
) -> dict[str, Any]:
    """Values of the Kueue chart: the pinned image (what the published chart sets), the
    manager configuration above, the controller on the system pool."""
    repository, tag = image.rsplit(":", 1)
    manager: dict[str, Any] = {
        "image": {"repository": repository, "tag": tag, "pullPolicy": "IfNotPresent"}
    }
    values: dict[str, Any] = {
        "controllerManager": {"manager": manager},
        "managerConfig": {
            "controllerManagerConfigYaml": manager_config(namespace, dranet, batch_jobs)
        },
    }
    if node_selector is not None:
        values["controllerManager"]["nodeSelector"] = dict(node_selector)
    return values


def reports_topology(gpu: GpuProfile) -> bool:
    """Whether GKE labels this shape's nodes with the reservation's physical topology: A4 and
    A3 Ultra nodes (the RDMA shapes, sold on reservations with blocks and sub-blocks) carry the
    gce-topology labels (https://cloud.google.com/ai-hypercomputer/docs/workloads/
    schedule-gke-workloads-tas); G2 nodes carry none, so topology-aware placement could never
    place a pod on them."""
    return gpu.rdma_nics > 0


@dataclass(frozen=True)
class QueuedPlacement:
    """How a Ray object goes through the queue: what its metadata and pod templates carry."""

    local_queue: str
    worker_annotations: Mapping[str, str]
    """Topology placement of every worker group (empty when the GPU flavor has no topology)."""
    training_priority: str = TRAINING_PRIORITY.name
    verify_priority: str = VERIFY_PRIORITY.name

    @property
    def labels(self) -> dict[str, str]:
        """Labels of a queued RayCluster or RayJob (Kueue reads them at create)."""
        return {QUEUE_LABEL: self.local_queue}


def queued_cluster_spec(spec: Mapping[str, Any], placement: QueuedPlacement) -> dict[str, Any]:
    """A RayCluster spec as the queue takes it: every pod at training priority, every worker
    group required to land in one topology domain (one PodSet each, admitted with the head as
    one workload), and no in-tree autoscaling (Kueue refuses it on a queued cluster unless the
    workload is elastic, and elastic workloads get no topology placement)."""
    queued = dict(spec)
    queued["enableInTreeAutoscaling"] = False

    def prioritised(template: Mapping[str, Any], annotations: Mapping[str, str]) -> dict[str, Any]:
        metadata = dict(template.get("metadata") or {})
        if annotations:
            metadata["annotations"] = {**(metadata.get("annotations") or {}), **annotations}
        pod = {**dict(template.get("spec") or {}), "priorityClassName": placement.training_priority}
        return {**dict(template), "metadata": metadata, "spec": pod}

    head = dict(queued["headGroupSpec"])
    head["template"] = prioritised(head["template"], {})
    queued["headGroupSpec"] = head
    annotations = placement.worker_annotations
    queued["workerGroupSpecs"] = [
        {**group, "template": prioritised(group["template"], annotations)}
        for group in queued.get("workerGroupSpecs") or []
    ]
    return queued
