"""GKE Standard cluster for GPU training: private nodes, multi-networking, Workload Identity."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_gcp as gcp

from planning.kube import exec_kubeconfig, get_credentials_command
from planning.naming import role_slug

NODE_SA_ROLES = (
    # The predefined least-privilege role GKE documents for node service accounts (logging,
    # monitoring, metadata); it replaces the Compute Engine default account's Editor role.
    "roles/container.defaultNodeServiceAccount",
    # Pull images from the project's Artifact Registry (nvcr.io and public AR need nothing).
    "roles/artifactregistry.reader",
)
CLOUD_PLATFORM = "https://www.googleapis.com/auth/cloud-platform"
MONITORING_COMPONENTS = (
    # GKE's own system metrics (the managed default).
    "SYSTEM_COMPONENTS",
    # Per-pod CPU, memory, restarts and status: the Ray head and each worker pod.
    "POD",
    # Node and container resource use as the kubelet and cAdvisor see them (Ray workers'
    # memory pressure, /dev/shm, throttling); GKE 1.29.3-gke.1093000 or later.
    "KUBELET",
    "CADVISOR",
    # PersistentVolume use: the Lustre or bucket claim mounted at /data.
    "STORAGE",
    # GPU utilisation, memory, temperature, XID errors from NVIDIA DCGM.
    "DCGM",
)
"""What a platform engineer reads about Ray workers in Cloud Monitoring (pulumi-gcp 10.2.0
`ClusterMonitoringConfig.enableComponents`). An in-place update of an existing cluster."""


@dataclass(frozen=True, kw_only=True)
class AuthorizedCidr:
    """One control-plane authorized network."""

    name: str
    cidr: str


@dataclass(frozen=True, kw_only=True)
class MaintenancePlan:
    """Recurring window plus an optional exclusion until end of support."""

    window_start: str
    window_end: str
    recurrence: str
    exclusion_scope: str | None
    """None: no exclusion. Otherwise NO_UPGRADES | NO_MINOR_UPGRADES | NO_MINOR_OR_NODE_UPGRADES."""
    exclusion_start: str
    exclusion_end: str | None = None
    """None: until the version's end of support (minor scopes only); else this RFC 3339 time."""


@dataclass(frozen=True, kw_only=True)
class GkeClusterArgs:
    """Inputs of the cluster. Mirrors Cluster Toolkit's `modules/scheduler/gke-cluster`."""

    project: str
    region: str
    zone: str
    """The GPU zone: where the temporary default pool (and, by default, every pool) starts."""
    name: str
    node_service_account_id: str
    network: pulumi.Input[str]
    subnetwork: pulumi.Input[str]
    pods_range_name: pulumi.Input[str]
    services_range_name: pulumi.Input[str]
    release_channel: str
    min_version: str
    authorized_networks: Sequence[AuthorizedCidr]
    dns_endpoint: bool = True
    """Reach the control plane on GKE's DNS-based endpoint (`gke-....<region>.gke.goog`),
    authorized by IAM (`container.clusters.connect`) instead of by source address: a CI
    runner without a fixed address reaches it. The IP endpoint stays, for the authorized
    networks. False: the IP endpoint only (the authorized networks must include whoever runs
    `pulumi up`)."""
    maintenance: MaintenancePlan
    lustre_csi: bool
    """Enable the Managed Lustre CSI driver add-on."""
    multi_networking: bool = True
    """GKE's multi-network API for the GPU nodes' extra NICs. A node pool uses either it or
    DRANET (exclusive per pool, as Cluster Toolkit enforces it); off only on a cluster created
    for DRANET, kept on by one that switched (program.guard.MULTI_NETWORKING)."""
    lustre_single_nic: bool = False
    """Turn the Lustre CSI driver's multi-NIC mode off: from GKE 1.35.2-gke.1842000 it uses all
    of a node's standard NICs and requires them to be in one VPC (Managed Lustre docs, "Same
    VPC"), but GPU nodes' eth1 is in the gVNIC VPC, which has no private services access to
    Lustre. Set when a pool has NICs outside the cluster VPC."""
    legacy_lustre_port: bool
    """LNet on 6988: required exactly when the Lustre instance has GKE support."""
    gke_ray_addon: bool
    """GKE's managed Ray operator instead of the KubeRay Helm release (never both)."""
    protect: bool
    labels: Mapping[str, str] = field(default_factory=dict)
    apis: Sequence[pulumi.Resource] = ()
    """What enables the APIs this component calls (the project's `projects.Service`s)."""

    def __post_init__(self) -> None:
        if self.legacy_lustre_port and not self.lustre_csi:
            raise pulumi.InputPropertyError(
                "legacy_lustre_port", "the legacy Lustre port needs the Lustre CSI driver"
            )


class GkeCluster(pulumi.ComponentResource):
    """Regional GKE Standard cluster with a dedicated node service account.

    Dataplane V2 and multi-networking carry the GPU nodes' extra NICs; nodes are private and
    the control plane answers only the authorized networks; the default node pool is removed
    so every pool is declared (and protected from drift) explicitly.
    """

    name: pulumi.Output[str]
    """GKE cluster name."""
    location: pulumi.Output[str]
    """Control-plane location (the region)."""
    cluster_id: pulumi.Output[str]
    """`projects/<p>/locations/<region>/clusters/<name>`, for node pools."""
    kubeconfig: pulumi.Output[str]
    """Exec-plugin kubeconfig (secret): no credential inside, `gke-gcloud-auth-plugin` at use."""
    node_service_account_email: pulumi.Output[str]
    """Email of the least-privilege node service account every pool runs as. Spelled out from
    the account id (known during a first preview, so policies can judge it); pools that use it
    also depend on the cluster, which waits for the account and its roles."""
    get_credentials_command: pulumi.Output[str]
    """`gcloud container clusters get-credentials ...` for this cluster."""
    workload_pool: pulumi.Output[str]
    """Workload Identity pool `<project>.svc.id.goog`."""

    def __init__(
        self, name: str, args: GkeClusterArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("nemo:gke:Cluster", name, None, opts)
        # The account and its roles need IAM and Resource Manager; the cluster waits for them
        # and for everything in `apis` (GKE, Compute, Monitoring, Logging).
        child = pulumi.ResourceOptions(parent=self, depends_on=list(args.apis))

        account = gcp.serviceaccount.Account(
            f"{name}-nodes",
            account_id=args.node_service_account_id,
            display_name=f"GKE nodes of {args.name} (least privilege)",
            project=args.project,
            opts=child,
        )
        roles = [
            gcp.projects.IAMMember(
                f"{name}-nodes-{role_slug(role)}",
                project=args.project,
                role=role,
                member=account.member,
                opts=child,
            )
            for role in NODE_SA_ROLES
        ]
        # The email GCP gives the account, written out so that it is known before the account
        # exists; the explicit dependencies below keep the order the Output would have given.
        node_email = f"{args.node_service_account_id}@{args.project}.iam.gserviceaccount.com"

        workload_pool = f"{args.project}.svc.id.goog"
        m = args.maintenance
        exclusions = (
            [
                gcp.container.ClusterMaintenancePolicyMaintenanceExclusionArgs(
                    exclusion_name="protect-training",
                    start_time=m.exclusion_start,
                    # An end time, or GKE's "until end of support" (not for NO_UPGRADES).
                    end_time=m.exclusion_end,
                    exclusion_options=gcp.container.ClusterMaintenancePolicyMaintenanceExclusionExclusionOptionsArgs(
                        scope=m.exclusion_scope,
                        end_time_behavior=None if m.exclusion_end else "UNTIL_END_OF_SUPPORT",
                    ),
                )
            ]
            if m.exclusion_scope
            else []
        )
        cluster = gcp.container.Cluster(
            f"{name}-cluster",
            name=args.name,
            project=args.project,
            location=args.region,
            description="nemo-rl-gke: NeMo RL training platform",
            network=args.network,
            subnetwork=args.subnetwork,
            networking_mode="VPC_NATIVE",
            ip_allocation_policy=gcp.container.ClusterIpAllocationPolicyArgs(
                cluster_secondary_range_name=args.pods_range_name,
                services_secondary_range_name=args.services_range_name,
            ),
            # Multi-networking (the GPU nodes' gVNIC and RDMA NICs) and managed DRANET both
            # require Dataplane V2.
            datapath_provider="ADVANCED_DATAPATH",
            enable_multi_networking=args.multi_networking,
            # Every pool is declared explicitly; the default pool would run as the Compute
            # default service account and drift outside Pulumi.
            remove_default_node_pool=True,
            initial_node_count=1,
            # A regional cluster otherwise starts its temporary default pool in the region's
            # default zones (three nodes, in zones that may lack quota or be stocked out);
            # pinned, it starts one node in the GPU zone, where every pool of the stack lives
            # (Cluster Toolkit's gke-cluster pins its zones too). Changing the locations of an
            # existing cluster moves every pool without locations of its own and is not what
            # this pin is for, so it applies to new clusters only (ignore_changes below).
            node_locations=[args.zone],
            node_config=gcp.container.ClusterNodeConfigArgs(
                service_account=node_email,
                oauth_scopes=[CLOUD_PLATFORM],
                shielded_instance_config=gcp.container.ClusterNodeConfigShieldedInstanceConfigArgs(
                    enable_secure_boot=True, enable_integrity_monitoring=True
                ),
                workload_metadata_config=gcp.container.ClusterNodeConfigWorkloadMetadataConfigArgs(
                    mode="GKE_METADATA"
                ),
            ),
            release_channel=gcp.container.ClusterReleaseChannelArgs(channel=args.release_channel),
            min_master_version=args.min_version,
            workload_identity_config=gcp.container.ClusterWorkloadIdentityConfigArgs(
                workload_pool=workload_pool
            ),
            private_cluster_config=gcp.container.ClusterPrivateClusterConfigArgs(
                enable_private_nodes=True,
                # Public endpoint, but only for the authorized networks below, so `pulumi up`
                # can reach the API server from CI or a workstation.
                enable_private_endpoint=False,
            ),
            # The DNS endpoint exists on every cluster; this says whether it takes traffic from
            # outside Google (IAM still decides who). False keeps it closed, GKE's default.
            control_plane_endpoints_config=gcp.container.ClusterControlPlaneEndpointsConfigArgs(
                dns_endpoint_config=gcp.container.ClusterControlPlaneEndpointsConfigDnsEndpointConfigArgs(
                    allow_external_traffic=args.dns_endpoint
                )
            ),
            master_authorized_networks_config=gcp.container.ClusterMasterAuthorizedNetworksConfigArgs(
                cidr_blocks=[
                    gcp.container.ClusterMasterAuthorizedNetworksConfigCidrBlockArgs(
                        display_name=n.name, cidr_block=n.cidr
                    )
                    for n in args.authorized_networks
                ],
                gcp_public_cidrs_access_enabled=False,
            ),
            enable_shielded_nodes=True,
            enable_legacy_abac=False,
            master_auth=gcp.container.ClusterMasterAuthArgs(
                client_certificate_config=gcp.container.ClusterMasterAuthClientCertificateConfigArgs(
                    issue_client_certificate=False
                )
            ),
            addons_config=gcp.container.ClusterAddonsConfigArgs(
                lustre_csi_driver_config=gcp.container.ClusterAddonsConfigLustreCsiDriverConfigArgs(
                    enabled=args.lustre_csi,
                    enable_legacy_lustre_port=args.legacy_lustre_port,
                    disable_multi_nic=True if args.lustre_csi and args.lustre_single_nic else None,
                ),
                gcs_fuse_csi_driver_config=gcp.container.ClusterAddonsConfigGcsFuseCsiDriverConfigArgs(
                    enabled=True
                ),
                ray_operator_configs=[
                    gcp.container.ClusterAddonsConfigRayOperatorConfigArgs(enabled=True)
                ]
                if args.gke_ray_addon
                else None,
            ),
            # GPU and Ray worker observability (MONITORING_COMPONENTS), DCGM through Google Cloud
            # Managed Service for Prometheus.
            monitoring_config=gcp.container.ClusterMonitoringConfigArgs(
                enable_components=list(MONITORING_COMPONENTS),
                managed_prometheus=gcp.container.ClusterMonitoringConfigManagedPrometheusArgs(
                    enabled=True
                ),
            ),
            logging_config=gcp.container.ClusterLoggingConfigArgs(
                enable_components=["SYSTEM_COMPONENTS", "WORKLOADS"]
            ),
            # Training survives maintenance: GKE maintains only inside the window, and the
            # exclusion keeps minor and node upgrades (which recreate GPU nodes) away until
            # the version's end of support.
            maintenance_policy=gcp.container.ClusterMaintenancePolicyArgs(
                recurring_window=gcp.container.ClusterMaintenancePolicyRecurringWindowArgs(
                    start_time=m.window_start, end_time=m.window_end, recurrence=m.recurrence
                ),
                maintenance_exclusions=exclusions,
            ),
            cost_management_config=gcp.container.ClusterCostManagementConfigArgs(enabled=True),
            deletion_protection=args.protect,
            resource_labels=dict(args.labels),
            opts=pulumi.ResourceOptions(
                parent=self,
                protect=args.protect,
                # node_config only shapes the removed default pool; GKE reports it back
                # differently, and a change would force a new cluster.
                # node_locations: stacks created before the pin keep their locations.
                ignore_changes=["nodeConfig", "nodeLocations"],
                # Nodes (the default pool's, then every pool's: pools hang off the cluster) must
                # start with the account and its roles in place, or they come up unable to
                # write logs or pull images.
                depends_on=[account, *roles, *args.apis],
            ),
        )

        self.name = cluster.name
        self.location = cluster.location
        self.cluster_id = cluster.id
        self.node_service_account_email = pulumi.Output.from_input(node_email)
        self.workload_pool = pulumi.Output.from_input(workload_pool)
        if args.dns_endpoint:
            # The DNS name GKE gives the cluster; its certificate is publicly trusted.
            dns_name = cluster.control_plane_endpoints_config.apply(
                lambda c: (
                    (c.dns_endpoint_config.endpoint if c and c.dns_endpoint_config else "") or ""
                )
            )
            kubeconfig = pulumi.Output.all(cluster.name, dns_name).apply(
                lambda v: exec_kubeconfig(v[0], v[1], None)
            )
        else:
            kubeconfig = pulumi.Output.all(
                cluster.name, cluster.endpoint, cluster.master_auth.cluster_ca_certificate
            ).apply(lambda v: exec_kubeconfig(v[0], v[1], v[2]))
        self.kubeconfig = pulumi.Output.secret(kubeconfig)
        self.get_credentials_command = pulumi.Output.all(cluster.name, cluster.location).apply(
            lambda v: get_credentials_command(v[0], v[1], args.project, args.dns_endpoint)
        )
        self.register_outputs(
            {
                "name": self.name,
                "location": self.location,
                "cluster_id": self.cluster_id,
                "kubeconfig": self.kubeconfig,
                "node_service_account_email": self.node_service_account_email,
                "get_credentials_command": self.get_credentials_command,
                "workload_pool": self.workload_pool,
            }
        )
