"""Network components: exact children and the inputs sent.

Proof limit: these tests prove the inputs the program sends (wire form, camelCase, numbers as
floats). They cannot prove GCP accepts them - e.g. that the zone offers a RoCE profile, or
that the CIDRs are free in the project.
"""

from __future__ import annotations

from ipaddress import IPv4Network

import pulumi
import pytest

from components import (
    GvnicNetwork,
    GvnicNetworkArgs,
    PrimaryNetwork,
    PrimaryNetworkArgs,
    RdmaNetwork,
    RdmaNetworkArgs,
)
from planning.naming import Names
from tests.harness import run_component

NAMES = Names("nrl")
PROFILE = "projects/test-project/global/networkProfiles/us-central1-b-vpc-roce"
RDMA_CIDRS = [IPv4Network(f"192.168.{i}.0/24") for i in range(1, 9)]
TCP_UDP_ICMP = [
    {"protocol": "tcp", "ports": ["0-65535"]},
    {"protocol": "udp", "ports": ["0-65535"]},
    {"protocol": "icmp"},
]


def test_primary_network_children_and_inputs() -> None:
    def build() -> object:
        net = PrimaryNetwork(
            "primary",
            PrimaryNetworkArgs(
                project="test-project",
                region="us-central1",
                names=NAMES,
                primary_cidr=IPv4Network("10.0.0.0/20"),
                pods_cidr=IPv4Network("10.4.0.0/14"),
                services_cidr=IPv4Network("10.0.32.0/20"),
                mtu=8896,
            ),
        )
        return {"id": net.network_id, "pods": net.pods_range_name, "svc": net.services_range_name}

    records, out = run_component(build)
    assert set(records) == {
        "primary",
        "primary-net",
        "primary-sub",
        "primary-router",
        "primary-nat",
        "primary-internal",
    }
    component = records["primary"]
    assert component.type == "nemo:network:PrimaryNetwork"
    assert all(r.parent == component.urn for n, r in records.items() if n != "primary")

    net = records["primary-net"].inputs
    assert net["name"] == "nrl-net"
    assert net["autoCreateSubnetworks"] is False
    assert net["routingMode"] == "REGIONAL"
    assert net["mtu"] == 8896.0

    sub = records["primary-sub"].inputs
    # by name, never by id: known during a first preview, so policies can judge it
    assert sub["network"] == "nrl-net"
    assert sub["region"] == "us-central1"
    assert sub["ipCidrRange"] == "10.0.0.0/20"
    assert sub["privateIpGoogleAccess"] is True
    assert sub["secondaryIpRanges"] == [
        {"rangeName": "pods", "ipCidrRange": "10.4.0.0/14"},
        {"rangeName": "services", "ipCidrRange": "10.0.32.0/20"},
    ]
    assert sub["logConfig"]["flowSampling"] == 0.5

    nat = records["primary-nat"].inputs
    assert nat["router"] == "nrl-router"
    assert nat["natIpAllocateOption"] == "AUTO_ONLY"
    assert nat["sourceSubnetworkIpRangesToNat"] == "LIST_OF_SUBNETWORKS"
    assert nat["subnetworks"] == [
        {
            "name": "projects/test-project/regions/us-central1/subnetworks/nrl-sub",
            "sourceIpRangesToNats": ["ALL_IP_RANGES"],
        }
    ]
    assert records["primary-router"].inputs["network"] == "nrl-net"
    assert records["primary-internal"].inputs["network"] == "nrl-net"

    fw = records["primary-internal"].inputs
    assert fw["direction"] == "INGRESS"
    assert fw["sourceRanges"] == ["10.0.0.0/20", "10.4.0.0/14"]
    assert fw["allows"] == TCP_UDP_ICMP
    assert out == {
        "id": "projects/test-project/global/networks/nrl-net",
        "pods": "pods",
        "svc": "services",
    }


def test_gvnic_network_matches_tutorial_step_3_1() -> None:
    def build() -> object:
        return GvnicNetwork(
            "gvnic",
            GvnicNetworkArgs(
                region="us-central1", names=NAMES, cidr=IPv4Network("192.168.0.0/24"), mtu=8896
            ),
        ).node_networks

    records, node_networks = run_component(build)
    assert set(records) == {"gvnic", "gvnic-net", "gvnic-sub", "gvnic-internal"}
    assert records["gvnic-net"].inputs["autoCreateSubnetworks"] is False
    sub = records["gvnic-sub"].inputs
    # tutorial-facts §3.1: subnet 192.168.0.0/24 in the region
    assert (sub["ipCidrRange"], sub["region"]) == ("192.168.0.0/24", "us-central1")
    assert sub["network"] == "nrl-gvnic-net"
    fw = records["gvnic-internal"].inputs
    assert fw["network"] == "nrl-gvnic-net"
    # §3.1 allows tcp/udp 0-65535 and icmp from 192.168.0.0/16; we narrow the source to the
    # subnet itself, which lies inside that /16.
    assert fw["allows"] == TCP_UDP_ICMP
    assert fw["sourceRanges"] == ["192.168.0.0/24"]
    assert IPv4Network(fw["sourceRanges"][0]).subnet_of(IPv4Network("192.168.0.0/16"))
    assert node_networks == [{"network": "nrl-gvnic-net", "subnetwork": "nrl-gvnic-sub"}]


def test_rdma_network_matches_tutorial_step_3_2_with_zonal_profile() -> None:
    def build() -> object:
        rdma = RdmaNetwork(
            "rdma",
            RdmaNetworkArgs(
                region="us-central1", names=NAMES, network_profile=PROFILE, cidrs=RDMA_CIDRS
            ),
        )
        return {"nets": rdma.node_networks, "subs": rdma.subnet_names}

    records, out = run_component(build)
    assert set(records) == {"rdma", "rdma-net", *(f"rdma-sub-{i}" for i in range(8))}
    net = records["rdma-net"].inputs
    assert net["networkProfile"] == PROFILE  # <zone>-vpc-roce (§16.1: not the region)
    assert net["mtu"] == 8896.0
    assert net["autoCreateSubnetworks"] is False
    for i in range(8):
        sub = records[f"rdma-sub-{i}"].inputs
        assert sub["name"] == f"nrl-rdma-sub-{i}"
        assert sub["ipCidrRange"] == f"192.168.{i + 1}.0/24"  # §3.2: sub-N = 192.168.(N+1).0/24
        assert sub["region"] == "us-central1"
        assert sub["network"] == "nrl-rdma-net"
    assert not any(r.type == "gcp:compute/firewall:Firewall" for r in records.values())
    assert out["subs"] == [f"nrl-rdma-sub-{i}" for i in range(8)]
    assert out["nets"] == [
        {"network": "nrl-rdma-net", "subnetwork": f"nrl-rdma-sub-{i}"} for i in range(8)
    ]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"cidrs": []}, "at least one subnet"),
        ({"network_profile": "projects/p/global/networkProfiles/us-central1-b"}, "vpc-roce"),
    ],
)
def test_rdma_args_validate_early(kwargs: dict[str, object], message: str) -> None:
    base: dict[str, object] = {
        "region": "us-central1",
        "names": NAMES,
        "network_profile": PROFILE,
        "cidrs": RDMA_CIDRS,
    }
    base.update(kwargs)
    with pytest.raises(pulumi.InputPropertyError) as info:
        RdmaNetworkArgs(**base)  # type: ignore[arg-type]
    assert message in info.value.reason
