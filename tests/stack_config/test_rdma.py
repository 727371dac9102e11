"""network.rdma: the DRANET path's rules, each refused with the key a user wrote."""

from __future__ import annotations

from typing import Any

import pytest

from planning.versions import VERSIONS
from stack_config import load_stack_config
from tests.stack_config.test_stack import error_for, gpu, values


def dranet(**network: Any) -> dict[str, Any]:
    return {"rdma": "dranet", **network}


def test_multi_network_stays_the_default() -> None:
    cfg = load_stack_config(values(), "b200")
    assert cfg.network.rdma == "multi-network"
    assert cfg.dranet is False
    assert len(cfg.rdma_cidrs) == 8
    assert "GKE managed DRANET (network.rdma dranet)" not in cfg.required_gke_minimums()


def test_dranet_plans_no_rdma_subnets_and_claims_every_nic() -> None:
    cfg = load_stack_config(values(network=dranet()), "b200")
    assert cfg.dranet is True
    assert cfg.rdma_cidrs == []
    assert cfg.rdma_devices == cfg.gpu.profile.rdma_nics == 8
    minimums = cfg.required_gke_minimums()
    assert minimums["GKE managed DRANET (network.rdma dranet)"] == VERSIONS.gke_min_dranet.value


def test_fewer_devices_per_pod_is_accepted() -> None:
    cfg = load_stack_config(values(network=dranet(rdmaDevices=4)), "b200")
    assert cfg.rdma_devices == 4


def test_dranet_ignores_the_gvnic_range_it_does_not_build() -> None:
    # The default gVNIC /21 is not checked against the pods range when nothing uses it.
    cfg = load_stack_config(values(network=dranet(podsCidr="192.168.0.0/14")), "b200")
    assert str(cfg.network.pods_cidr) == "192.168.0.0/14"
    with pytest.raises(Exception, match="overlaps"):
        load_stack_config(values(network={"podsCidr": "192.168.0.0/14"}), "b200")


CASES: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "dranet-without-rdma-nics",
        {
            "gpu": {"type": "l4", "autoscaling": {"min": 0, "max": 2}, "capacity": "spot"},
            "network": dranet(),
        },
        "nemo-rl-gke:network.rdma",
        "has none",
    ),
    (
        "dranet-beside-rdma-subnets",
        {"network": dranet(rdmaCidrs=[f"192.168.{8 * i}.0/21" for i in range(1, 9)])},
        "nemo-rl-gke:network.rdmaCidrs",
        "mutually exclusive",
    ),
    (
        "dranet-beside-gvnic-subnet",
        {"network": dranet(gvnicCidr="192.168.0.0/21")},
        "nemo-rl-gke:network.gvnicCidr",
        "mutually exclusive",
    ),
    (
        "more-devices-than-nics",
        {"network": dranet(rdmaDevices=9)},
        "nemo-rl-gke:network.rdmaDevices",
        "a4-highgpu-8g has 8",
    ),
    (
        "devices-without-dranet",
        {"network": {"rdmaDevices": 8}},
        "nemo-rl-gke:network.rdmaDevices",
        "read only with network.rdma dranet",
    ),
    (
        "zero-devices",
        {"network": dranet(rdmaDevices=0)},
        "nemo-rl-gke:network.rdmaDevices",
        "greater than or equal to 1",
    ),
    (
        "unknown-path",
        {"network": {"rdma": "dra"}},
        "nemo-rl-gke:network.rdma",
        "'multi-network' or 'dranet'",
    ),
    (
        "control-plane-below-floor",
        {"network": dranet(), "cluster": {"minVersion": "1.34.1-gke.1000000"}},
        "nemo-rl-gke:cluster.minVersion",
        "the minimum for GKE managed DRANET",
    ),
    (
        "gpu-nodes-below-floor",
        {"network": dranet(), "gpu": gpu(version="1.34.0-gke.1000000")},
        "nemo-rl-gke:gpu.version",
        "the minimum for GKE managed DRANET",
    ),
]


@pytest.mark.parametrize(("case", "changes", "key", "text"), CASES, ids=[c[0] for c in CASES])
def test_dranet_rules(case: str, changes: dict[str, Any], key: str, text: str) -> None:
    error = error_for(values(**changes))
    line = str(error)
    assert error.key == key, line
    assert text in line, line
    assert error.fix, line
    assert "\n" not in line
