"""Typed stack configuration: the user-facing contract of the program.

Plain data parsed from `Pulumi.<stack>.yaml` (no Pulumi Outputs, no secrets). Every model is
frozen and rejects unknown keys, so a typo fails at load time instead of being ignored.
Field aliases are the camelCase keys users write; `gcp:project` and `gcp:region` live in
the provider namespace, everything else under `nemo-rl-gke:`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from datetime import datetime, timedelta
from ipaddress import IPv4Network
from typing import Annotated, Any, Literal, Self, cast

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from planning.catalog import Capacity, GpuProfile, GpuType, extra_gvnic_networks, profile
from planning.cidrs import (
    consecutive_subnets,
    duplicates,
    overlaps,
    pod_range_per_node,
    prefix_for,
    usable_addresses,
)
from planning.lustre_tiers import Throughput, capacity_problem
from planning.naming import (
    BASE_NAME_PATTERN,
    LABEL_KEY_PATTERN,
    LABEL_VALUE_PATTERN,
    Names,
)
from planning.ray import IMAGE_CUDA, GrpoRun, image_tag
from planning.verify import GateSettings
from planning.versions import VERSIONS, gke_at_least
from stack_config.errors import ConfigProblem
from stack_config.local_chart import local_chart_version

MAX_NODES_PER_POOL_ZONE = 1000
"""GKE quota: nodes per node pool per zone (https://cloud.google.com/kubernetes-engine/quotas)."""

RESERVATION_PATTERN = re.compile(
    r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?(/reservationBlocks/[a-z0-9-]+)?$"
)
PROJECT_ID_PATTERN = r"^[a-z][a-z0-9-]{4,28}[a-z0-9]$"
REGION_PATTERN = r"^[a-z]+-[a-z]+[0-9]+$"
ZONE_PATTERN = r"^[a-z]+-[a-z]+[0-9]+-[a-z]$"


def _parse_cidr(value: Any) -> Any:
    """Parse an IPv4 CIDR strictly, with a message that says what to write instead."""
    if isinstance(value, IPv4Network):
        return value
    if not isinstance(value, str):
        raise ConfigProblem((), f"expected a CIDR string such as 10.0.0.0/20, got {value!r}", "")
    try:
        return IPv4Network(value, strict=True)
    except ValueError:
        try:
            loose = IPv4Network(value, strict=False)
        except ValueError:
            raise ConfigProblem(
                (), f"{value!r} is not an IPv4 CIDR", "write it as ADDRESS/PREFIX, e.g. 10.0.0.0/20"
            ) from None
        raise ConfigProblem(
            (), f"{value!r} has host bits set", f"use the network address: {loose}"
        ) from None


Cidr = Annotated[IPv4Network, BeforeValidator(_parse_cidr)]
DriverVersion = Literal["DEFAULT", "LATEST"]


def _check_bounds(low: int, high: int) -> None:
    if low > high:
        raise ConfigProblem(("min",), f"min ({low}) is larger than max ({high})", "make min <= max")


class _Model(BaseModel):
    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
    )


class Autoscaling(_Model):
    """Cluster-autoscaler bounds for the GPU pool, in nodes of the single GPU zone."""

    min: int = Field(0, ge=0, le=MAX_NODES_PER_POOL_ZONE, description="Fewest GPU nodes.")
    max: int = Field(ge=1, le=MAX_NODES_PER_POOL_ZONE, description="Most GPU nodes.")

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        _check_bounds(self.min, self.max)
        return self


class GpuConfig(_Model):
    """The GPU node pool: which GPU, how many nodes, and how the capacity is bought."""

    type: GpuType = Field(description="Key into the GPU catalog: b200, h200 or l4.")
    nodes: int | None = Field(
        None,
        ge=0,
        le=MAX_NODES_PER_POOL_ZONE,
        description="Fixed number of GPU nodes (exclusive with autoscaling).",
    )
    autoscaling: Autoscaling | None = Field(
        None, description="Autoscaling bounds {min, max} (exclusive with nodes)."
    )
    capacity: Capacity = Field(
        description="How the VMs are obtained: reservation, spot, flex-start or on-demand."
    )
    reservation: str | None = Field(
        None,
        description="Reservation NAME or NAME/reservationBlocks/BLOCK; required exactly when"
        " capacity is reservation.",
    )
    reservation_project: str | None = Field(
        None,
        pattern=PROJECT_ID_PATTERN,
        description="Project that owns a shared reservation (omit for the stack's own project).",
    )
    placement: Literal["compact", "none"] = Field(
        "none", description="compact asks GCE to place the nodes close together (single zone)."
    )
    driver_version: DriverVersion = Field(
        cast(DriverVersion, VERSIONS.gpu_driver_version.value),
        description="NVIDIA driver GKE installs: DEFAULT or LATEST for the node version.",
    )

    @property
    def profile(self) -> GpuProfile:
        """The catalog row for this GPU type."""
        return profile(self.type)

    @property
    def max_nodes(self) -> int:
        """Most nodes the pool can have: the fixed size or the autoscaling maximum."""
        if self.autoscaling is not None:
            return self.autoscaling.max
        return self.nodes or 0

    @model_validator(mode="after")
    def _rules(self) -> Self:
        for problem in self._problems():
            raise problem
        return self

    def _problems(self) -> Iterator[ConfigProblem]:
        if (self.nodes is None) == (self.autoscaling is None):
            yield ConfigProblem(
                ("nodes",),
                "set exactly one of nodes (fixed size) or autoscaling {min, max}",
                "keep one of nodes / autoscaling and remove the other",
            )
        if self.capacity == "reservation" and not self.reservation:
            yield ConfigProblem(
                ("reservation",),
                "required when capacity is 'reservation'",
                "pulumi config set --path 'nemo-rl-gke:gpu.reservation' RESERVATION_NAME"
                " (or NAME/reservationBlocks/BLOCK)",
            )
        if self.capacity != "reservation" and self.reservation:
            yield ConfigProblem(
                ("reservation",),
                f"only used with capacity 'reservation' (capacity is '{self.capacity}';"
                " Spot and flex-start VMs cannot consume reservations)",
                "remove gpu.reservation or set gpu.capacity to reservation",
            )
        if self.reservation and not RESERVATION_PATTERN.match(self.reservation):
            yield ConfigProblem(
                ("reservation",),
                f"{self.reservation!r} is not NAME or NAME/reservationBlocks/BLOCK",
                "use the reservation's short name, not a URL (the project goes in"
                " gpu.reservationProject)",
            )
        if self.reservation_project and not self.reservation:
            yield ConfigProblem(
                ("reservationProject",),
                "only used together with gpu.reservation",
                "remove gpu.reservationProject or set gpu.reservation",
            )
        row = self.profile
        if self.capacity not in row.capacity_types:
            sold = ", ".join(sorted(row.capacity_types))
            yield ConfigProblem(
                ("capacity",),
                f"{row.machine_type} is not sold as '{self.capacity}' (available: {sold})",
                f"set gpu.capacity to one of: {sold}",
            )
        if self.placement == "compact" and self.capacity == "reservation":
            yield ConfigProblem(
                ("placement",),
                "compact placement is not used with a reservation: the reservation's blocks already"
                " fix the topology",
                "set gpu.placement to none, or target a block with"
                " gpu.reservation NAME/reservationBlocks/BLOCK",
            )
        if (
            self.placement == "compact"
            and self.capacity == "flex-start"
            and self.type not in ("b200", "h200")
        ):
            yield ConfigProblem(
                ("placement",),
                f"compact placement with flex-start is only offered for A4 and A3 Ultra, not"
                f" {row.machine_type}",
                "set gpu.placement to none",
            )
        if self.capacity == "flex-start" and (
            self.autoscaling is None or self.autoscaling.min != 0
        ):
            yield ConfigProblem(
                ("autoscaling",),
                "flex-start pools must autoscale from 0 (GKE provisions flex-start nodes"
                " on demand)",
                "replace gpu.nodes with gpu.autoscaling {min: 0, max: N}",
            )


class AuthorizedNetwork(_Model):
    """A CIDR allowed to reach the GKE control plane's public endpoint."""

    name: str = Field(min_length=1, max_length=64, description="Display name, e.g. office-vpn.")
    cidr: Cidr = Field(description="Source range, e.g. 203.0.113.0/24.")


class NetworkConfig(_Model):
    """Address plan of the three VPCs and control-plane access."""

    primary_cidr: Cidr = Field(
        IPv4Network("10.0.0.0/20"), description="Cluster subnet (node IPs) in gcp:region."
    )
    pods_cidr: Cidr = Field(IPv4Network("10.4.0.0/14"), description="Pods secondary range.")
    services_cidr: Cidr = Field(
        IPv4Network("10.0.32.0/20"), description="Services secondary range."
    )
    gvnic_cidr: Cidr = Field(
        IPv4Network("192.168.0.0/21"),
        description="gVNIC subnet (second NIC, eth1); one address per GPU node (a /21 holds"
        " 2044, GKE's pool maximum is 1000).",
    )
    rdma_cidrs: list[Cidr] | None = Field(
        None,
        description="One subnet per RDMA NIC; default: consecutive subnets of gvnicCidr's size"
        " after it (192.168.8.0/21 ... 192.168.64.0/21), none for GPUs without RDMA.",
    )
    psa_cidr: Cidr = Field(
        IPv4Network("172.16.0.0/20"),
        description="Private services access range reserved for the Managed Lustre servers"
        " (a /16 to /24; Google's Lustre examples use a /20). Outside 192.168.0.0/16, which GPU"
        " nodes route on their gVNIC and RDMA NICs.",
    )
    mtu: int = Field(
        8896,
        ge=1300,
        le=8896,
        description="MTU of the cluster and gVNIC VPCs; 8896 gives Managed Lustre up to ~10% more"
        " throughput (https://docs.cloud.google.com/managed-lustre/docs/performance).",
    )
    authorized_networks: list[AuthorizedNetwork] = Field(
        default_factory=list,
        description="CIDRs allowed to reach the control plane (list of {name, cidr}).",
    )

    @field_validator("psa_cidr")
    @classmethod
    def _psa_size(cls, value: IPv4Network) -> IPv4Network:
        if not 16 <= value.prefixlen <= 24:
            raise ConfigProblem(
                (),
                f"{value} is a /{value.prefixlen}; a private services range is a /16 to a /24",
                "use e.g. 172.16.0.0/20",
            )
        return value

    @field_validator("authorized_networks")
    @classmethod
    def _unique_names(cls, value: list[AuthorizedNetwork]) -> list[AuthorizedNetwork]:
        names = [n.name for n in value]
        for i, n in enumerate(names):
            if names.index(n) != i:
                raise ConfigProblem(
                    (i, "name"),
                    f"name {n!r} is used twice",
                    "give each authorized network its own name",
                )
        return value


class LustreConfig(_Model):
    """Google Cloud Managed Lustre instance in the GPU zone."""

    enabled: bool = Field(False, description="Create the Managed Lustre instance and its PV/PVC.")
    gke_support: bool = Field(
        False,
        description="Create the instance with GKE support (LNet on port 6988, cluster needs the"
        " legacy Lustre port). Default false: port 988 with nodes at 1.33.2-gke.4780000+, as"
        " Google now recommends.",
    )
    capacity_gib: int = Field(
        18_000, ge=1, description="Capacity in GiB; must fit the throughput tier's min/max/step."
    )
    throughput: Throughput = Field(
        500, description="Performance tier in MB/s per TiB: 125, 250, 500 or 1000."
    )
    filesystem: str = Field(
        "lustrefs",
        pattern=r"^[A-Za-z0-9]{1,8}$",
        description="Lustre file system name: 1-8 letters or digits.",
    )

    @model_validator(mode="after")
    def _tier(self) -> Self:
        problem = capacity_problem(self.throughput, self.capacity_gib)
        if problem is not None:
            raise ConfigProblem(
                ("capacityGib",),
                problem,
                "pick a capacity from the tier table in planning/lustre_tiers.py",
            )
        return self


def _rfc3339(value: str) -> datetime:
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ConfigProblem(
            (), f"{value!r} is not an RFC 3339 time", "write it like 2026-01-03T04:00:00Z"
        ) from None


Rfc3339 = Annotated[str, AfterValidator(lambda v: (_rfc3339(v), v)[1])]


class SystemPoolConfig(_Model):
    """CPU pool for the Ray head, the KubeRay operator and add-ons."""

    machine_type: str = Field(
        "n2-highmem-16",
        pattern=r"^[a-z][a-z0-9]*-[a-z0-9-]+$",
        description="Machine type; the Ray head needs about 12 vCPU / 96 GiB.",
    )
    min: int = Field(1, ge=0, le=100, description="Fewest system nodes.")
    max: int = Field(3, ge=1, le=100, description="Most system nodes.")
    disk_gb: int = Field(
        200, ge=50, le=4000, description="Boot disk size; NeMo RL images are about 25 GB."
    )

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        _check_bounds(self.min, self.max)
        return self


class MaintenanceConfig(_Model):
    """When GKE may maintain the cluster, and which upgrades wait for a quiet moment."""

    window_start: Rfc3339 = Field(
        "2026-01-03T04:00:00Z", description="Start of the recurring window (RFC 3339, UTC)."
    )
    window_end: Rfc3339 = Field(
        "2026-01-03T12:00:00Z", description="End of the first occurrence of the window."
    )
    recurrence: str = Field(
        "FREQ=WEEKLY;BYDAY=SA,SU",
        pattern=r"^FREQ=(DAILY|WEEKLY)(;.*)?$",
        description="RFC 5545 RRULE of the window.",
    )
    block_upgrades: bool = Field(
        True,
        description="Add a maintenance exclusion until end of support so GKE never recreates GPU"
        " nodes mid-run; upgrade on purpose instead.",
    )
    exclusion_scope: Literal["NO_UPGRADES", "NO_MINOR_UPGRADES", "NO_MINOR_OR_NODE_UPGRADES"] = (
        Field("NO_MINOR_OR_NODE_UPGRADES", description="What the exclusion blocks.")
    )
    exclusion_start: Rfc3339 = Field(
        "2026-01-01T00:00:00Z", description="When the exclusion starts (RFC 3339, UTC)."
    )

    @model_validator(mode="after")
    def _window(self) -> Self:
        start, end = _rfc3339(self.window_start), _rfc3339(self.window_end)
        if end - start < timedelta(hours=4):
            raise ConfigProblem(
                ("windowEnd",),
                "the maintenance window must last at least 4 hours",
                "move windowEnd at least 4 hours after windowStart",
            )
        return self


class ClusterConfig(_Model):
    """GKE control plane: version, system pool and maintenance policy."""

    release_channel: Literal["RAPID", "REGULAR", "STABLE", "EXTENDED"] = Field(
        cast(Literal["REGULAR"], VERSIONS.gke_release_channel.value),
        description="GKE release channel.",
    )
    min_version: str = Field(
        VERSIONS.gke_cluster_version.value,
        pattern=r"^\d+\.\d+(\.\d+(-gke\.\d+)?)?$",
        description="Minimum control-plane version (prefix like 1.35 or a full GKE version);"
        " must satisfy the GPU, flex-start and Lustre minimums.",
    )
    system_pool: SystemPoolConfig = Field(
        default_factory=SystemPoolConfig, description="CPU node pool."
    )
    maintenance: MaintenanceConfig = Field(
        default_factory=MaintenanceConfig, description="Maintenance window and exclusion."
    )


class BucketConfig(_Model):
    """GCS bucket mounted with GCS FUSE (dev storage; datasets and exports in production)."""

    enabled: bool = Field(False, description="Create the bucket and its GCS FUSE PV/PVC.")
    name: str | None = Field(
        None,
        pattern=r"^[a-z0-9][a-z0-9_-]{1,61}[a-z0-9]$",
        description="Globally unique bucket name (default <project>-<name>-data).",
    )
    soft_delete_days: int = Field(
        7,
        ge=0,
        le=90,
        description="Soft-delete retention: deleted objects stay recoverable this long (0 = off).",
    )


class HeadConfig(_Model):
    """Ray head pod (on the system pool)."""

    cpu: int = Field(12, ge=1, le=400, description="vCPUs (requests = limits).")
    memory_gib: int = Field(96, ge=4, le=4000, description="Memory in GiB (requests = limits).")


class JobConfig(_Model):
    """The NeMo RL GRPO RayJob on GSM8K. Off unless asked: `pulumi up` never starts training
    by itself."""

    enabled: bool = Field(False, description="Create the RayJob (starts a training run).")
    name: str = Field(
        "grpo-gsm8k",
        pattern=r"^[a-z]([-a-z0-9]{0,45}[a-z0-9])?$",
        description="RayJob name (DNS-1035, at most 47 characters).",
    )
    config: str | None = Field(
        None,
        pattern=r"^examples/configs/[A-Za-z0-9_./-]+\.yaml$",
        description="NeMo RL config inside the image (default from the GPU catalog).",
    )
    model: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$",
        description="Hugging Face model id (default from the GPU catalog).",
    )
    steps: int = Field(10, ge=1, le=1_000_000, description="grpo.max_num_steps.")
    nodes: int | None = Field(
        None,
        ge=1,
        le=MAX_NODES_PER_POOL_ZONE,
        description="cluster.num_nodes (default: GPU nodes).",
    )
    gpus_per_node: int | None = Field(
        None, ge=1, le=8, description="cluster.gpus_per_node (default: the node's GPUs)."
    )
    runs_dir: str = Field(
        "/data/nemo-rl/runs",
        pattern=r"^/data/[A-Za-z0-9_./-]+$",
        description="Folder on the shared volume (/data) holding one directory per run"
        " (<name>-<runId>/checkpoints and /logs).",
    )
    run_id: str | None = Field(
        None,
        pattern=r"^[a-z0-9]([-a-z0-9]{0,8}[a-z0-9])?$",
        description="Pin the run's identity (1-10 of a-z, 0-9, -). Default: a fingerprint of"
        " the image, config, model, steps, nodes and GPUs, so changing any of them starts a new"
        " run; pin it to resume or extend a run from its checkpoints.",
    )
    attempt: int = Field(
        1,
        ge=1,
        le=99,
        description="Attempt of the run: raise it to run the same run id again (KubeRay never"
        " re-runs a finished RayJob); NeMo RL resumes from the run's newest checkpoint.",
    )
    wandb: bool = Field(False, description="Log to Weights & Biases (needs wandbApiKey).")
    wandb_project: str = Field("nemo-rl-gke", description="W&B project when wandb is on.")


class RayConfig(_Model):
    """Ray platform: operator choice, the workload's identity, the RayCluster and the job."""

    operator: Literal["helm", "gke-addon"] = Field(
        "helm",
        description="helm: pinned KubeRay Helm release; gke-addon: GKE's managed Ray operator."
        " Never both.",
    )
    namespace: str = Field(
        "nemo-rl",
        pattern=r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$",
        description="Kubernetes namespace of the RayCluster, its volumes and secrets.",
    )
    service_account: str = Field(
        "generic-ksa",
        pattern=r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$",
        description="Kubernetes service account of the Ray pods (bound through Workload Identity).",
    )
    cluster_name: str = Field(
        "nemo-rl",
        pattern=r"^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$",
        description="RayCluster name; its head service is <clusterName>-head-svc.",
    )
    head: HeadConfig = Field(default_factory=HeadConfig, description="Ray head pod size.")
    job: JobConfig = Field(default_factory=JobConfig, description="GRPO RayJob.")
    chart_path: str | None = Field(
        None,
        description="A local kuberay-operator chart folder or .tgz to install instead of the"
        " public Helm repository (air-gapped installs, the engine test bed). Its version must"
        " be the pinned chart version. Default: the public repository.",
    )

    @field_validator("chart_path")
    @classmethod
    def _chart_is_the_pinned_one(cls, value: str | None) -> str | None:
        if value is None:
            return None
        pinned = VERSIONS.kuberay_chart.value
        found = local_chart_version(value)
        if found is None:
            raise ConfigProblem(
                (),
                f"{value!r} is not a Helm chart (no Chart.yaml)",
                "point ray.chartPath at a kuberay-operator chart folder or .tgz, or remove it",
            )
        if found != pinned:
            raise ConfigProblem(
                (),
                f"the chart at {value} is version {found}, but the pinned KubeRay is {pinned}"
                " (the CRD Job applies that version's CRDs)",
                f"use the kuberay-operator {pinned} chart, or change kuberay_chart in"
                " planning/versions.py",
            )
        return value


Collective = Literal["all_gather", "all_reduce"]
DEFAULT_COLLECTIVES: tuple[Collective, ...] = ("all_gather", "all_reduce")


class GateSwitch(_Model):
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


class VerifyConfig(_Model):
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


class StackConfig(_Model):
    """Everything one stack needs, validated per field and across fields."""

    project: str = Field(
        alias="gcp:project", pattern=PROJECT_ID_PATTERN, description="GCP project."
    )
    region: str = Field(alias="gcp:region", pattern=REGION_PATTERN, description="GCP region.")
    zone: str = Field(
        pattern=ZONE_PATTERN,
        description="GPU zone: RDMA network profile, GPU node locations and Lustre.",
    )
    name: str = Field(
        pattern=BASE_NAME_PATTERN,
        description="Base name of cloud resources (default nemo-rl-<stack>).",
    )
    protect: bool = Field(
        True,
        description="Protect stateful resources (cluster, Lustre, buckets) from deletion.",
    )
    labels: dict[str, str] = Field(
        default_factory=dict, description="Extra labels put on every labelable resource."
    )
    gpu: GpuConfig = Field(description="GPU node pool.")
    network: NetworkConfig = Field(default_factory=NetworkConfig, description="Address plan.")
    lustre: LustreConfig = Field(default_factory=LustreConfig, description="Managed Lustre.")
    cluster: ClusterConfig = Field(default_factory=ClusterConfig, description="GKE cluster.")
    bucket: BucketConfig = Field(default_factory=BucketConfig, description="GCS FUSE bucket.")
    ray: RayConfig = Field(default_factory=RayConfig, description="Ray platform.")
    verify: VerifyConfig = Field(
        default_factory=VerifyConfig, description="Acceptance gates after the platform is up."
    )

    @property
    def names(self) -> Names:
        """GCP names derived from the base name."""
        return Names(self.name)

    @property
    def rdma_cidrs(self) -> list[IPv4Network]:
        """The RDMA subnets: as configured, or planned right after the gVNIC subnet."""
        if self.network.rdma_cidrs is not None:
            return list(self.network.rdma_cidrs)
        return consecutive_subnets(self.network.gvnic_cidr, self.gpu.profile.rdma_nics)

    @property
    def bucket_name(self) -> str:
        """The bucket's name: configured, or `<project>-<name>-data`."""
        return self.bucket.name or f"{self.project}-{self.name}-data"[:63].rstrip("-")

    @property
    def network_profile(self) -> str:
        """The zonal RoCE network profile (the tutorial's region form is a doc bug)."""
        return f"projects/{self.project}/global/networkProfiles/{self.zone}-vpc-roce"

    @field_validator("labels")
    @classmethod
    def _labels(cls, value: dict[str, str]) -> dict[str, str]:
        for key, val in value.items():
            if not re.match(LABEL_KEY_PATTERN, key):
                raise ConfigProblem(
                    (key,),
                    f"label key {key!r} is invalid",
                    "use lower-case letters, digits, _ or -, starting with a letter (max 63)",
                )
            if not re.match(LABEL_VALUE_PATTERN, val):
                raise ConfigProblem(
                    (key,),
                    f"label value {val!r} is invalid",
                    "use lower-case letters, digits, _ or - (max 63)",
                )
        return value

    @model_validator(mode="after")
    def _cross_checks(self) -> Self:
        for problem in self._problems():
            raise problem
        return self

    def _problems(self) -> Iterator[ConfigProblem]:
        zone_region = self.zone.rsplit("-", 1)[0]
        if zone_region != self.region:
            yield ConfigProblem(
                ("zone",),
                f"zone {self.zone} is not in region {self.region}",
                f"pick a zone of {self.region} (e.g. {self.region}-b) or change gcp:region to"
                f" {zone_region}",
            )
        yield from self._version_problems()
        yield from self._ray_problems()
        nics = self.gpu.profile.rdma_nics
        configured = self.network.rdma_cidrs
        if configured is not None and len(configured) != nics:
            yield ConfigProblem(
                ("network", "rdmaCidrs"),
                f"{len(configured)} RDMA CIDRs given but {self.gpu.profile.machine_type} has"
                f" {nics} RDMA NICs (one subnet each)",
                f"list exactly {nics} CIDRs, or remove network.rdmaCidrs to use the default plan",
            )
            return
        try:
            rdma = self.rdma_cidrs
        except ValueError as err:
            yield ConfigProblem(
                ("network", "gvnicCidr"),
                f"the default RDMA plan does not fit: {err}",
                "move network.gvnicCidr or list network.rdmaCidrs explicitly",
            )
            return
        for dup in duplicates(rdma):
            yield ConfigProblem(
                ("network", "rdmaCidrs"),
                f"{dup} is listed twice",
                "give each RDMA NIC its own subnet",
            )
        ranges = {
            "primaryCidr": self.network.primary_cidr,
            "podsCidr": self.network.pods_cidr,
            "servicesCidr": self.network.services_cidr,
            "gvnicCidr": self.network.gvnic_cidr,
        }
        ranges.update({f"rdmaCidrs[{i}]": net for i, net in enumerate(rdma)})
        if self.lustre.enabled:
            ranges["psaCidr"] = self.network.psa_cidr
        for first, second in overlaps(ranges):
            if first.startswith("rdmaCidrs") and second.startswith("rdmaCidrs"):
                continue  # exact duplicates reported above; partial overlaps fall through below
            yield ConfigProblem(
                ("network", second),
                f"{ranges[second]} overlaps network.{first} ({ranges[first]})",
                "choose non-overlapping ranges for primary, pods, services, gVNIC, RDMA and the"
                " Lustre private services range",
            )
        for i, net in enumerate(rdma):
            for j in range(i + 1, len(rdma)):
                if net != rdma[j] and net.overlaps(rdma[j]):
                    yield ConfigProblem(
                        ("network", f"rdmaCidrs[{j}]"),
                        f"{rdma[j]} overlaps network.rdmaCidrs[{i}] ({net})",
                        "give each RDMA NIC a separate subnet",
                    )
        yield from self._capacity_problems(rdma)

    def _capacity_problems(self, rdma: list[IPv4Network]) -> Iterator[ConfigProblem]:
        """Every range must hold the pools at their maximum: GKE stops adding nodes (or pods)
        when a subnet runs out, long after `pulumi up` succeeded."""
        gpu_nodes = self.gpu.max_nodes
        all_nodes = gpu_nodes + self.cluster.system_pool.max
        per_gpu_node: dict[str, IPv4Network] = {}
        if extra_gvnic_networks(self.gpu.profile):
            per_gpu_node["gvnicCidr"] = self.network.gvnic_cidr
        per_gpu_node.update({f"rdmaCidrs[{i}]": net for i, net in enumerate(rdma)})
        for key, net in per_gpu_node.items():
            if usable_addresses(net) < gpu_nodes:
                yield ConfigProblem(
                    ("network", key),
                    f"{net} holds {usable_addresses(net)} GPU nodes, but the GPU pool can scale"
                    f" to {gpu_nodes}",
                    f"use a /{prefix_for(gpu_nodes)} or larger (the default plan's /21s hold"
                    " 2044), or lower gpu.nodes / gpu.autoscaling.max",
                )
        primary = self.network.primary_cidr
        if usable_addresses(primary) < all_nodes:
            yield ConfigProblem(
                ("network", "primaryCidr"),
                f"{primary} holds {usable_addresses(primary)} nodes, but the pools can scale to"
                f" {all_nodes} ({gpu_nodes} GPU + {self.cluster.system_pool.max} system)",
                f"use a /{prefix_for(all_nodes)} or larger",
            )
        pods = self.network.pods_cidr
        needed = all_nodes * pod_range_per_node()
        if pods.num_addresses < needed:
            yield ConfigProblem(
                ("network", "podsCidr"),
                f"{pods} gives {pods.num_addresses // pod_range_per_node()} nodes their pod"
                f" range ({pod_range_per_node()} addresses each for 110 pods), but the pools can"
                f" scale to {all_nodes}",
                f"use a /{32 - math.ceil(math.log2(needed))} or larger",
            )

    @property
    def verify_enabled(self) -> bool:
        """verify.enabled, defaulting to on where the GPUs have RDMA NICs."""
        if self.verify.enabled is not None:
            return self.verify.enabled
        return self.gpu.profile.rdma_nics > 0

    @property
    def gate_settings(self) -> GateSettings:
        """The verify settings as planning.verify takes them (gates off when verify is off)."""
        v, on = self.verify, self.verify_enabled
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

    @property
    def grpo_run(self) -> GrpoRun:
        """The GRPO run the job (or the submit command) starts, defaults resolved."""
        job, row = self.ray.job, self.gpu.profile
        return GrpoRun(
            image=VERSIONS.nemo_rl_image.value,
            config=job.config or row.grpo_config,
            model=job.model or row.grpo_model,
            steps=job.steps,
            nodes=job.nodes or max(1, self.gpu.max_nodes),
            gpus_per_node=job.gpus_per_node or row.gpus_per_node,
            wandb=job.wandb,
            wandb_project=job.wandb_project,
            job=job.name,
            runs_dir=job.runs_dir,
            run_id=job.run_id,
            attempt=job.attempt,
            rdma=bool(row.rdma_nics),
            tuner_config=row.nccl_tuner_config or "",
        )

    def _ray_problems(self) -> Iterator[ConfigProblem]:
        job, row = self.ray.job, self.gpu.profile
        if not (self.lustre.enabled or self.bucket.enabled):
            yield ConfigProblem(
                ("lustre", "enabled"),
                "the Ray pods mount shared storage at /data, and neither Lustre nor the bucket"
                " is enabled",
                "set lustre.enabled (production) or bucket.enabled (dev) to true",
            )
        if job.nodes is not None and job.nodes > self.gpu.max_nodes:
            yield ConfigProblem(
                ("ray", "job", "nodes"),
                f"the job wants {job.nodes} nodes but the GPU pool has at most"
                f" {self.gpu.max_nodes}",
                "lower ray.job.nodes or raise gpu.nodes / gpu.autoscaling.max",
            )
        if job.gpus_per_node is not None and job.gpus_per_node > row.gpus_per_node:
            yield ConfigProblem(
                ("ray", "job", "gpusPerNode"),
                f"{row.machine_type} has {row.gpus_per_node} GPUs, not {job.gpus_per_node}",
                f"set ray.job.gpusPerNode to at most {row.gpus_per_node}",
            )
        autoscaling = self.gpu.autoscaling
        if self.gate_settings.grpo_smoke and autoscaling is not None and autoscaling.min == 0:
            yield ConfigProblem(
                ("verify", "grpoSmoke", "enabled"),
                "the smoke runs on the stack's RayCluster, whose workers start at 0 with"
                " gpu.autoscaling.min 0, and NeMo RL never asks the autoscaler for GPUs",
                "set gpu.autoscaling.min to 1 or more, or turn verify.grpoSmoke off",
            )
        cuda = IMAGE_CUDA.get(image_tag(VERSIONS.nemo_rl_image.value))
        if cuda is not None and cuda[0] >= 13 and self.gpu.driver_version != "LATEST":
            yield ConfigProblem(
                ("gpu", "driverVersion"),
                f"the NeMo RL image runs CUDA {cuda[0]}.{cuda[1]}, which needs an R580-class"
                " driver; GKE's DEFAULT driver may be older",
                "set gpu.driverVersion to LATEST",
            )

    def required_gke_minimums(self) -> dict[str, str]:
        """Every GKE minimum this stack depends on, keyed by the reason."""
        needs = {f"{self.gpu.profile.machine_type} GPUs": self.gpu.profile.min_gke_version}
        if self.gpu.capacity == "flex-start":
            needs["flex-start"] = VERSIONS.gke_min_flex_start.value
        if self.lustre.enabled and not self.lustre.gke_support:
            needs["Lustre on port 988 (no legacy port)"] = VERSIONS.gke_min_lustre_port_988.value
        return needs

    @property
    def legacy_lustre_port(self) -> bool:
        """The cluster's legacy-port flag: on exactly when the instance has GKE support."""
        return self.lustre.enabled and self.lustre.gke_support

    def _version_problems(self) -> Iterator[ConfigProblem]:
        for reason, minimum in self.required_gke_minimums().items():
            if not gke_at_least(self.cluster.min_version, minimum):
                yield ConfigProblem(
                    ("cluster", "minVersion"),
                    f"{self.cluster.min_version} is older than {minimum}, the minimum for {reason}",
                    f"set cluster.minVersion to {minimum} or newer (Google's blueprints use"
                    f" {VERSIONS.gke_cluster_version.value})",
                )


SECRET_KEYS: tuple[str, ...] = ("hfToken", "wandbApiKey")
"""Keys read only as Pulumi secrets, never through StackConfig."""
