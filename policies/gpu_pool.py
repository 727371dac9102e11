"""GPU topology policies: RoCE network shape, NIC attachments, machine/accelerator agreement."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pulumi_policy import PolicyResource, ResourceValidationArgs

from planning.catalog import (
    GPU_CATALOG,
    extra_gvnic_networks,
    machine_family,
    profile_for_accelerator,
)
from planning.network import RDMA_MTU
from planning.rdma import DRA_DRIVER_LABEL
from planning.resource_types import CLUSTER, NETWORK, NODE_POOL, SUBNETWORK
from planning.versions import VERSIONS, gke_at_least
from policies.base import Config, last_segment, of_type, resource_policy, stack_policy
from policies.firewall import roce_network_names
from policies.props import as_int, get_list, get_map, get_str

ROCE_ZONE = re.compile(r"networkProfiles/([a-z]+-[a-z]+[0-9]+-[a-z])-vpc-roce")
ZONAL_ROCE_PROFILE = re.compile(
    r"(^|/)networkProfiles/[a-z]+-[a-z]+[0-9]+-[a-z]-vpc-roce(-metal)?$"
)

_L4 = GPU_CATALOG["l4"].accelerator_type
# machine type -> (accelerator, GPUs): every G2 size
# (https://cloud.google.com/compute/docs/accelerator-optimized-machines, G2 section), then the
# catalog's rows, which win where both name a machine.
MACHINE_ACCELERATORS: dict[str, tuple[str, int]] = {
    **{f"g2-standard-{n}": (_L4, 1) for n in (4, 8, 12, 16, 32)},
    "g2-standard-24": (_L4, 2),
    "g2-standard-48": (_L4, 4),
    "g2-standard-96": (_L4, 8),
    **{row.machine_type: (row.accelerator_type, row.gpus_per_node) for row in GPU_CATALOG.values()},
}

RESERVATION_ONLY_FAMILIES: list[str] = sorted(
    {
        machine_family(row.machine_type)
        for row in GPU_CATALOG.values()
        if "on-demand" not in row.capacity_types
    }
    | {"a4x-highgpu"}
)
"""Machine families Google does not sell on demand: the catalog's rows without on-demand
capacity (A4, A3 Ultra), plus A4X, which has no catalog row (no stack of this program can ask
for it) but stays listed so that a pool written by hand is judged like A4."""


def _roce_profile(args: ResourceValidationArgs, config: Config) -> Iterator[str]:
    profile = str(args.props.get("networkProfile") or "")
    if "vpc-roce" not in profile:
        return
    if not ZONAL_ROCE_PROFILE.search(profile):
        yield (
            f"uses network profile {profile!r}; RoCE profiles are zonal (<zone>-vpc-roce), a"
            " region is a known tutorial bug"
        )
    mtu = as_int(args.props.get("mtu"))
    if mtu != int(config["mtu"]):
        yield f"has MTU {mtu if mtu is not None else 'unset'}; RoCE networks use {config['mtu']}"


rdma_network_profile = resource_policy(
    name="rdma-network-profile",
    description="RDMA networks use their zone's vpc-roce profile and the RoCE MTU.",
    types=[NETWORK],
    check=_roce_profile,
    remediation=(
        "Set network_profile to projects/<p>/global/networkProfiles/<zone>-vpc-roce (the GPU"
        f" zone) and mtu to {RDMA_MTU}; both are immutable, so the network is replaced."
    ),
    properties={
        "mtu": {"type": "integer", "default": RDMA_MTU, "description": "Required RoCE MTU."}
    },
)


def _accelerator(props: Mapping[str, Any]) -> tuple[str | None, int]:
    accels = get_list(get_map(props, "nodeConfig"), "guestAccelerators")
    if not accels or not isinstance(accels[0], Mapping):
        return None, 0
    return get_str(accels[0], "type"), as_int(accels[0].get("count")) or 0


def _pool_nics(
    resources: Sequence[PolicyResource], config: Config
) -> Iterator[tuple[str, PolicyResource | None]]:
    roce = roce_network_names(resources)
    roce_zones = {
        str(n.props.get("name") or n.name): match.group(1)
        for n in of_type(resources, NETWORK)
        if (match := ROCE_ZONE.search(str(n.props.get("networkProfile") or "")))
    }
    subnets_per_network: dict[str, int] = {}
    for sub in of_type(resources, SUBNETWORK):
        network = last_segment(get_str(sub.props, "network"))
        if network:
            subnets_per_network[network] = subnets_per_network.get(network, 0) + 1
    for pool in of_type(resources, NODE_POOL):
        accel, _ = _accelerator(pool.props)
        row = profile_for_accelerator(accel) if accel else None
        if row is None or not row.rdma_nics or _dranet(pool):
            continue  # a DRANET pool is judged by gpu-pool-dranet
        extra = get_list(get_map(pool.props, "networkConfig"), "additionalNodeNetworkConfigs")
        nets = [last_segment(get_str(e, "network")) for e in extra]
        subs = [last_segment(get_str(e, "subnetwork")) for e in extra]
        configured = config["gvnicNetworks"]
        gvnics = extra_gvnic_networks(row) if configured is None else int(configured)
        expected = gvnics + row.rdma_nics
        if len(extra) != expected:
            yield (
                f"attaches {len(extra)} extra networks; {row.machine_type} needs exactly"
                f" {expected} (gVNIC first, then one per RDMA NIC) - any other network takes a"
                " GPU NIC's slot",
                pool,
            )
            continue
        gvnic, rdma = nets[:gvnics], nets[gvnics:]
        if any(n in roce for n in gvnic):
            yield ("attaches a RoCE network where the gVNIC network belongs (first slot)", pool)
        if len(set(rdma)) != 1 or next(iter(set(rdma))) not in roce:
            found = sorted(set(map(str, rdma)))
            yield (f"RDMA slots must all use one RoCE network, got {found}", pool)
            continue
        rdma_subs = subs[gvnics:]
        if len(set(rdma_subs)) != len(rdma_subs):
            yield ("attaches the same RDMA subnet twice; each NIC needs its own", pool)
        network = next(iter(set(rdma)))
        profile_zone = roce_zones.get(str(network))
        pool_zones = [str(z) for z in get_list(pool.props, "nodeLocations")]
        if profile_zone and pool_zones and set(pool_zones) != {profile_zone}:
            yield (
                f"runs in {', '.join(pool_zones)} but RoCE network {network} is pinned to"
                f" {profile_zone} by its profile; RDMA works only inside that zone",
                pool,
            )
        if network and subnets_per_network.get(network, 0) != row.rdma_nics:
            yield (
                f"RoCE network {network} has {subnets_per_network.get(network, 0)} subnets;"
                f" {row.machine_type} has {row.rdma_nics} RDMA NICs",
                pool,
            )


gpu_pool_nics = stack_policy(
    name="gpu-pool-nics",
    description="An RDMA GPU pool attaches one gVNIC network plus one RoCE subnet per RDMA NIC,"
    " in the RoCE network's zone.",
    check=_pool_nics,
    remediation=(
        "Attach exactly the gVNIC network and the RDMA network's subnets, in NIC order, and"
        " nothing else; keep one RDMA subnet per NIC (network.rdmaCidrs)."
    ),
    properties={
        "gvnicNetworks": {
            "type": ["integer", "null"],
            "default": None,
            "minimum": 0,
            "description": "gVNIC networks expected before the RDMA subnets (null: the GPU"
            " catalog's count for the pool's machine).",
        }
    },
)


def _dranet(pool: PolicyResource) -> bool:
    return bool(get_str(get_map(pool.props, "networkConfig"), "acceleratorNetworkProfile"))


def _pool_dranet(
    resources: Sequence[PolicyResource], config: Config
) -> Iterator[tuple[str, PolicyResource | None]]:
    clusters = list(of_type(resources, CLUSTER))
    floor = str(config["minGkeVersion"])
    for pool in of_type(resources, NODE_POOL):
        if not _dranet(pool):
            continue
        accel, _ = _accelerator(pool.props)
        row = profile_for_accelerator(accel) if accel else None
        if row is None or not row.rdma_nics:
            yield (
                f"asks GKE to manage RDMA networks for {accel or 'no accelerator'}, which has no"
                " RDMA NICs",
                pool,
            )
            continue
        extra = get_list(get_map(pool.props, "networkConfig"), "additionalNodeNetworkConfigs")
        if extra:
            yield (
                f"has acceleratorNetworkProfile and {len(extra)} additional node networks: GKE"
                " manages the NICs itself under DRANET, and Google's docs call DRANET and the"
                " multi-network API mutually exclusive",
                pool,
            )
        labels = get_map(get_map(pool.props, "nodeConfig"), "labels")
        if labels.get(DRA_DRIVER_LABEL) != "true":
            yield (
                f"has acceleratorNetworkProfile but not the node label {DRA_DRIVER_LABEL}=true:"
                " GKE runs its networking DRA driver only on labelled nodes, so no claim is ever"
                " allocated",
                pool,
            )
        for cluster in clusters:
            datapath = get_str(cluster.props, "datapathProvider")
            if datapath is not None and datapath != "ADVANCED_DATAPATH":
                yield (
                    f"is a DRANET pool on cluster {cluster.name} with datapath {datapath};"
                    " managed DRANET needs Dataplane V2 (ADVANCED_DATAPATH)",
                    pool,
                )
            version = get_str(cluster.props, "minMasterVersion")
            if version and not gke_at_least(version, floor):
                yield (
                    f"is a DRANET pool on cluster {cluster.name} at {version}, older than"
                    f" {floor}, the first GKE version that installs the RDMA device class",
                    pool,
                )


gpu_pool_dranet = stack_policy(
    name="gpu-pool-dranet",
    description="A GPU pool on GKE managed DRANET has RDMA NICs, attaches no networks of its"
    " own, is labelled for the DRA driver, and its cluster runs Dataplane V2 at GKE's floor.",
    check=_pool_dranet,
    remediation=(
        "Use network.rdma dranet only for A4 / A3 Ultra pools and remove network.gvnicCidr and"
        " network.rdmaCidrs; keep the cluster on ADVANCED_DATAPATH and cluster.minVersion at or"
        " above the floor."
    ),
    properties={
        "minGkeVersion": {
            "type": "string",
            "default": VERSIONS.gke_min_dranet.value,
            "description": "First GKE version that installs the mrdma.google.com DeviceClass.",
        }
    },
)


def _machine_accelerator(args: ResourceValidationArgs, config: Config) -> Iterator[str]:
    machine = get_str(get_map(args.props, "nodeConfig"), "machineType")
    if machine is None:
        return
    extra = {k: (v["type"], int(v["count"])) for k, v in config["extraMachines"].items()}
    table = {**MACHINE_ACCELERATORS, **extra}
    expected = table.get(machine)
    accel, count = _accelerator(args.props)
    if expected is None:
        return
    if (accel, count) != expected:
        yield (
            f"runs {machine} with {count} x {accel or 'no accelerator'}; that machine carries"
            f" {expected[1]} x {expected[0]}"
        )


gpu_machine_accelerator = resource_policy(
    name="gpu-machine-accelerator",
    description="A GPU pool's machine type, accelerator type and count agree.",
    types=[NODE_POOL],
    check=_machine_accelerator,
    remediation="Take machine type, accelerator and count together from the GPU catalog.",
    properties={
        "extraMachines": {
            "type": "object",
            "default": {},
            "description": "More machine types: {machine: {type, count}}.",
            "additionalProperties": {
                "type": "object",
                "properties": {"type": {"type": "string"}, "count": {"type": "integer"}},
                "required": ["type", "count"],
            },
        }
    },
)


def _capacity_sold(args: ResourceValidationArgs, config: Config) -> Iterator[str]:
    node = get_map(args.props, "nodeConfig")
    machine = get_str(node, "machineType") or ""
    if not any(machine.startswith(f) for f in config["reservationOnlyFamilies"]):
        return
    specific = get_str(get_map(node, "reservationAffinity"), "consumeReservationType") == (
        "SPECIFIC_RESERVATION"
    )
    if not (specific or node.get("spot") is True or node.get("flexStart") is True):
        yield (
            f"asks for {machine} on demand; Google sells it only through a reservation,"
            " flex-start or Spot"
        )


gpu_capacity_sold = resource_policy(
    name="gpu-capacity-sold",
    description="A4 and A3 Ultra pools use a specific reservation, flex-start or Spot capacity.",
    types=[NODE_POOL],
    check=_capacity_sold,
    remediation="Set gpu.capacity to reservation (with gpu.reservation), flex-start or spot.",
    properties={
        "reservationOnlyFamilies": {
            "type": "array",
            "items": {"type": "string"},
            "default": RESERVATION_ONLY_FAMILIES,
            "description": "Machine-type prefixes not sold on demand.",
        }
    },
)


def _compact_single_zone(args: ResourceValidationArgs, _config: Config) -> Iterator[str]:
    if get_str(get_map(args.props, "placementPolicy"), "type") != "COMPACT":
        return
    zones = get_list(args.props, "nodeLocations")
    if len(zones) != 1:
        where = f"{len(zones)} zones" if zones else "every zone of its region"
        yield f"asks for compact placement across {where}; compact placement needs one zone"


compact_placement_single_zone = resource_policy(
    name="compact-placement-single-zone",
    description="Compact placement is used only by node pools in a single zone.",
    types=[NODE_POOL],
    check=_compact_single_zone,
    remediation="Give the pool exactly one node location, or drop the compact placement policy.",
)
