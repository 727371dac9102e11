"""network.rdma dranet: the b200 and h200 programs plan DRA claims instead of networks.

Proof limit: a mock run proves what the program registers; the engine test proves the real
API server, scheduler and Kueue take it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from planning.rdma import CLAIM_TEMPLATE, DRA_DRIVER_LABEL, KUEUE_RDMA_RESOURCE
from preflight.cli import Result
from tests.harness import by_name, run_stack, stack_data, variant
from tests.program.test_ray_schemas import KUBERNETES_VERSION, crd_validator, plain
from tests.program.test_verify import jobs, worker_template

NETWORK_OBJECTS = {
    "kubernetes:networking.gke.io/v1:Network",
    "kubernetes:networking.gke.io/v1:GKENetworkParamSet",
}


def dranet_stack(stack: str, tmp_path: Path, **network: Any) -> Result:
    base = dict(stack_data(stack)["config"].get("nemo-rl-gke:network", {}))
    config = variant(stack, {"nemo-rl-gke:network": {**base, "rdma": "dranet", **network}})
    return run_stack(stack, tmp_path, config)


@pytest.fixture(scope="module")
def b200_dranet(tmp_path_factory: pytest.TempPathFactory) -> Result:
    return dranet_stack("b200", tmp_path_factory.mktemp("b200-dranet"))


def test_no_rdma_or_gvnic_network_and_no_network_objects(b200_dranet: Result) -> None:
    types = {r.type for r in b200_dranet.run.records}
    assert "nemo:network:RdmaNetwork" not in types
    assert "nemo:network:GvnicNetwork" not in types
    assert not types & NETWORK_OBJECTS
    assert not any(
        "vpc-roce" in str(r.inputs.get("networkProfile")) for r in b200_dranet.run.records
    )
    assert b200_dranet.run.exports["additionalNodeNetworks"].value == []
    assert "interfacesAnnotation" not in b200_dranet.run.exports


def test_pool_asks_gke_to_manage_its_rdma_networks(b200_dranet: Result) -> None:
    names = by_name(b200_dranet)
    pool = names["gpu-pool"].inputs
    assert pool["networkConfig"]["acceleratorNetworkProfile"] == "auto"
    assert not pool["networkConfig"].get("additionalNodeNetworkConfigs")
    assert pool["nodeConfig"]["labels"][DRA_DRIVER_LABEL] == "true"
    assert names["gpu-pool"].delete_before_replace is True
    cluster = names["gke-cluster"].inputs
    assert cluster["datapathProvider"] == "ADVANCED_DATAPATH"
    assert cluster["enableMultiNetworking"] is False
    # The A4's second gVNIC NIC is still not in the cluster VPC: Lustre keeps to eth0.
    assert cluster["addonsConfig"]["lustreCsiDriverConfig"]["disableMultiNic"] is True


def test_multi_network_pool_is_unchanged(b200: Result) -> None:
    pool = by_name(b200)["gpu-pool"].inputs
    assert "acceleratorNetworkProfile" not in pool["networkConfig"]
    assert len(pool["networkConfig"]["additionalNodeNetworkConfigs"]) == 9
    assert DRA_DRIVER_LABEL not in pool["nodeConfig"]["labels"]
    assert by_name(b200)["gke-cluster"].inputs["enableMultiNetworking"] is True
    assert not any(r.inputs.get("kind") == "ResourceClaimTemplate" for r in b200.run.records)


def _template(result: Result) -> dict[str, Any]:
    (template,) = [
        plain(r.inputs)
        for r in result.run.records
        if r.inputs.get("kind") == "ResourceClaimTemplate"
    ]
    found: dict[str, Any] = template
    return found


def test_claim_template_asks_for_every_nic_exactly(b200_dranet: Result) -> None:
    template = _template(b200_dranet)
    assert template["apiVersion"] == "resource.k8s.io/v1"
    assert template["metadata"] == {"name": CLAIM_TEMPLATE, "namespace": "nemo-rl"}
    (request,) = template["spec"]["spec"]["devices"]["requests"]
    assert request["exactly"] == {
        "deviceClassName": "mrdma.google.com",
        "allocationMode": "ExactCount",
        "count": 8,
    }
    kubernetes_validate.validate(template, KUBERNETES_VERSION, strict=True)


def test_fewer_devices_show_in_the_claim(tmp_path: Path) -> None:
    template = _template(dranet_stack("b200", tmp_path, rdmaDevices=4))
    (request,) = template["spec"]["spec"]["devices"]["requests"]
    assert request["exactly"]["count"] == 4


def _claims(template: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    spec = template["spec"]
    (container,) = spec["containers"]
    return spec.get("resourceClaims", []), container["resources"].get("claims", [])


def test_workers_and_rdma_gates_claim_the_nics(b200_dranet: Result) -> None:
    worker = worker_template(b200_dranet)
    pod, container = _claims(worker)
    assert pod == [{"name": "rdma", "resourceClaimTemplateName": CLAIM_TEMPLATE}]
    assert container == [{"name": "rdma"}]
    assert "networking.gke.io/interfaces" not in worker["metadata"].get("annotations", {})
    # gIB as under multi-network: the same setup and host folders.
    (ray,) = worker["spec"]["containers"]
    assert "source /usr/local/gib/scripts/set_nccl_env.sh" in ray["args"][0]
    assert {v["name"] for v in worker["spec"]["volumes"] if "hostPath" in v} == {"nvidia", "gib"}
    gates = jobs(b200_dranet)
    for gate in ("rdma", "nccl"):
        template = gates[gate]["spec"]["template"]
        assert _claims(template) == (pod, container), gate
        assert "networking.gke.io/interfaces" not in template["metadata"].get("annotations", {})
        kubernetes_validate.validate(gates[gate], KUBERNETES_VERSION, strict=True)
    for gate in ("gpu-health", "storage"):
        assert _claims(gates[gate]["spec"]["template"]) == ([], []), gate
    crd_validator("rayclusters").validate(
        plain(
            next(r.inputs for r in b200_dranet.run.records if r.inputs.get("kind") == "RayCluster")
        )
    )


def test_gates_run_again_after_a_switch(b200: Result, b200_dranet: Result) -> None:
    def names(result: Result) -> dict[str, str]:
        return {gate: job["metadata"]["name"] for gate, job in jobs(result).items()}

    before, after = names(b200), names(b200_dranet)
    assert before["rdma"] != after["rdma"]
    assert before["nccl"] != after["nccl"]


def test_queue_maps_the_device_class_and_gives_it_quota(b200_dranet: Result) -> None:
    records = b200_dranet.run.records
    (queue,) = [r.inputs for r in records if r.inputs.get("kind") == "ClusterQueue"]
    (group,) = queue["spec"]["resourceGroups"]
    assert KUEUE_RDMA_RESOURCE in group["coveredResources"]
    quotas = {
        f["name"]: {r["name"]: r["nominalQuota"] for r in f["resources"]} for f in group["flavors"]
    }
    assert quotas["gpu-b200"][KUEUE_RDMA_RESOURCE] == "16"
    assert quotas["system"][KUEUE_RDMA_RESOURCE] == "0"
    (release,) = [r.inputs for r in records if r.name == "kueue-release"]
    manager = yaml.safe_load(release["values"]["managerConfig"]["controllerManagerConfigYaml"])
    assert manager["resources"]["deviceClassMappings"] == [
        {"name": KUEUE_RDMA_RESOURCE, "deviceClassNames": ["mrdma.google.com"]}
    ]


def test_queued_run_manifest_claims_the_nics(b200_dranet: Result) -> None:
    manifest = json.loads(b200_dranet.run.exports["grpoQueuedRunManifest"].value)
    workers = manifest["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"]
    assert _claims(workers) == (
        [{"name": "rdma", "resourceClaimTemplateName": CLAIM_TEMPLATE}],
        [{"name": "rdma"}],
    )


def test_h200_takes_the_same_path(tmp_path: Path) -> None:
    result = dranet_stack("h200", tmp_path)
    assert (
        by_name(result)["gpu-pool"].inputs["networkConfig"]["acceleratorNetworkProfile"] == "auto"
    )
    assert _template(result)["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 8
    assert result.violations == []


def test_a_switch_to_dranet_keeps_the_cluster_s_multi_networking_on(
    b200: Result, tmp_path: Path
) -> None:
    """GKE's exclusivity is per node pool: the cluster keeps multi-networking while the old
    pool and its Network objects still exist in the same update (only a cluster created on
    DRANET has it off, test_pool_asks_gke_to_manage_its_rdma_networks)."""
    from preflight.cli import preflight
    from program.guard import MULTI_NETWORKING, REPLACEMENT_EXPORT
    from tests.harness import REPO, write_stack

    deployed = b200.run.exports[REPLACEMENT_EXPORT].value
    assert deployed[MULTI_NETWORKING] is True
    base = dict(stack_data("b200")["config"].get("nemo-rl-gke:network", {}))
    # Unprotected: the switch replaces the GPU pool, which a protected stack refuses.
    config = variant(
        "b200", {"nemo-rl-gke:network": {**base, "rdma": "dranet"}, "nemo-rl-gke:protect": False}
    )
    switched = preflight(
        write_stack(tmp_path, "b200", config),
        project_dir=REPO,
        known=True,
        previous_outputs={REPLACEMENT_EXPORT: deployed},
    )
    assert by_name(switched)["gke-cluster"].inputs["enableMultiNetworking"] is True
    assert switched.run.exports[REPLACEMENT_EXPORT].value[MULTI_NETWORKING] is True
    # An older program's export (no key): its network.rdma says how the cluster was made.
    older = {k: v for k, v in deployed.items() if k != MULTI_NETWORKING}
    again = preflight(
        write_stack(tmp_path, "b200", config),
        project_dir=REPO,
        known=True,
        previous_outputs={REPLACEMENT_EXPORT: older},
    )
    assert by_name(again)["gke-cluster"].inputs["enableMultiNetworking"] is True
