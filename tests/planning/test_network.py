"""CIDR planning: table tests plus properties over arbitrary inputs."""

from __future__ import annotations

import itertools
from ipaddress import IPv4Network

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planning.network import cidr_shrinks_or_moves, consecutive_subnets, duplicates, overlaps


def nets(*cidrs: str) -> list[IPv4Network]:
    return [IPv4Network(c) for c in cidrs]


@pytest.mark.parametrize(
    ("after", "count", "expected"),
    [
        # The tutorial's layout: gVNIC 192.168.0.0/24, RDMA sub-0..7 = 192.168.1-8.0/24 (§3.2).
        (
            "192.168.0.0/24",
            8,
            [f"192.168.{i}.0/24" for i in range(1, 9)],
        ),
        ("10.10.0.0/23", 2, ["10.10.2.0/23", "10.10.4.0/23"]),
        ("192.168.0.0/24", 0, []),
    ],
)
def test_consecutive_subnets_table(after: str, count: int, expected: list[str]) -> None:
    assert consecutive_subnets(IPv4Network(after), count) == nets(*expected)


def test_consecutive_subnets_refuses_to_leave_ipv4() -> None:
    with pytest.raises(ValueError, match="do not fit"):
        consecutive_subnets(IPv4Network("255.255.254.0/24"), 2)


def test_overlaps_names_each_pair_once() -> None:
    ranges = {
        "primary": IPv4Network("10.0.0.0/20"),
        "pods": IPv4Network("10.0.0.0/14"),
        "services": IPv4Network("10.0.8.0/21"),
        "gvnic": IPv4Network("192.168.0.0/24"),
    }
    assert overlaps(ranges) == [("primary", "pods"), ("primary", "services"), ("pods", "services")]


def test_duplicates_in_first_seen_order() -> None:
    assert duplicates(nets("10.0.0.0/24", "10.0.1.0/24", "10.0.0.0/24", "10.0.0.0/24")) == nets(
        "10.0.0.0/24"
    )


@pytest.mark.parametrize(
    ("old", "new", "recreates"),
    [
        ("10.0.0.0/24", "10.0.0.0/23", False),  # grown in place
        ("10.0.0.0/24", "10.0.0.0/25", True),  # shrunk
        ("10.0.0.0/24", "10.0.8.0/24", True),  # moved
        (["10.0.0.0/24", "10.0.1.0/24"], ["10.0.0.0/23", "10.0.0.0/23"], False),
        (["10.0.0.0/24", "10.0.1.0/24"], ["10.0.0.0/24", "10.0.2.0/24"], True),
        (["10.0.0.0/24"], ["10.0.0.0/24", "10.0.1.0/24"], True),  # another subnet count
        ("10.0.0.0/24", "not a range", True),
        ("10.0.0.0/24", "fd00::/64", True),
    ],
)
def test_a_subnet_is_recreated_when_its_range_shrinks_or_moves(
    old: object, new: object, recreates: bool
) -> None:
    assert cidr_shrinks_or_moves(old, new) is recreates


prefixes = st.integers(min_value=16, max_value=28)
counts = st.integers(min_value=1, max_value=16)


@st.composite
def private_networks(draw: st.DrawFn) -> IPv4Network:
    prefix = draw(prefixes)
    base = draw(st.integers(min_value=0, max_value=2**20 - 1)) << 8  # inside 10.0.0.0/8-ish
    return IPv4Network((0x0A000000 | (base & 0x00FFFFFF), prefix), strict=False)


@given(private_networks(), counts)
def test_consecutive_subnets_properties(after: IPv4Network, count: int) -> None:
    plan = consecutive_subnets(after, count)
    assert len(plan) == count
    assert all(n.prefixlen == after.prefixlen for n in plan)
    assert overlaps({str(i): n for i, n in enumerate([after, *plan])}) == []
    # contiguous: each subnet starts where the previous ends
    chain = [after, *plan]
    for a, b in itertools.pairwise(chain):
        assert int(b.network_address) == int(a.broadcast_address) + 1
