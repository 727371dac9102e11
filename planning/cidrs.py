"""CIDR planning: pure functions, no Pulumi.

The RDMA network needs one subnet per RoCE NIC. The tutorial's layout puts the gVNIC
subnet at 192.168.0.0/24 and the eight RDMA subnets right after it (192.168.1.0/24 ...
192.168.8.0/24); `consecutive_subnets` reproduces that from the gVNIC range so a user who
moves the gVNIC range gets a matching RDMA plan without typing eight CIDRs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from ipaddress import IPv4Network
from itertools import combinations


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
