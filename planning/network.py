"""CIDR planning: pure functions, no Pulumi.

The RDMA network needs one subnet per RoCE NIC, and every GPU node takes one address in the
gVNIC subnet and in each RDMA subnet. The tutorial's /24s (192.168.0.0/24, then 192.168.1.0/24
... 192.168.8.0/24) hold 252 nodes, a quarter of GKE's 1000-node pool. The default plan keeps
the tutorial's shape - the RDMA subnets right after the gVNIC subnet, `consecutive_subnets` -
with /21s (2044 nodes each; Cluster Toolkit splits a /18 into the eight RDMA /21s), so a pool
can grow to its maximum without readdressing. User ranges are checked against the pool size.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from ipaddress import IPv4Network, IPv6Network, collapse_addresses, ip_network
from itertools import combinations
from typing import Any

RDMA_MTU = 8896
"""RoCE VPC MTU recommended by https://docs.cloud.google.com/vpc/docs/rdma-network-profiles."""


def consecutive_subnets(after: IPv4Network, count: int) -> list[IPv4Network]:
    """`count` networks of the same size as `after`, starting right after it.

    Raises ValueError when the plan would run past the end of the IPv4 space.
    """
    if count < 0:
        raise ValueError("count must be >= 0")
    size = after.num_addresses
    start = int(after.network_address) + size
    last = start + count * size - 1
    if last > int(IPv4Network("0.0.0.0/0").broadcast_address):
        raise ValueError(f"{count} subnets of /{after.prefixlen} do not fit after {after}")
    return [IPv4Network((start + i * size, after.prefixlen)) for i in range(count)]


RESERVED_PER_SUBNET = 4
"""Addresses GCP keeps in every subnet's primary range (network, gateway, two at the end)."""
DEFAULT_MAX_PODS_PER_NODE = 110
"""GKE's default for Standard clusters; each node then gets a /24 of the pods range. The
system pool keeps it (the Ray head, KubeRay, GKE's add-ons)."""
GPU_MAX_PODS_PER_NODE = 32
"""A GPU node runs one Ray worker plus GKE's and NVIDIA's daemons (about 15 pods): 32 gives it
a /26 instead of a /24, so the default /14 pods range holds the 1000-node pool with room to
spare instead of 21 nodes. XPK uses 32 for GPU pools; Cluster Toolkit exposes it."""


def usable_addresses(network: IPv4Network) -> int:
    """Nodes a GCP subnet's primary range can hold."""
    return max(0, network.num_addresses - RESERVED_PER_SUBNET)


def prefix_for(nodes: int) -> int:
    """The longest prefix whose subnet holds `nodes` nodes."""
    return 32 - math.ceil(math.log2(nodes + RESERVED_PER_SUBNET))


def pod_range_per_node(max_pods: int = DEFAULT_MAX_PODS_PER_NODE) -> int:
    """Pod addresses GKE reserves per node: the power of two at least twice max pods."""
    return 1 << math.ceil(math.log2(2 * max_pods))


def covers_everything(ranges: Sequence[str]) -> str | None:
    """ "0.0.0.0/0" or "::/0" when `ranges` together cover all of that address space (however
    they are split: 0.0.0.0/1 and 128.0.0.0/1 are the world too), else None. Ranges that are
    not ranges are left to other checks."""
    families: dict[int, list[IPv4Network | IPv6Network]] = {4: [], 6: []}
    for text in ranges:
        try:
            net = ip_network(str(text), strict=False)
        except ValueError:
            continue
        families[net.version].append(net)
    for version, nets in families.items():
        collapsed = list(collapse_addresses(nets))  # type: ignore[type-var]
        if collapsed and collapsed[0].prefixlen == 0:
            return "0.0.0.0/0" if version == 4 else "::/0"
    return None


def overlaps(ranges: Mapping[str, IPv4Network]) -> list[tuple[str, str]]:
    """Every pair of named ranges that share an address, in input order."""
    items = list(ranges.items())
    return [(a, b) for (a, na), (b, nb) in combinations(items, 2) if na.overlaps(nb)]


def duplicates(networks: Sequence[IPv4Network]) -> list[IPv4Network]:
    """Networks that appear more than once, in first-seen order."""
    seen: set[IPv4Network] = set()
    dups: list[IPv4Network] = []
    for net in networks:
        if net in seen and net not in dups:
            dups.append(net)
        seen.add(net)
    return dups


def cidr_shrinks_or_moves(old: Any, new: Any) -> bool:
    """Whether changing a subnet's range from `old` to `new` recreates the subnet.

    GCP can only grow a subnet's primary range in place, so the Terraform provider forces a new
    subnet when the new range lacks the old one's first or last address (google-beta's
    `IsShrinkageIpCidr`, resource_compute_subnetwork.go). A list of ranges (the RDMA subnets,
    one per NIC) is compared element by element, and a list of another length recreates. A
    value that is not a range counts as a move: nothing safer can be said about it.
    """
    olds = old if isinstance(old, list | tuple) else [old]
    news = new if isinstance(new, list | tuple) else [new]
    if len(olds) != len(news):
        return True
    try:
        pairs = [
            (ip_network(str(before), strict=False), ip_network(str(after), strict=False))
            for before, after in zip(olds, news, strict=True)
        ]
    except ValueError:
        return True
    return any(
        not (before.network_address in after and before.broadcast_address in after)
        for before, after in pairs
    )


ZONE_MOVE_STEPS = (
    "move in two updates (docs/runbook.md, Day-2 changes, Moving to another zone): first"
    " remove the GPU"
    ' pool and what runs on it: pulumi destroy -s STACK --target-dependents --target "$(pulumi'
    " stack -s STACK --show-urns | grep -o 'urn:pulumi:[^ ]*::gpu-pool$')\"; then set"
    " nemo-rl-gke:zone (and gpu.reservation to one in the new zone) and pulumi up"
)
"""The documented order: with no GPU pool in the state, the RDMA network is replaced under
nothing and the pool is created in the new zone (the provider's check runs on updates only)."""


def zone_move_problem(old_zone: str, new_zone: str, rdma_pool_running: bool) -> str | None:
    """Why a zone change cannot go in one update, or None when it can.

    The RDMA network's profile names its zone, so the network is replaced and the running GPU
    pool's additional networks are unknown in the preview; the real pulumi-gcp (google-beta's
    nodePoolAcceleratorNetworkProfileCustomizeDiff, run on node-pool updates) panics on that
    ("can't use ElementIterator on unknown value"), however the list is written."""
    if not old_zone or old_zone == new_zone or not rdma_pool_running:
        return None
    return (
        f"moving the stack from {old_zone} to {new_zone} in one update replaces the RDMA network"
        " under the running GPU pool, whose preview the real pulumi-gcp cannot plan (it panics"
        " on the pool's unknown additional networks); the pool, its running jobs and its"
        " reserved VMs would be lost in any case"
    )
