"""Which config changes recreate what, and what a user loses: the day-2 table.

Each row names a config key whose change makes the real pulumi-gcp provider replace a
resource (its ForceNew inputs, read from the Terraform google-beta and pulumi-gcp sources),
the engine's cascade to what depends on it, and what is lost with it. The README's table
"config change -> what is recreated -> what a user loses" is this table; the engine tests
check each row against the plan the real engine makes; the program refuses, in a protected
stack, a change that recreates the GPU pool, the Lustre instance or the cluster
(`refusals`).

This is a different fact from what the provider replaces on (`pulumi_offline.gcp_force_new`,
resource by resource, property by property): it is about config keys, the engine's cascade and
what a user loses, and it is what the program itself reads, so it lives in the platform.
preflight's tests plan every row's change with the provider facts and check that it recreates
what the row says. The one rule both need, when a subnet's new range recreates it, is
`planning.network.cidr_shrinks_or_moves`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from planning.naming import PROJECT
from planning.network import cidr_shrinks_or_moves


class Guarded(enum.Enum):
    """What a protected stack never recreates by surprise."""

    GPU_POOL = "the GPU node pool"
    LUSTRE = "the Lustre instance"
    CLUSTER = "the GKE cluster"


def _differs(old: Any, new: Any) -> bool:
    return bool(old != new)


LOSE_JOBS = "running jobs on the GPU nodes"
LOSE_RESERVED = (
    "the reserved VMs until the new pool has them (the old pool is deleted first, which frees"
    " the reservation for it)"
)
LOSE_MOVE = (
    "; but the VMs it frees are in the old reservation, so the new one (or block) must hold the"
    " whole pool: the preview reads it and stops before anything is deleted when it cannot"
)
LOSE_DATA = "every file on Lustre (the new instance is empty: copy data out first)"
LOSE_ALL = "everything: jobs, data on Lustre, reserved capacity, in-cluster state"


@dataclass(frozen=True)
class Row:
    """One config key whose change recreates something."""

    key: str
    """As in `pulumi config set --path`: `nemo-rl-gke:gpu.driverVersion`, `gcp:region`."""
    recreates: tuple[str, ...]
    """What is recreated, in the order the engine goes."""
    guarded: frozenset[Guarded]
    loses: str
    because: str
    """The provider facts behind it (ForceNew inputs, the engine's cascade)."""
    changes: Callable[[Any, Any], bool] = _differs
    """(old value, new value) -> does the change recreate (a grown subnet does not)."""

    @property
    def short_key(self) -> str:
        """The key without the project namespace (`gpu.driverVersion`, `gcp:region`)."""
        return self.key.removeprefix(f"{PROJECT}:")


GATES_RERUN = "acceptance gate Jobs (they run again)"
"""The gates' Jobs are named after what they prove, the pool's capacity, reservation,
placement and type among it (planning.verify): a new name is a new Job."""
STORAGE_GATE_RERUNS = "storage gate Job (it runs again)"
RDMA_GATES_RERUN = "RDMA gate Jobs (RDMA, NCCL and the run's own NCCL run again)"
"""The gates whose pods take the NICs the way the Ray workers do: named after that way."""
LUSTRE_VOLUME = "Lustre PersistentVolume and claim"


def _gpu_pool_row(
    key: str, because: str, extra: str = "", gates: bool = True, rerun: str = GATES_RERUN
) -> Row:
    return Row(
        key=f"{PROJECT}:{key}",
        recreates=("GPU node pool", rerun) if gates else ("GPU node pool",),
        guarded=frozenset({Guarded.GPU_POOL}),
        loses=f"{LOSE_JOBS}; {LOSE_RESERVED}{extra}",
        because=because,
    )


ROWS: tuple[Row, ...] = (
    _gpu_pool_row(
        "gpu.driverVersion",
        "NodePool nodeConfig.guestAccelerators[].gpuDriverInstallationConfig.gpuDriverVersion"
        " is ForceNew",
        "; only with a ray.image of its own: the default NeMo RL image needs CUDA 13.2, so"
        " preflight refuses DEFAULT (exit 2) and LATEST is the one value that passes",
        gates=False,
    ),
    _gpu_pool_row(
        "gpu.capacity",
        "NodePool nodeConfig.reservationAffinity, .spot and .flexStart are ForceNew",
        "; leaving a reservation gives its capacity back",
    ),
    _gpu_pool_row(
        "gpu.reservation",
        "NodePool nodeConfig.reservationAffinity.values is ForceNew",
        LOSE_MOVE,
    ),
    _gpu_pool_row(
        "gpu.reservationProject",
        "NodePool nodeConfig.reservationAffinity.values is ForceNew",
        LOSE_MOVE,
        gates=False,
    ),
    _gpu_pool_row("gpu.placement", "NodePool placementPolicy is a ForceNew block"),
    _gpu_pool_row(
        "network.rdma",
        "NodePool networkConfig.acceleratorNetworkProfile and .additionalNodeNetworkConfigs are"
        " ForceNew; the cluster's enableMultiNetworking changes in place",
        "; the stack's RDMA and gVNIC VPCs and the Network objects are deleted (to dranet) or"
        " created (to multi-network) beside it",
        rerun=RDMA_GATES_RERUN,
    ),
    _gpu_pool_row(
        "gpu.type",
        "NodePool name (gpu-<type>) and nodeConfig.guestAccelerators are ForceNew",
    ),
    Row(
        key=f"{PROJECT}:zone",
        recreates=(
            "Lustre instance",
            "RDMA VPC and its subnets",
            "GPU node pool",
            LUSTRE_VOLUME,
            STORAGE_GATE_RERUNS,
        ),
        guarded=frozenset({Guarded.LUSTRE, Guarded.GPU_POOL}),
        loses=f"{LOSE_DATA}; {LOSE_JOBS}; the reservation, which is zonal (reserve in the new"
        " zone first). Only the system pool's locations move in place (the cluster ignores"
        " nodeLocations). On a stack with RDMA networks it takes two updates (below): in one,"
        " the preview stops naming the key",
        because="Lustre location and the RoCE network's networkProfile (<zone>-vpc-roce) are"
        " ForceNew; the engine then replaces what names the RDMA network (its subnets, the GPU"
        " pool's additional node networks) and the PV whose volume handle names the zone",
    ),
    Row(
        key=f"{PROJECT}:lustre.throughput",
        recreates=("Lustre instance", LUSTRE_VOLUME, STORAGE_GATE_RERUNS),
        guarded=frozenset({Guarded.LUSTRE}),
        loses=LOSE_DATA,
        because="Lustre perUnitStorageThroughput is ForceNew (the new instance is created before"
        " the old one is deleted)",
    ),
    Row(
        key=f"{PROJECT}:lustre.filesystem",
        recreates=("Lustre instance", LUSTRE_VOLUME, STORAGE_GATE_RERUNS),
        guarded=frozenset({Guarded.LUSTRE}),
        loses=LOSE_DATA,
        because="Lustre filesystem is ForceNew",
    ),
    Row(
        key=f"{PROJECT}:network.psaCidr",
        recreates=("Lustre private services range",),
        guarded=frozenset(),
        loses="no data, but the running instance keeps its addresses in the old range, which"
        " the change gives up (GCP may refuse to delete a range in use): move it together with"
        " a new Lustre instance",
        because="GlobalAddress address and prefixLength are ForceNew; the Connection's"
        " reservedPeeringRanges and the LNet firewall's sourceRanges update in place",
    ),
    Row(
        key=f"{PROJECT}:network.primaryCidr",
        recreates=("cluster subnet", "GKE cluster", "both node pools"),
        guarded=frozenset({Guarded.CLUSTER, Guarded.GPU_POOL}),
        loses="everything on the cluster: jobs, reserved capacity, in-cluster state",
        because="a subnet range that shrinks or moves is replaced (CustomizeDiff); the cluster's"
        " subnetwork is ForceNew, so the engine replaces the cluster and with it the pools",
        changes=cidr_shrinks_or_moves,
    ),
    Row(
        key=f"{PROJECT}:network.gvnicCidr",
        recreates=("gVNIC subnet", "GPU node pool"),
        guarded=frozenset({Guarded.GPU_POOL}),
        loses=f"{LOSE_JOBS}; {LOSE_RESERVED}",
        because="a subnet range that shrinks or moves is replaced; the GPU pool's additional"
        " node networks are ForceNew",
        changes=cidr_shrinks_or_moves,
    ),
    Row(
        key=f"{PROJECT}:network.rdmaCidrs",
        recreates=("RDMA subnets", "GPU node pool"),
        guarded=frozenset({Guarded.GPU_POOL}),
        loses=f"{LOSE_JOBS}; {LOSE_RESERVED}",
        because="a subnet range that shrinks or moves is replaced; the GPU pool's additional"
        " node networks are ForceNew",
        changes=cidr_shrinks_or_moves,
    ),
    Row(
        key=f"{PROJECT}:name",
        recreates=("every named resource",),
        guarded=frozenset(Guarded),
        loses=LOSE_ALL,
        because="every GCP name derives from it, and names are ForceNew",
    ),
    Row(
        key="gcp:region",
        recreates=("every regional resource (cluster, pools, subnets, NAT, bucket)",),
        guarded=frozenset(Guarded),
        loses=LOSE_ALL,
        because="location / region is ForceNew on the cluster, pools, subnets and router",
    ),
    Row(
        key="gcp:project",
        recreates=("every resource",),
        guarded=frozenset(Guarded),
        loses=LOSE_ALL,
        because="project is ForceNew on every resource",
    ),
)
"""Config keys whose change recreates something, most common first."""

IN_PLACE: tuple[tuple[str, str], ...] = (
    (f"{PROJECT}:gpu.nodes", "GPU pool nodeCount (the acceptance gates run again)"),
    (f"{PROJECT}:gpu.autoscaling", "GPU pool autoscaling (the acceptance gates run again)"),
    (
        f"{PROJECT}:lustre.capacityGib",
        "Lustre capacityGib, grow only in steps of the tier and never past the threshold it"
        " was created under; a shrink stops the preview (the storage gate runs again)",
    ),
    (f"{PROJECT}:lustre.gkeSupport", "Lustre gkeSupportEnabled, LNet firewall, cluster flag"),
    (
        f"{PROJECT}:cluster.systemPool",
        "system pool autoscaling bounds (initialNodeCount is ignored after creation); its"
        " machineType and disk size also change in place, but GKE recreates every system node"
        " and the Ray head with them (its jobs are lost): the preview stops unless"
        " cluster.systemPool.recreateNodesAs names the new MACHINE/DISKgb",
    ),
    (
        f"{PROJECT}:cluster.minVersion",
        "the control plane's version (GKE upgrades it in place); the pools stay where they are"
        " until cluster.systemPool.version, then gpu.version name a version of the new minor"
        " (the GPU pool's move recreates its nodes and ends the runs on them); a version GKE"
        " does not offer stops the preview (docs/runbook.md, Upgrading GKE)",
    ),
    (f"{PROJECT}:network.mtu", "VPC mtu"),
    (f"{PROJECT}:protect", "deletion protection, Lustre deletionPolicy"),
    (f"{PROJECT}:labels", "labels"),
)
"""Keys people expect to be disruptive that change the resources in place."""

PROTECT_KEY = f"{PROJECT}:protect"


def row(key: str) -> Row:
    """The row of a key (`gpu.zone` or `nemo-rl-gke:zone`); KeyError for an in-place key."""
    for candidate in ROWS:
        if key in (candidate.key, candidate.short_key):
            return candidate
    raise KeyError(key)


@dataclass(frozen=True)
class Change:
    """A config change that recreates something."""

    row: Row
    old: Any
    new: Any


def changes(previous: Mapping[str, Any], current: Mapping[str, Any]) -> Iterator[Change]:
    """Rows whose key changed between two sets of replacement values (short keys)."""
    for candidate in ROWS:
        key = candidate.short_key
        if key not in previous or key not in current:
            continue  # a value the previous deployment did not record: nothing to compare
        old, new = previous[key], current[key]
        if old != new and candidate.changes(old, new):
            yield Change(candidate, old, new)


ON_PURPOSE = (
    "to do it on purpose, lift protection in an update of its own, make the change, then"
    " protect again (docs/runbook.md, Day-2 changes): pulumi config set nemo-rl-gke:protect"
    " false && pulumi config set nemo-rl-gke:protectionLift WHY && pulumi up; then change the"
    " key and pulumi up; then pulumi config set nemo-rl-gke:protect true && pulumi config rm"
    " nemo-rl-gke:protectionLift && pulumi up"
)


def refusal(change: Change) -> str:
    """The message that stops a protected stack's preview, naming the key and the way out."""
    what = " and ".join(g.value for g in sorted(change.row.guarded, key=lambda g: g.name))
    return (
        f"{change.row.key}: changing it from {_shown(change.old)} to {_shown(change.new)}"
        f" recreates {what} ({', '.join(change.row.recreates)}), and this stack is protected"
        f" (nemo-rl-gke:protect: true). A user loses {change.row.loses}. Nothing was changed;"
        f" {ON_PURPOSE}"
    )


def refusals(previous: Mapping[str, Any], current: Mapping[str, Any], protected: bool) -> list[str]:
    """Why a protected stack's update must stop (empty when it may go on)."""
    if not protected:
        return []
    return [refusal(c) for c in changes(previous, current) if c.row.guarded]


def _shown(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return str(value)


def markdown_table() -> str:
    """The README's table: config change -> what is recreated -> what a user loses."""
    lines = ["| Config change | Recreated | What a user loses |", "|---|---|---|"]
    lines += [f"| `{r.short_key}` | {', '.join(r.recreates)} | {r.loses} |" for r in ROWS]
    lines += [
        f"| `{key.removeprefix(f'{PROJECT}:')}` | nothing (in place) | nothing: {what}, in place |"
        for key, what in IN_PLACE
    ]
    return "\n".join(lines)
