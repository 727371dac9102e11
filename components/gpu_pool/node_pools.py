"""GKE node pools: the CPU system pool and the GPU pool built from the GPU catalog."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import pulumi
import pulumi_gcp as gcp

from components.cluster import CLOUD_PLATFORM
from planning.catalog import Capacity, GpuProfile
from planning.cluster import SYSTEM_POOL
from planning.kube import ACCELERATOR_LABEL, GPU_TAINT_KEY
from planning.network import GPU_MAX_PODS_PER_NODE
from planning.rdma import ACCELERATOR_NETWORK_PROFILE, DRA_DRIVER_LABEL

RESERVATION_KEY = "compute.googleapis.com/reservation-name"
GPU_POOL_IGNORED_DRIFT = ("nodeConfig.ephemeralStorageLocalSsdConfig", "initialNodeCount")
"""Fields of a GPU pool that force its replacement and that the API reports back unreliably
(Cluster Toolkit's `modules/compute/gke-node-pool` ignores the same drift). A spurious diff on
either would delete and recreate a reserved B200/H200 pool - nodes, reservation slot and any run
on them - so drift there is ignored; change them on purpose with a new pool."""
GPU_POOL_FIXED_AT_CREATION = ("maxPodsPerNode",)
"""Inputs of a GPU pool that GKE fixes when the pool is created (a change replaces the pool)
and whose default this program changed: pools created before keep what they have (GKE's 110
pods per node) rather than be deleted and recreated with their reservation and any run on
them. A new value takes effect with a new pool."""
POOL_LABEL = "nemo-rl-gke/pool"
PRIVATE_NODES = True
"""Every pool says `networkConfig.enablePrivateNodes` itself. A pool's `networkConfig` block
without it is sent with `false` (Terraform's `expandNodeNetworkConfig`), which overrides the
cluster's private nodes: the nodes get external IPs, bypass Cloud NAT, and cannot be created at
all under `constraints/compute.vmExternalIpAccess` (Cluster Toolkit sets it since its PR #4682).
An in-place update on existing pools."""


def hardened_node_config(
    service_account: pulumi.Input[str], labels: Mapping[str, str]
) -> gcp.container.NodePoolNodeConfigArgsDict:
    """Settings every pool shares: COS, shielded boot, GKE metadata server, scoped SA, gVNIC."""
    return {
        # COS is required for GPUDirect RDMA and the Lustre CSI driver.
        "image_type": "COS_CONTAINERD",
        "service_account": service_account,
        "oauth_scopes": [CLOUD_PLATFORM],
        "shielded_instance_config": {
            "enable_secure_boot": True,
            "enable_integrity_monitoring": True,
        },
        # Pods see only the GKE metadata server: Workload Identity, no node credentials.
        "workload_metadata_config": {"mode": "GKE_METADATA"},
        "gvnic": {"enabled": True},
        "resource_labels": dict(labels),
    }


@dataclass(frozen=True, kw_only=True)
class SystemNodePoolArgs:
    """Inputs of the CPU pool for the Ray head, KubeRay and add-ons."""

    cluster_id: pulumi.Input[str]
    region: str
    zone: str
    service_account: pulumi.Input[str]
    machine_type: str
    min_nodes: int
    max_nodes: int
    disk_gb: int
    version: str | None = None
    """Full GKE version of the nodes; None: the version they were created at, never moved by
    this program (the maintenance exclusion keeps GKE from moving them too)."""
    labels: Mapping[str, str] = field(default_factory=dict)


class SystemNodePool(pulumi.ComponentResource):
    """Autoscaling CPU pool in the GPU zone (next to Lustre and the GPU nodes)."""

    pool_name: pulumi.Output[str]
    """GKE name of the pool."""
    node_selector: pulumi.Output[dict[str, str]]
    """Selector that lands a pod on this pool (for the Ray head and the operator)."""

    def __init__(
        self, name: str, args: SystemNodePoolArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("nemo:gke:SystemNodePool", name, None, opts)
        pool = gcp.container.NodePool(
            f"{name}-pool",
            name=SYSTEM_POOL,
            cluster=args.cluster_id,
            location=args.region,
            node_locations=[args.zone],
            initial_node_count=args.min_nodes,
            version=args.version,
            autoscaling=gcp.container.NodePoolAutoscalingArgs(
                total_min_node_count=args.min_nodes,
                total_max_node_count=args.max_nodes,
                location_policy="BALANCED",
            ),
            management=gcp.container.NodePoolManagementArgs(auto_repair=True, auto_upgrade=True),
            upgrade_settings=gcp.container.NodePoolUpgradeSettingsArgs(
                strategy="SURGE", max_surge=1, max_unavailable=0
            ),
            network_config=gcp.container.NodePoolNetworkConfigArgs(
                enable_private_nodes=PRIVATE_NODES
            ),
            node_config={
                **hardened_node_config(args.service_account, args.labels),
                "machine_type": args.machine_type,
                "disk_type": "pd-balanced",
                "disk_size_gb": args.disk_gb,
                "labels": {POOL_LABEL: "system"},
            },
            # initialNodeCount only sizes the pool at creation (the autoscaler owns the count
            # afterwards) and it is ForceNew: without this, editing cluster.systemPool.min
            # would recreate the pool that runs the Ray head and KubeRay.
            opts=pulumi.ResourceOptions(parent=self, ignore_changes=["initialNodeCount"]),
        )
        self.pool_name = pool.name
        self.node_selector = pulumi.Output.from_input({POOL_LABEL: "system"})
        self.register_outputs({"pool_name": self.pool_name, "node_selector": self.node_selector})


@dataclass(frozen=True, kw_only=True)
class GpuNodePoolArgs:
    """Inputs of the GPU pool. Mirrors Cluster Toolkit's `modules/compute/gke-node-pool`."""

    cluster_id: pulumi.Input[str]
    region: str
    zone: str
    gpu: GpuProfile
    service_account: pulumi.Input[str]
    capacity: Capacity
    nodes: int | None
    """Fixed size (exclusive with autoscaling)."""
    autoscaling: tuple[int, int] | None
    """(min, max) nodes."""
    reservation: str | None
    reservation_project: str | None
    """Project the affinity value is qualified with (`projects/P/reservations/...`); None
    sends the short form, which only a whole reservation of the pool's project takes."""
    placement: Literal["compact", "none"]
    driver_version: Literal["DEFAULT", "LATEST"]
    additional_networks: pulumi.Input[list[dict[str, str]]]
    """`[{network, subnetwork}]` in NIC order, straight from the network components."""
    dranet: bool = False
    """GKE manages the RDMA networks (acceleratorNetworkProfile auto) and runs its networking
    DRA driver on the nodes; `additional_networks` must then be empty."""
    version: str | None = None
    """Full GKE version of the GPU nodes; None: the version they were created at. GKE moves a
    pool to a new version by recreating its nodes under the upgrade settings."""
    after: Sequence[pulumi.Resource] = ()
    """What the pool waits for, on create and on every update (the system pool: an upgrade
    moves the GPU nodes last)."""
    max_pods_per_node: int = GPU_MAX_PODS_PER_NODE
    """Pods per node: the node's block of the pods range (32 -> a /26)."""
    disk_gb: int = 500
    labels: Mapping[str, str] = field(default_factory=dict)
    queued_provisioning: bool = False
    """Flex-start behind the job queue: nodes come only through ProvisioningRequests (GKE's
    queued provisioning, DWS), all of a workload's nodes at once."""
    timeout_minutes: int = 60
    """How long Pulumi waits for the pool's create, update and delete
    (planning.cluster.gpu_pool_timeout_minutes)."""

    def __post_init__(self) -> None:
        if (self.nodes is None) == (self.autoscaling is None):
            raise pulumi.InputPropertyError("nodes", "set exactly one of nodes or autoscaling")
        if (self.capacity == "reservation") != (self.reservation is not None):
            raise pulumi.InputPropertyError(
                "reservation", "a reservation is used exactly when capacity is reservation"
            )
        if self.capacity == "flex-start" and (self.autoscaling is None or self.autoscaling[0]):
            raise pulumi.InputPropertyError("autoscaling", "flex-start pools scale from 0")
        if self.queued_provisioning and (
            self.capacity != "flex-start" or self.placement == "compact"
        ):
            # GKE: queued provisioning needs no reservation, autoscaling from 0 and no compact
            # placement (Cluster Toolkit's gke-node-pool preconditions).
            raise pulumi.InputPropertyError(
                "queued_provisioning", "only for flex-start pools without compact placement"
            )


def reservation_value(name: str, owner_project: str | None) -> str:
    """Value of the reservation-name affinity key: short, or qualified by `owner_project`."""
    if owner_project:
        return f"projects/{owner_project}/reservations/{name}"
    return name


def reservation_affinity(
    capacity: Capacity, reservation: str | None, owner_project: str | None
) -> gcp.container.NodePoolNodeConfigReservationAffinityArgsDict:
    """Specific reservation, or explicitly none: Spot and flex-start VMs cannot consume any."""
    if capacity == "reservation" and reservation:
        return {
            "consume_reservation_type": "SPECIFIC_RESERVATION",
            "key": RESERVATION_KEY,
            "values": [reservation_value(reservation, owner_project)],
        }
    if capacity == "on-demand":
        return {"consume_reservation_type": "ANY_RESERVATION"}
    return {"consume_reservation_type": "NO_RESERVATION"}


class GpuNodePool(pulumi.ComponentResource):
    """The GPU node pool: catalog machine shape, capacity model and the extra NICs in order."""

    pool_name: pulumi.Output[str]
    """GKE name of the pool."""
    node_selector: pulumi.Output[dict[str, str]]
    """Selector on the accelerator label, for GPU workloads."""
    tolerations: pulumi.Output[list[dict[str, str]]]
    """Toleration for the pool's `nvidia.com/gpu` taint."""
    gpus_per_node: pulumi.Output[int]
    """GPUs on each node (the whole node is one Ray worker)."""

    def __init__(
        self, name: str, args: GpuNodePoolArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("nemo:gke:GpuNodePool", name, None, opts)
        gpu = args.gpu
        flex = args.capacity == "flex-start"
        # A reservation has no spare VMs, so an upgrade must replace nodes in place rather
        # than surge; other capacity can borrow one extra node.
        in_place = args.capacity == "reservation"
        upgrade = gcp.container.NodePoolUpgradeSettingsArgs(
            strategy="SURGE", max_surge=0 if in_place else 1, max_unavailable=1 if in_place else 0
        )
        autoscaling = (
            gcp.container.NodePoolAutoscalingArgs(
                total_min_node_count=args.autoscaling[0],
                total_max_node_count=args.autoscaling[1],
                location_policy="ANY" if args.capacity in ("spot", "flex-start") else "BALANCED",
            )
            if args.autoscaling is not None
            else None
        )
        pool = gcp.container.NodePool(
            f"{name}-pool",
            name=f"gpu-{gpu.key}",
            cluster=args.cluster_id,
            location=args.region,
            node_locations=[args.zone],
            version=args.version,
            # Fixed pools pin node_count; autoscaled pools start at their minimum and leave
            # the count to the autoscaler.
            node_count=args.nodes,
            initial_node_count=args.autoscaling[0] if args.autoscaling is not None else None,
            autoscaling=autoscaling,
            # Flex-start nodes are reclaimed at the end of their run; repairing them would
            # request new capacity behind the scheduler's back.
            management=gcp.container.NodePoolManagementArgs(
                auto_repair=not flex, auto_upgrade=True
            ),
            upgrade_settings=upgrade,
            max_pods_per_node=args.max_pods_per_node,
            placement_policy=gcp.container.NodePoolPlacementPolicyArgs(type="COMPACT")
            if args.placement == "compact"
            else None,
            queued_provisioning=gcp.container.NodePoolQueuedProvisioningArgs(enabled=True)
            if args.queued_provisioning
            else None,
            network_config=gcp.container.NodePoolNetworkConfigArgs(
                enable_private_nodes=PRIVATE_NODES,
                # Immutable in GKE and ForceNew in the provider: a switch replaces the pool.
                accelerator_network_profile=ACCELERATOR_NETWORK_PROFILE if args.dranet else None,
                additional_node_network_configs=pulumi.Output.from_input(
                    args.additional_networks
                ).apply(
                    lambda nets: [
                        gcp.container.NodePoolNetworkConfigAdditionalNodeNetworkConfigArgs(
                            network=n["network"], subnetwork=n["subnetwork"]
                        )
                        for n in nets
                    ]
                ),
            ),
            node_config=self._node_config(args),
            opts=pulumi.ResourceOptions(
                parent=self,
                ignore_changes=[*GPU_POOL_IGNORED_DRIFT, *GPU_POOL_FIXED_AT_CREATION],
                # A replacement must free the reservation before the new pool asks for it: a
                # reservation has no room for a second pool's nodes (create-first would wait
                # for capacity that only the old pool's deletion gives back).
                delete_before_replace=True,
                depends_on=list(args.after),
                custom_timeouts=pulumi.CustomTimeouts(
                    create=f"{args.timeout_minutes}m",
                    update=f"{args.timeout_minutes}m",
                    delete=f"{args.timeout_minutes}m",
                ),
            ),
        )
        self.pool_name = pool.name
        self.node_selector = pulumi.Output.from_input({ACCELERATOR_LABEL: gpu.accelerator_type})

        self.tolerations = pulumi.Output.from_input(
            [{"key": GPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}]
        )
        self.gpus_per_node = pulumi.Output.from_input(gpu.gpus_per_node)
        self.register_outputs(
            {
                "pool_name": self.pool_name,
                "node_selector": self.node_selector,
                "tolerations": self.tolerations,
                "gpus_per_node": self.gpus_per_node,
            }
        )

    @staticmethod
    def _node_config(args: GpuNodePoolArgs) -> gcp.container.NodePoolNodeConfigArgsDict:
        gpu = args.gpu
        config: gcp.container.NodePoolNodeConfigArgsDict = {
            **hardened_node_config(args.service_account, args.labels),
            "machine_type": gpu.machine_type,
            # A3 Ultra and A4 boot only from Hyperdisk (hyperdisk-balanced).
            "disk_type": gpu.boot_disk_type,
            "disk_size_gb": args.disk_gb,
            "guest_accelerators": [
                {
                    "type": gpu.accelerator_type,
                    "count": gpu.gpus_per_node,
                    "gpu_driver_installation_config": {"gpu_driver_version": args.driver_version},
                }
            ],
            "reservation_affinity": reservation_affinity(
                args.capacity, args.reservation, args.reservation_project
            ),
            "taints": [{"key": GPU_TAINT_KEY, "value": "present", "effect": "NO_SCHEDULE"}],
            "labels": {POOL_LABEL: "gpu", **({DRA_DRIVER_LABEL: "true"} if args.dranet else {})},
        }
        if gpu.local_ssds:
            config["ephemeral_storage_local_ssd_config"] = {"local_ssd_count": gpu.local_ssds}
        if args.capacity == "spot":
            config["spot"] = True
        if args.capacity == "flex-start":
            config["flex_start"] = True
        return config
