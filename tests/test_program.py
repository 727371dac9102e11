"""The real __main__.py per committed stack, run by the preflight engine.

Proof limit: a mock run proves what the program registers and sends, not that GCP accepts it.
"""

from __future__ import annotations

from preflight.cli import Result
from tests.harness import by_name, children

NETWORK_TYPES = {
    "nemo:network:PrimaryNetwork",
    "nemo:network:GvnicNetwork",
    "nemo:network:RdmaNetwork",
}


def components(result: Result) -> set[str]:
    return {r.name for r in result.run.records if r.type in NETWORK_TYPES}


def test_dev_has_only_the_cluster_vpc(dev: Result) -> None:
    assert components(dev) == {"primary"}
    names = by_name(dev)
    assert not any(r.inputs.get("networkProfile") for r in dev.run.records)
    assert names["primary-net"].inputs["name"] == "nemo-rl-dev-net"
    assert dev.run.exports["additionalNodeNetworks"].value == []


def test_b200_has_three_vpcs_with_zonal_roce_profile(b200: Result) -> None:
    assert components(b200) == {"primary", "gvnic", "rdma"}
    rdma = children(b200, "rdma")
    assert len([n for n in rdma if n.startswith("rdma-sub-")]) == 8
    profile = rdma["rdma-net"].inputs["networkProfile"]
    assert profile == "projects/my-gcp-project-prod/global/networkProfiles/us-central1-b-vpc-roce"
    assert all(
        r.inputs["region"] == "us-central1" for n, r in rdma.items() if n.startswith("rdma-sub")
    )


def test_h200_uses_its_own_zone_and_region(h200: Result) -> None:
    rdma = children(h200, "rdma")
    assert (
        rdma["rdma-net"].inputs["networkProfile"].endswith("/networkProfiles/us-east4-b-vpc-roce")
    )
    assert all(
        r.inputs["region"] == "us-east4" for n, r in rdma.items() if n.startswith("rdma-sub")
    )


def test_node_networks_are_gvnic_then_rdma_in_order(b200: Result) -> None:
    nets = b200.run.exports["additionalNodeNetworks"].value
    names = by_name(b200)
    expected = [
        {
            "network": names["gvnic-net"].inputs["name"],
            "subnetwork": names["gvnic-sub"].inputs["name"],
        }
    ] + [
        {
            "network": names["rdma-net"].inputs["name"],
            "subnetwork": names[f"rdma-sub-{i}"].inputs["name"],
        }
        for i in range(8)
    ]
    assert nets == expected


def test_every_resource_is_parented_to_a_component(stack: str) -> None:
    from tests.conftest import committed

    result = committed(stack)
    component_urns = {r.urn for r in result.run.records if not r.custom}
    for record in result.run.records:
        if record.custom:
            assert record.parent in component_urns, f"{record.name} escapes its component"


def test_no_resource_is_protected_in_dev(dev: Result) -> None:
    assert not any(r.protect for r in dev.run.records)
