"""Every policy of the pack: compliant, violating (message asserted), missing properties,
a config override, and a value unknown at preview time.

Resources are written in the wire form the engine hands policies (camelCase, floats) and run
through the same analyzer servicer preflight uses.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from pulumi_policy import Policy

from planning.catalog import GPU_CATALOG, machine_family
from planning.resource_types import (
    BUCKET,
    CLUSTER,
    CLUSTER_QUEUE,
    FIREWALL,
    GLOBAL_ADDRESS,
    LUSTRE,
    NETWORK,
    NODE_POOL,
    PERSISTENT_VOLUME,
    SUBNETWORK,
)
from policies import data_protection as dp
from policies import firewall as fw
from policies import gpu_pool as topo
from policies import job_queue as queue
from policies import quota
from policies import security as sec
from policies.pack import POLICIES
from preflight.recorder import Record
from tests.policies.helpers import UNKNOWN_VALUE, record, run
from tests.policies.test_job_queue import (
    ACCEL,
    QUEUED,
    cluster_queue,
    flavor,
    raycluster,
)
from tests.policies.test_job_queue import pool as queue_pool

PROFILE = "projects/p/global/networkProfiles/us-central1-b-vpc-roce"
SA = "nodes@p.iam.gserviceaccount.com"


def network(name: str, **props: Any) -> Record:
    return record(NETWORK, name, {"name": name, **props})


def roce(name: str = "rdma-net") -> Record:
    return network(name, networkProfile=PROFILE, mtu=8896.0)


def subnet(name: str, net: str, **props: Any) -> Record:
    return record(
        SUBNETWORK,
        name,
        {
            "name": name,
            "network": f"projects/p/global/networks/{net}",
            "logConfig": {"flowSampling": 0.5},
            **props,
        },
    )


def firewall(
    name: str, net: str, sources: list[Any], ports: list[str] | None = None, **props: Any
) -> Record:
    allows: list[dict[str, Any]] = [{"protocol": "tcp", "ports": ports or ["22"]}]
    return record(
        FIREWALL,
        name,
        {
            "name": name,
            "network": f"projects/p/global/networks/{net}",
            "sourceRanges": sources,
            "allows": allows,
            **props,
        },
    )


def good_cluster(**changes: Any) -> dict[str, Any]:
    props: dict[str, Any] = {
        "name": "c",
        "workloadIdentityConfig": {"workloadPool": "p.svc.id.goog"},
        "privateClusterConfig": {"enablePrivateNodes": True, "enablePrivateEndpoint": False},
        "masterAuthorizedNetworksConfig": {"cidrBlocks": [{"cidrBlock": "203.0.113.0/24"}]},
        "enableShieldedNodes": True,
        "enableLegacyAbac": False,
        "masterAuth": {"clientCertificateConfig": {"issueClientCertificate": False}},
        "releaseChannel": {"channel": "REGULAR"},
        "datapathProvider": "ADVANCED_DATAPATH",
        "ipAllocationPolicy": {"clusterSecondaryRangeName": "pods"},
        "maintenancePolicy": {"maintenanceExclusions": [{"exclusionName": "x"}]},
        "resourceLabels": {"app": "nemo-rl-gke"},
        "deletionProtection": True,
        "nodeConfig": {"serviceAccount": SA},
    }
    props.update(changes)
    return props


def cluster(protect: bool = True, **changes: Any) -> Record:
    return record(CLUSTER, "gke-cluster", good_cluster(**changes), protect=protect)


def good_pool(**changes: Any) -> dict[str, Any]:
    props: dict[str, Any] = {
        "name": "gpu-b200",
        "location": "us-central1",
        "nodeLocations": ["us-central1-b"],
        "nodeCount": 2.0,
        "management": {"autoRepair": True, "autoUpgrade": True},
        "networkConfig": {
            "enablePrivateNodes": True,
            "additionalNodeNetworkConfigs": [{"network": "gvnic-net", "subnetwork": "gvnic-sub"}]
            + [{"network": "rdma-net", "subnetwork": f"rdma-sub-{i}"} for i in range(8)],
        },
        "nodeConfig": {
            "machineType": "a4-highgpu-8g",
            "imageType": "COS_CONTAINERD",
            "serviceAccount": SA,
            "guestAccelerators": [{"type": "nvidia-b200", "count": 8.0}],
            "workloadMetadataConfig": {"mode": "GKE_METADATA"},
            "shieldedInstanceConfig": {"enableSecureBoot": True, "enableIntegrityMonitoring": True},
            "reservationAffinity": {
                "consumeReservationType": "SPECIFIC_RESERVATION",
                "key": "compute.googleapis.com/reservation-name",
                "values": ["res-1"],
            },
        },
    }
    props.update(changes)
    return props


def pool(**changes: Any) -> Record:
    return record(NODE_POOL, "gpu-pool", good_pool(**changes))


def dranet_pool(**changes: Any) -> Record:
    """The GPU pool as the DRANET path plans it: GKE manages its RDMA networks."""
    labelled = node_config(labels={"cloud.google.com/gke-networking-dra-driver": "true"})
    props = {
        "networkConfig": {"enablePrivateNodes": True, "acceleratorNetworkProfile": "auto"},
        "nodeConfig": labelled,
        **changes,
    }
    return pool(**props)


def node_config(**changes: Any) -> dict[str, Any]:
    config: dict[str, Any] = copy.deepcopy(good_pool()["nodeConfig"])
    for key, value in changes.items():
        if value is None:
            config.pop(key, None)
        else:
            config[key] = value
    return config


def rdma_fabric(pool_record: Record | None = None, subnets: int = 8) -> list[Record]:
    return [
        roce(),
        network("gvnic-net"),
        *[subnet(f"rdma-sub-{i}", "rdma-net") for i in range(subnets)],
        pool_record or pool(),
    ]


def psa(address: Any = "10.50.0.0") -> Record:
    return record(
        GLOBAL_ADDRESS, "psa", {"purpose": "VPC_PEERING", "address": address, "prefixLength": 20.0}
    )


def lustre_instance(**props: Any) -> Record:
    return record(LUSTRE, "lustre-instance", {"capacityGib": "18000", **props}, protect=True)


def ray_cluster(env: list[dict[str, Any]]) -> Record:
    return record(
        "kubernetes:ray.io/v1:RayCluster",
        "ray-cluster",
        {
            "spec": {
                "workerGroupSpecs": [
                    {"template": {"spec": {"containers": [{"name": "w", "env": env}]}}}
                ]
            }
        },
    )


def pv(reclaim: Any) -> Record:
    spec: dict[str, Any] = {"csi": {"driver": "lustre.csi.storage.gke.io"}}
    if reclaim is not None:
        spec["persistentVolumeReclaimPolicy"] = reclaim
    return record(PERSISTENT_VOLUME, "lustre-pv", {"spec": spec})


@dataclass
class Case:
    policy: Policy
    compliant: list[Record]
    violating: list[Record]
    message: str
    missing: list[Record]
    override_config: dict[str, Any]
    override_records: list[Record]
    override_violations: int
    unknown: list[Record]
    config: dict[str, Any] | None = field(default=None)


CASES = [
    Case(
        queue.gpu_workloads_queued,
        compliant=[raycluster(QUEUED)],
        violating=[raycluster()],
        message="RayCluster 'ray-cluster': requests nvidia.com/gpu outside the job queue",
        missing=[record("kubernetes:ray.io/v1:RayCluster", "ray-cluster", {})],
        override_config={"exempt": ["ray-cluster"]},
        override_records=[raycluster()],
        override_violations=0,
        unknown=[raycluster({"kueue.x-k8s.io/queue-name": UNKNOWN_VALUE})],
    ),
    Case(
        queue.queue_gpu_quota,
        compliant=[queue_pool(), flavor(ACCEL), cluster_queue(16.0)],
        violating=[queue_pool(), flavor(ACCEL), cluster_queue(24.0)],
        message="promises 24 GPUs on flavor 'gpu-b200', more than its node pools hold",
        missing=[record(CLUSTER_QUEUE, "cq", {"metadata": {"name": "cq"}}), flavor(ACCEL)],
        override_config={"allowOvercommit": 8},
        override_records=[queue_pool(), flavor(ACCEL), cluster_queue(24.0)],
        override_violations=0,
        unknown=[queue_pool(), flavor(ACCEL), cluster_queue(UNKNOWN_VALUE)],
    ),
    Case(
        quota.gpu_quota,
        compliant=[pool()],
        violating=[pool(nodeCount=3.0)],
        message="can scale to 24 NVIDIA_B200_GPUS in us-central1; the quota is 16",
        missing=[record(NODE_POOL, "bare", {})],
        override_config={"quotas": {"NVIDIA_B200_GPUS": 32}},
        override_records=[pool(nodeCount=3.0)],
        override_violations=0,
        unknown=[pool(nodeCount=None, autoscaling={"totalMaxNodeCount": UNKNOWN_VALUE})],
        config={"quotas": {"NVIDIA_B200_GPUS": 16}},
    ),
    Case(
        quota.gpu_reservation_size,
        compliant=[pool()],
        violating=[pool(nodeCount=3.0)],
        message="NodePool 'gpu-pool': can scale to 3 nodes but reservation res-1 holds 2 VMs",
        missing=[record(NODE_POOL, "bare", {"nodeConfig": {}})],
        override_config={"reservations": {"res-1": 4}},
        override_records=[pool(nodeCount=3.0)],
        override_violations=0,
        unknown=[
            pool(
                nodeConfig=node_config(
                    reservationAffinity={"consumeReservationType": UNKNOWN_VALUE}
                )
            )
        ],
        config={"reservations": {"res-1": 2}},
    ),
    Case(
        quota.lustre_capacity_quota,
        compliant=[lustre_instance()],
        violating=[lustre_instance(capacityGib="36000")],
        message="Lustre instances need 36000 GiB; the capacity quota is 18000 GiB",
        missing=[record(LUSTRE, "bare", {})],
        override_config={"quotaGib": None},
        override_records=[lustre_instance()],
        override_violations=1,  # not recorded -> asks for it
        unknown=[lustre_instance(capacityGib=UNKNOWN_VALUE)],
        config={"quotaGib": 18000},
    ),
    Case(
        fw.no_world_ingress,
        compliant=[firewall("fw", "net", ["10.0.0.0/8"])],
        violating=[firewall("fw", "net", ["10.0.0.0/8", "0.0.0.0/0"])],
        message="Firewall 'fw': allows ingress from 0.0.0.0/0",
        missing=[record(FIREWALL, "fw", {})],
        override_config={"exempt": ["fw"]},
        override_records=[firewall("fw", "net", ["0.0.0.0/0"])],
        override_violations=0,
        unknown=[firewall("fw", "net", [UNKNOWN_VALUE])],
    ),
    Case(
        fw.firewall_none_on_roce,
        compliant=[roce(), firewall("fw", "other-net", ["10.0.0.0/8"])],
        violating=[roce(), firewall("fw", "rdma-net", ["192.168.0.0/16"])],
        message="Firewall 'fw': targets a RoCE network",
        missing=[record(NETWORK, "n", {}), record(FIREWALL, "fw", {})],
        override_config={"exempt": ["fw"]},
        override_records=[roce(), firewall("fw", "rdma-net", ["192.168.0.0/16"])],
        override_violations=0,
        unknown=[network("rdma-net", networkProfile=UNKNOWN_VALUE)],
    ),
    Case(
        fw.firewall_gvnic_internal,
        compliant=[*rdma_fabric(), firewall("fw", "gvnic-net", ["192.168.0.0/24"])],
        violating=[*rdma_fabric(), firewall("fw", "gvnic-net", ["10.0.0.0/8"])],
        message="Firewall 'fw': admits 10.0.0.0/8 on the gVNIC network; only 192.168.0.0/16",
        missing=[record(NODE_POOL, "p", {}), record(FIREWALL, "fw", {})],
        override_config={"allowedRange": "10.0.0.0/8"},
        override_records=[*rdma_fabric(), firewall("fw", "gvnic-net", ["10.0.0.0/8"])],
        override_violations=0,
        unknown=[*rdma_fabric(), firewall("fw", "gvnic-net", [UNKNOWN_VALUE])],
    ),
    Case(
        fw.firewall_lustre_psa_only,
        compliant=[psa(), firewall("lnet", "net", ["10.50.0.0/20"], ports=["988"])],
        violating=[psa(), firewall("lnet", "net", ["10.0.0.0/8"], ports=["988"])],
        message="Firewall 'lnet': opens the Lustre port to 10.0.0.0/8, outside every private"
        " services range (10.50.0.0/20)",
        missing=[record(FIREWALL, "fw", {}), record(GLOBAL_ADDRESS, "a", {})],
        override_config={"exempt": ["lnet"]},
        override_records=[psa(), firewall("lnet", "net", ["10.0.0.0/8"], ports=["6988"])],
        override_violations=0,
        unknown=[
            psa(address=UNKNOWN_VALUE),
            firewall("lnet", "net", ["10.50.0.0/20"], ports=["988"]),
        ],
    ),
    Case(
        fw.gke_authorized_networks,
        compliant=[cluster()],
        violating=[
            cluster(masterAuthorizedNetworksConfig={"cidrBlocks": [{"cidrBlock": "0.0.0.0/0"}]})
        ],
        message="Cluster 'gke-cluster': authorizes 0.0.0.0/0 to reach the control plane",
        missing=[
            record(
                CLUSTER, "gke-cluster", {"privateClusterConfig": {"enablePrivateEndpoint": True}}
            )
        ],
        override_config={"allowGcpPublicCidrs": True},
        override_records=[
            cluster(
                masterAuthorizedNetworksConfig={
                    "cidrBlocks": [],
                    "gcpPublicCidrsAccessEnabled": True,
                }
            )
        ],
        override_violations=0,
        unknown=[
            cluster(masterAuthorizedNetworksConfig={"cidrBlocks": [{"cidrBlock": UNKNOWN_VALUE}]})
        ],
    ),
    Case(
        topo.rdma_network_profile,
        compliant=[roce()],
        violating=[
            network(
                "rdma-net",
                networkProfile="projects/p/global/networkProfiles/us-central1-vpc-roce",
                mtu=8896.0,
            )
        ],
        message="RoCE profiles are zonal",
        missing=[record(NETWORK, "n", {})],
        override_config={"mtu": 4096},
        override_records=[network("rdma-net", networkProfile=PROFILE, mtu=4096.0)],
        override_violations=0,
        unknown=[network("rdma-net", networkProfile=UNKNOWN_VALUE)],
    ),
    Case(
        topo.gpu_pool_dranet,
        compliant=[cluster(), dranet_pool()],
        violating=[
            cluster(),
            dranet_pool(
                networkConfig={
                    "acceleratorNetworkProfile": "auto",
                    "additionalNodeNetworkConfigs": [
                        {"network": "rdma-net", "subnetwork": f"rdma-sub-{i}"} for i in range(8)
                    ],
                }
            ),
        ],
        message="NodePool 'gpu-pool': has acceleratorNetworkProfile and 8 additional node networks",
        missing=[record(NODE_POOL, "p", {"networkConfig": {"acceleratorNetworkProfile": "auto"}})],
        override_config={"minGkeVersion": "1.36"},
        override_records=[cluster(minMasterVersion="1.35"), dranet_pool()],
        override_violations=1,
        unknown=[cluster(), dranet_pool(nodeConfig=UNKNOWN_VALUE)],
    ),
    Case(
        topo.gpu_pool_nics,
        compliant=rdma_fabric(),
        violating=rdma_fabric(
            pool(
                networkConfig={
                    "additionalNodeNetworkConfigs": [
                        {"network": "gvnic-net", "subnetwork": "gvnic-sub"}
                    ]
                    + [{"network": "rdma-net", "subnetwork": f"rdma-sub-{i}"} for i in range(8)]
                    + [{"network": "extra-net", "subnetwork": "extra-sub"}]
                }
            )
        ),
        message="NodePool 'gpu-pool': attaches 10 extra networks; a4-highgpu-8g needs exactly 9",
        missing=[
            record(NODE_POOL, "p", {"nodeConfig": {"guestAccelerators": [{"type": "nvidia-b200"}]}})
        ],
        override_config={"gvnicNetworks": 0},
        override_records=rdma_fabric(
            pool(
                networkConfig={
                    "additionalNodeNetworkConfigs": [
                        {"network": "rdma-net", "subnetwork": f"rdma-sub-{i}"} for i in range(8)
                    ]
                }
            )
        ),
        override_violations=0,
        unknown=rdma_fabric(pool(networkConfig={"additionalNodeNetworkConfigs": UNKNOWN_VALUE})),
    ),
    Case(
        topo.gpu_machine_accelerator,
        compliant=[pool()],
        violating=[
            pool(
                nodeConfig=node_config(
                    guestAccelerators=[{"type": "nvidia-h200-141gb", "count": 8.0}]
                )
            )
        ],
        message="runs a4-highgpu-8g with 8 x nvidia-h200-141gb; that machine carries"
        " 8 x nvidia-b200",
        missing=[record(NODE_POOL, "p", {})],
        override_config={
            "extraMachines": {"a4-highgpu-8g": {"type": "nvidia-h200-141gb", "count": 8}}
        },
        override_records=[
            pool(
                nodeConfig=node_config(
                    guestAccelerators=[{"type": "nvidia-h200-141gb", "count": 8.0}]
                )
            )
        ],
        override_violations=0,
        unknown=[pool(nodeConfig=node_config(machineType=UNKNOWN_VALUE))],
    ),
    Case(
        topo.gpu_capacity_sold,
        compliant=[pool(), pool(nodeConfig=node_config(reservationAffinity=None, spot=True))],
        violating=[
            pool(
                nodeConfig=node_config(
                    reservationAffinity={"consumeReservationType": "ANY_RESERVATION"}
                )
            )
        ],
        message="asks for a4-highgpu-8g on demand",
        missing=[record(NODE_POOL, "p", {})],
        override_config={"reservationOnlyFamilies": []},
        override_records=[pool(nodeConfig=node_config(reservationAffinity=None))],
        override_violations=0,
        unknown=[pool(nodeConfig=node_config(machineType=UNKNOWN_VALUE))],
    ),
    Case(
        topo.compact_placement_single_zone,
        compliant=[pool(placementPolicy={"type": "COMPACT"})],
        violating=[
            pool(
                placementPolicy={"type": "COMPACT"},
                nodeLocations=["us-central1-a", "us-central1-b"],
            )
        ],
        message="asks for compact placement across 2 zones",
        missing=[record(NODE_POOL, "p", {"placementPolicy": {"type": "COMPACT"}})],
        override_config={"exempt": ["gpu-pool"]},
        override_records=[pool(placementPolicy={"type": "COMPACT"}, nodeLocations=[])],
        override_violations=0,
        unknown=[pool(placementPolicy={"type": UNKNOWN_VALUE})],
    ),
    Case(
        sec.gke_workload_identity,
        compliant=[cluster(), pool()],
        violating=[pool(nodeConfig=node_config(workloadMetadataConfig={"mode": "GCE_METADATA"}))],
        message="exposes the node metadata (mode GCE_METADATA)",
        missing=[record(CLUSTER, "c", {})],
        override_config={"exempt": ["c"]},
        override_records=[record(CLUSTER, "c", {})],
        override_violations=0,
        unknown=[cluster(workloadIdentityConfig={"workloadPool": UNKNOWN_VALUE})],
    ),
    Case(
        sec.gke_private_nodes,
        compliant=[cluster(), pool()],
        violating=[cluster(privateClusterConfig={"enablePrivateNodes": False})],
        message="gives nodes public IPs",
        missing=[record(CLUSTER, "c", {})],
        override_config={"exempt": ["gke-cluster"]},
        override_records=[cluster(privateClusterConfig={})],
        override_violations=0,
        unknown=[cluster(privateClusterConfig={"enablePrivateNodes": UNKNOWN_VALUE})],
    ),
    Case(
        sec.gke_shielded_nodes,
        compliant=[cluster(), pool()],
        violating=[
            pool(nodeConfig=node_config(shieldedInstanceConfig={"enableSecureBoot": False}))
        ],
        message="boots without Secure Boot",
        missing=[record(CLUSTER, "c", {})],
        override_config={"exempt": ["gpu-pool"]},
        override_records=[pool(nodeConfig=node_config(shieldedInstanceConfig=None))],
        override_violations=0,
        unknown=[
            pool(nodeConfig=node_config(shieldedInstanceConfig={"enableSecureBoot": UNKNOWN_VALUE}))
        ],
    ),
    Case(
        sec.gke_no_legacy_auth,
        compliant=[cluster()],
        violating=[cluster(enableLegacyAbac=True)],
        message="enables legacy ABAC authorization",
        missing=[record(CLUSTER, "c", {})],
        override_config={"exempt": ["gke-cluster"]},
        override_records=[cluster(masterAuth={"username": "admin", "password": "x"})],
        override_violations=0,
        unknown=[cluster(enableLegacyAbac=UNKNOWN_VALUE)],
    ),
    Case(
        sec.gke_node_service_account,
        compliant=[cluster(), pool()],
        violating=[
            pool(
                nodeConfig=node_config(
                    serviceAccount="123456789012-compute@developer.gserviceaccount.com"
                )
            )
        ],
        message="runs nodes as 123456789012-compute@developer.gserviceaccount.com",
        missing=[record(CLUSTER, "c", {})],
        override_config={"exempt": ["gpu-pool"]},
        override_records=[pool(nodeConfig=node_config(serviceAccount=None))],
        override_violations=0,
        unknown=[pool(nodeConfig=node_config(serviceAccount=UNKNOWN_VALUE))],
    ),
    Case(
        sec.gke_node_hardening,
        compliant=[
            pool(),
            pool(
                management={"autoRepair": False, "autoUpgrade": True},
                nodeConfig=node_config(flexStart=True),
            ),
        ],
        violating=[pool(nodeConfig=node_config(imageType="UBUNTU_CONTAINERD"))],
        message="uses image UBUNTU_CONTAINERD; Container-Optimized OS is required",
        missing=[record(NODE_POOL, "p", {})],
        override_config={"exempt": ["gpu-pool"]},
        override_records=[pool(management={"autoRepair": False, "autoUpgrade": False})],
        override_violations=0,
        unknown=[pool(nodeConfig=node_config(imageType=UNKNOWN_VALUE))],
    ),
    Case(
        sec.gke_cluster_hardening,
        compliant=[cluster()],
        violating=[cluster(maintenancePolicy={})],
        message="has no maintenance exclusion, so GKE may recreate GPU nodes mid-run",
        missing=[],
        override_config={"requireMaintenanceExclusion": False},
        override_records=[cluster(maintenancePolicy={})],
        override_violations=0,
        unknown=[cluster(releaseChannel={"channel": UNKNOWN_VALUE})],
    ),
    Case(
        sec.subnet_flow_logs,
        compliant=[roce(), subnet("rdma-sub-0", "rdma-net", logConfig=None), subnet("sub", "net")],
        violating=[subnet("sub", "net", logConfig=None)],
        message="Subnetwork 'sub': has no VPC flow logs",
        missing=[record(SUBNETWORK, "s", {"logConfig": {"x": 1.0}})],
        override_config={"exempt": ["sub"]},
        override_records=[subnet("sub", "net", logConfig=None)],
        override_violations=0,
        unknown=[subnet("sub", "net", logConfig=UNKNOWN_VALUE)],
    ),
    Case(
        sec.k8s_secrets_by_reference,
        compliant=[
            ray_cluster(
                [
                    {
                        "name": "HF_TOKEN",
                        "valueFrom": {"secretKeyRef": {"name": "t", "key": "HF_TOKEN"}},
                    },
                    # Where a mounted Secret's file is, not the secret itself.
                    {"name": "DASHBOARD_TOKEN_FILE", "value": "/var/run/ray-dashboard/token"},
                    {"name": "HF_TOKEN_PATH", "value": "/var/run/secrets/x/HF_TOKEN"},
                ]
            )
        ],
        violating=[ray_cluster([{"name": "HF_TOKEN", "value": "hf_abc"}])],
        message="RayCluster 'ray-cluster': container 'w' sets HF_TOKEN as a literal",
        missing=[record("kubernetes:ray.io/v1:RayCluster", "ray-cluster", {})],
        override_config={"exempt": ["ray-cluster"]},
        override_records=[ray_cluster([{"name": "WANDB_API_KEY", "value": "k"}])],
        override_violations=0,
        unknown=[ray_cluster([{"name": UNKNOWN_VALUE, "value": "v"}])],
    ),
    Case(
        dp.protect_stateful_resources,
        compliant=[cluster(), lustre_instance(), record(BUCKET, "b", {}, protect=True)],
        violating=[record(BUCKET, "data-bucket", {}, protect=False)],
        message="Bucket 'data-bucket': can be deleted by `pulumi destroy`",
        missing=[record(LUSTRE, "l", {}, protect=True)],
        override_config={"required": False},
        override_records=[record(BUCKET, "data-bucket", {}, protect=False)],
        override_violations=0,
        unknown=[record(CLUSTER, "c", {"deletionProtection": UNKNOWN_VALUE}, protect=False)],
    ),
    Case(
        dp.lustre_pv_retain,
        compliant=[pv("Retain")],
        violating=[pv("Delete")],
        message="PersistentVolume 'lustre-pv': reclaims with Delete; a Lustre volume must use"
        " Retain",
        missing=[pv(None), record(PERSISTENT_VOLUME, "x", {})],
        override_config={"exempt": ["lustre-pv"]},
        override_records=[pv("Delete")],
        override_violations=0,
        unknown=[pv(UNKNOWN_VALUE)],
    ),
    Case(
        dp.bucket_no_force_destroy,
        compliant=[record(BUCKET, "b", {"forceDestroy": False})],
        violating=[record(BUCKET, "b", {"forceDestroy": True})],
        message="Bucket 'b': has force_destroy",
        missing=[record(BUCKET, "b", {})],
        override_config={"allowForceDestroy": True},
        override_records=[record(BUCKET, "b", {"forceDestroy": True})],
        override_violations=0,
        unknown=[record(BUCKET, "b", {"forceDestroy": UNKNOWN_VALUE})],
    ),
]
IDS = [c.policy.name for c in CASES]


def test_every_policy_has_a_case_and_a_complete_shape() -> None:
    assert sorted(IDS) == sorted(p.name for p in POLICIES)
    for policy in POLICIES:
        assert policy.name == policy.name.lower()
        assert " " not in policy.name
        assert policy.description.endswith(".")
        assert policy.description.count(". ") == 0
        assert policy.enforcement_level is not None
        assert policy.remediation_steps
        schema = policy.config_schema
        assert schema is not None
        assert "exempt" in schema.properties
        assert all("default" in spec for spec in schema.properties.values())


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_compliant(case: Case) -> None:
    assert run(case.policy, case.compliant, case.config) == []


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_violating(case: Case) -> None:
    violations = run(case.policy, case.violating, case.config)
    assert violations, f"{case.policy.name} found nothing"
    assert any(case.message in v.message for v in violations), [v.message for v in violations]
    level = case.policy.enforcement_level
    assert level is not None
    assert all(v.enforcement_level == level.value for v in violations)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_missing_properties_are_safe(case: Case) -> None:
    violations = run(case.policy, case.missing, case.config)
    assert all("during preview" not in v.message for v in violations)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_config_override(case: Case) -> None:
    config = {**(case.config or {}), **case.override_config}
    assert len(run(case.policy, case.override_records, config)) == case.override_violations


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_unknown_at_preview_is_an_advisory_note(case: Case) -> None:
    violations = run(case.policy, case.unknown, case.config)
    assert violations, "reading an unknown value must not pass silently"
    assert all(v.enforcement_level == "advisory" for v in violations)
    assert all("during preview" in v.message for v in violations)


def test_gpu_pool_must_sit_in_the_roce_profiles_zone() -> None:
    elsewhere = pool(nodeLocations=["us-central1-c"])
    violations = run(topo.gpu_pool_nics, rdma_fabric(elsewhere))
    assert [v.message for v in violations] == [
        "NodePool 'gpu-pool': runs in us-central1-c but RoCE network rdma-net is pinned to"
        " us-central1-b by its profile; RDMA works only inside that zone"
    ]


def test_roce_network_needs_one_subnet_per_nic() -> None:
    violations = run(topo.gpu_pool_nics, rdma_fabric(subnets=7))
    assert any("has 7 subnets; a4-highgpu-8g has 8 RDMA NICs" in v.message for v in violations)


@pytest.mark.parametrize(
    "network_config",
    [
        # the GPU pool's block before private nodes were set explicitly: the provider sends
        # enablePrivateNodes false with it, overriding the cluster
        {"additionalNodeNetworkConfigs": [{"network": "gvnic-net", "subnetwork": "gvnic-sub"}]},
        {"enablePrivateNodes": False},
        None,
    ],
)
def test_a_pool_that_does_not_say_private_nodes_is_stopped(
    network_config: dict[str, Any] | None,
) -> None:
    violations = run(sec.gke_private_nodes, [cluster(), pool(networkConfig=network_config)])
    assert [v.message for v in violations] == [
        "NodePool 'gpu-pool': gives its nodes public IPs unless networkConfig.enablePrivateNodes"
        " is true (the provider sends false for a pool that leaves it out, overriding the"
        " cluster)"
    ]
    assert violations[0].enforcement_level == "mandatory"


def test_gpu_policies_take_machine_shapes_from_the_catalog() -> None:
    """A new catalog row needs no policy edit: machine, accelerator, GPU count and how the
    machine is sold come from planning.catalog."""
    for row in GPU_CATALOG.values():
        shape = (row.accelerator_type, row.gpus_per_node)
        assert topo.MACHINE_ACCELERATORS[row.machine_type] == shape
        on_demand = "on-demand" in row.capacity_types
        assert (machine_family(row.machine_type) in topo.RESERVATION_ONLY_FAMILIES) != on_demand
    schema = topo.gpu_capacity_sold.config_schema
    assert schema is not None
    assert schema.properties["reservationOnlyFamilies"]["default"] == topo.RESERVATION_ONLY_FAMILIES


def test_an_h200_pool_needs_the_nics_its_catalog_row_names() -> None:
    h200 = GPU_CATALOG["h200"]
    a3u = pool(
        nodeConfig=node_config(
            machineType=h200.machine_type,
            guestAccelerators=[{"type": h200.accelerator_type, "count": 8.0}],
        )
    )
    assert run(topo.gpu_pool_nics, rdma_fabric(a3u)) == []


@pytest.mark.parametrize("stack", ["dev", "b200", "h200"])
def test_committed_policy_configs_name_the_catalog_s_quota_metrics(stack: str) -> None:
    """The committed quotas are the project's numbers; their names must be metrics the catalog
    (and so the gpu-quota policy) counts GPUs under, or the quota would never be compared."""
    path = Path(__file__).resolve().parents[2] / "policies" / "config" / f"{stack}.json"
    quotas = json.loads(path.read_text(encoding="utf-8"))["gpu-quota"]["quotas"]
    metrics = {"GPUS_ALL_REGIONS"}
    for row in GPU_CATALOG.values():
        metrics |= {row.quota_metric, row.preemptible_quota_metric}
    assert set(quotas) <= metrics


@pytest.mark.parametrize(
    ("records", "message"),
    [
        (
            [cluster(), dranet_pool(nodeConfig=node_config())],
            "not the node label cloud.google.com/gke-networking-dra-driver=true",
        ),
        (
            [cluster(datapathProvider="LEGACY_DATAPATH"), dranet_pool()],
            "managed DRANET needs Dataplane V2 (ADVANCED_DATAPATH)",
        ),
        (
            [cluster(minMasterVersion="1.33"), dranet_pool()],
            "older than 1.34.1-gke.1829001",
        ),
        (
            [
                cluster(),
                dranet_pool(
                    nodeConfig=node_config(
                        machineType="g2-standard-16",
                        guestAccelerators=[{"type": "nvidia-l4", "count": 1.0}],
                    )
                ),
            ],
            "asks GKE to manage RDMA networks for nvidia-l4, which has no RDMA NICs",
        ),
    ],
)
def test_dranet_pool_rules(records: list[Record], message: str) -> None:
    violations = run(topo.gpu_pool_dranet, records)
    assert any(message in v.message for v in violations), [v.message for v in violations]


def test_a_dranet_pool_is_not_judged_by_its_missing_networks() -> None:
    # gpu-pool-nics would ask for 9 networks; the DRANET pool attaches none on purpose.
    assert run(topo.gpu_pool_nics, [cluster(), dranet_pool()]) == []
    assert run(topo.gpu_pool_nics, [cluster(), pool(networkConfig={})]) != []


def test_world_open_is_judged_on_coverage_not_text() -> None:
    from policies.firewall import gke_authorized_networks, no_world_ingress

    halves = [{"cidrBlock": "0.0.0.0/1"}, {"cidrBlock": "128.0.0.0/1"}]
    split = cluster(masterAuthorizedNetworksConfig={"cidrBlocks": halves})
    (violation,) = run(gke_authorized_networks, [split])
    assert "together cover 0.0.0.0/0" in violation.message
    near = cluster(masterAuthorizedNetworksConfig={"cidrBlocks": halves[:1]})
    assert run(gke_authorized_networks, [near]) == []
    v6 = [{"cidrBlock": "::/1"}, {"cidrBlock": "8000::/1"}]
    assert run(
        gke_authorized_networks, [cluster(masterAuthorizedNetworksConfig={"cidrBlocks": v6})]
    )
    rule = record(
        "gcp:compute/firewall:Firewall",
        "fw",
        {
            "direction": "INGRESS",
            "allows": [{"protocol": "tcp"}],
            "sourceRanges": ["0.0.0.0/2", "64.0.0.0/2", "128.0.0.0/1"],
        },
    )
    (violation,) = run(no_world_ingress, [rule])
    assert "0.0.0.0/0 (ranges that together cover it)" in violation.message
