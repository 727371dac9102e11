"""GPU and system node pools: capacity models, NIC order, hardening.

Cross-checked with tutorial-facts §5 (S5: `--accelerator type=...,count=8,gpu-driver-version`,
`--reservation-affinity=specific --reservation=...`, `--node-locations=ZONE`, 9 additional
networks) and platform-facts §c/§f. Proof limit: mocks prove the inputs, not that the
reservation exists, matches the machine type, or has free capacity.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pytest

from components import GpuNodePool, GpuNodePoolArgs, SystemNodePool, SystemNodePoolArgs
from planning.catalog import GPU_CATALOG, GpuType
from preflight.cli import Result
from tests.harness import by_name, run_component

NETS = [{"network": "g-net", "subnetwork": "g-sub"}] + [
    {"network": "r-net", "subnetwork": f"r-sub-{i}"} for i in range(8)
]


def gpu_args(**changes: Any) -> GpuNodePoolArgs:
    base: dict[str, Any] = {
        "cluster_id": "projects/p/locations/us-central1/clusters/c",
        "region": "us-central1",
        "zone": "us-central1-b",
        "gpu": GPU_CATALOG["b200"],
        "service_account": "nodes@test-project.iam.gserviceaccount.com",
        "capacity": "reservation",
        "nodes": 2,
        "autoscaling": None,
        "reservation": "res-1",
        "reservation_project": None,
        "placement": "none",
        "driver_version": "LATEST",
        "additional_networks": NETS,
        "labels": {"app": "nemo-rl-gke"},
    }
    base.update(changes)
    return GpuNodePoolArgs(**base)


def pool_inputs(a: GpuNodePoolArgs) -> tuple[dict[str, Any], Any]:
    records, out = run_component(
        lambda: {
            "sel": (p := GpuNodePool("gpu", a)).node_selector,
            "tol": p.tolerations,
            "gpus": p.gpus_per_node,
        }
    )
    assert set(records) == {"gpu", "gpu-pool"}
    return records["gpu-pool"].inputs, out


def test_b200_reservation_pool() -> None:
    pool, out = pool_inputs(gpu_args())
    node = pool["nodeConfig"]
    assert pool["name"] == "gpu-b200"
    assert pool["location"] == "us-central1"
    assert pool["nodeLocations"] == ["us-central1-b"]
    assert pool["nodeCount"] == 2.0
    assert "autoscaling" not in pool
    assert node["machineType"] == "a4-highgpu-8g"
    assert node["guestAccelerators"] == [
        {
            "type": "nvidia-b200",
            "count": 8.0,
            "gpuDriverInstallationConfig": {"gpuDriverVersion": "LATEST"},
        }
    ]
    assert node["reservationAffinity"] == {
        "consumeReservationType": "SPECIFIC_RESERVATION",
        "key": "compute.googleapis.com/reservation-name",
        "values": ["res-1"],
    }
    assert node["imageType"] == "COS_CONTAINERD"
    assert node["gvnic"] == {"enabled": True}
    assert node["workloadMetadataConfig"] == {"mode": "GKE_METADATA"}
    assert node["shieldedInstanceConfig"]["enableSecureBoot"] is True
    assert node["taints"] == [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}
    ]
    assert node["diskType"] == "hyperdisk-balanced"
    assert node["serviceAccount"] == "nodes@test-project.iam.gserviceaccount.com"
    assert node["ephemeralStorageLocalSsdConfig"] == {"localSsdCount": 32.0}
    assert "spot" not in node
    assert "flexStart" not in node
    # a reservation has no spare VMs: replace in place, never surge
    assert pool["upgradeSettings"] == {"strategy": "SURGE", "maxSurge": 0.0, "maxUnavailable": 1.0}
    assert pool["management"] == {"autoRepair": True, "autoUpgrade": True}
    assert "placementPolicy" not in pool
    assert out["sel"] == {"cloud.google.com/gke-accelerator": "nvidia-b200"}
    assert out["tol"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert out["gpus"] == 8


def test_gpu_nodes_run_32_pods() -> None:
    """A /26 of the pods range per GPU node instead of GKE's default /24 (110 pods)."""
    pool, _ = pool_inputs(gpu_args())
    assert pool["maxPodsPerNode"] == 32.0
    pool, _ = pool_inputs(gpu_args(max_pods_per_node=110))
    assert pool["maxPodsPerNode"] == 110.0


def test_nine_additional_networks_in_order() -> None:
    pool, _ = pool_inputs(gpu_args())
    assert pool["networkConfig"]["additionalNodeNetworkConfigs"] == NETS


@pytest.mark.parametrize("gpu", ["b200", "l4"])
def test_gpu_pools_say_private_nodes_themselves(gpu: GpuType) -> None:
    """A networkConfig block without enablePrivateNodes is sent with false, which gives the
    nodes external IPs whatever the cluster says (Terraform's expandNodeNetworkConfig)."""
    changes: dict[str, Any] = {"gpu": GPU_CATALOG[gpu]}
    if gpu == "l4":
        changes.update(capacity="spot", reservation=None, additional_networks=[])
    pool, _ = pool_inputs(gpu_args(**changes))
    assert pool["networkConfig"]["enablePrivateNodes"] is True


def test_reservation_block_and_shared_reservation_paths() -> None:
    pool, _ = pool_inputs(gpu_args(reservation="res-1/reservationBlocks/b-7"))
    assert pool["nodeConfig"]["reservationAffinity"]["values"] == ["res-1/reservationBlocks/b-7"]
    pool, _ = pool_inputs(gpu_args(reservation="res-1", reservation_project="owner-proj"))
    assert pool["nodeConfig"]["reservationAffinity"]["values"] == [
        "projects/owner-proj/reservations/res-1"
    ]


def test_spot_pool_autoscales_without_reservation() -> None:
    pool, _ = pool_inputs(
        gpu_args(
            capacity="spot", reservation=None, nodes=None, autoscaling=(0, 4), gpu=GPU_CATALOG["l4"]
        )
    )
    node = pool["nodeConfig"]
    assert node["spot"] is True
    assert node["reservationAffinity"] == {"consumeReservationType": "NO_RESERVATION"}
    assert pool["autoscaling"] == {
        "totalMinNodeCount": 0.0,
        "totalMaxNodeCount": 4.0,
        "locationPolicy": "ANY",
    }
    assert pool["initialNodeCount"] == 0.0
    assert "nodeCount" not in pool
    assert node["machineType"].startswith("g2-standard-")
    assert node["diskType"] == "pd-balanced"
    assert "ephemeralStorageLocalSsdConfig" not in node
    assert pool["upgradeSettings"]["maxSurge"] == 1.0


def test_flex_start_pool() -> None:
    pool, _ = pool_inputs(
        gpu_args(capacity="flex-start", reservation=None, nodes=None, autoscaling=(0, 2))
    )
    assert pool["nodeConfig"]["flexStart"] is True
    assert pool["nodeConfig"]["reservationAffinity"] == {"consumeReservationType": "NO_RESERVATION"}
    assert pool["management"]["autoRepair"] is False


def test_on_demand_and_compact() -> None:
    pool, _ = pool_inputs(
        gpu_args(capacity="on-demand", reservation=None, placement="compact", gpu=GPU_CATALOG["l4"])
    )
    assert pool["nodeConfig"]["reservationAffinity"] == {
        "consumeReservationType": "ANY_RESERVATION"
    }
    assert pool["placementPolicy"] == {"type": "COMPACT"}


def test_h200_uses_its_catalog_row() -> None:
    pool, _ = pool_inputs(gpu_args(gpu=GPU_CATALOG["h200"]))
    node = pool["nodeConfig"]
    assert node["machineType"] == "a3-ultragpu-8g"
    assert node["guestAccelerators"][0]["type"] == "nvidia-h200-141gb"
    assert node["diskType"] == "hyperdisk-balanced"  # platform-facts §c: required on A3 Ultra


@pytest.mark.parametrize(
    "changes",
    [
        {"nodes": 2, "autoscaling": (0, 2)},
        {"capacity": "spot"},  # reservation left set
        {"capacity": "flex-start", "reservation": None, "nodes": None, "autoscaling": (1, 2)},
    ],
)
def test_invalid_args_fail_early(changes: dict[str, Any]) -> None:
    with pytest.raises(pulumi.InputPropertyError):
        gpu_args(**changes)


def test_system_pool() -> None:
    records, out = run_component(
        lambda: (
            SystemNodePool(
                "system",
                SystemNodePoolArgs(
                    cluster_id="c",
                    region="us-central1",
                    zone="us-central1-b",
                    service_account="nodes@p.iam.gserviceaccount.com",
                    machine_type="n2-highmem-16",
                    min_nodes=1,
                    max_nodes=3,
                    disk_gb=200,
                ),
            ).node_selector
        )
    )
    pool = records["system-pool"].inputs
    assert pool["nodeConfig"]["machineType"] == "n2-highmem-16"  # tutorial-facts §4.2 / §16.5
    assert pool["autoscaling"]["totalMinNodeCount"] == 1.0
    assert pool["autoscaling"]["totalMaxNodeCount"] == 3.0
    assert pool["nodeLocations"] == ["us-central1-b"]
    assert pool["nodeConfig"]["workloadMetadataConfig"] == {"mode": "GKE_METADATA"}
    assert "guestAccelerators" not in pool["nodeConfig"]
    assert pool["networkConfig"] == {"enablePrivateNodes": True}
    assert out == {"nemo-rl-gke/pool": "system"}


def test_gpu_pool_ignores_drift_on_fields_that_would_replace_it(b200: Result) -> None:
    """A spurious diff on these would delete a reserved pool (Cluster Toolkit ignores them too)."""
    pool = by_name(b200)["gpu-pool"]
    assert set(pool.ignore_changes) == {
        "nodeConfig.ephemeralStorageLocalSsdConfig",
        "initialNodeCount",
        # 32 pods per node is new: pools created at GKE's 110 keep it instead of being replaced
        "maxPodsPerNode",
    }
    assert pool.inputs["nodeConfig"]["ephemeralStorageLocalSsdConfig"]["localSsdCount"] == 32.0


def test_a_pool_version_is_sent_only_when_named() -> None:
    pool, _ = pool_inputs(gpu_args())
    assert "version" not in pool  # the pool stays on the version it was created at
    pool, _ = pool_inputs(gpu_args(version="1.36.2-gke.1000"))
    assert pool["version"] == "1.36.2-gke.1000"
