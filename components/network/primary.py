"""Cluster VPC: custom-mode network, node subnet with pod/service ranges, Cloud NAT, firewall."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from ipaddress import IPv4Network

import pulumi
import pulumi_gcp as gcp

from planning.naming import Names

FLOW_LOGS = gcp.compute.SubnetworkLogConfigArgs(
    # CIS GCP 3.8 / CKV_GCP_26: flow logs on every subnet that carries general traffic.
    aggregation_interval="INTERVAL_5_MIN",
    flow_sampling=0.5,
    metadata="INCLUDE_ALL_METADATA",
)


@dataclass(frozen=True, kw_only=True)
class PrimaryNetworkArgs:
    """Inputs of the cluster VPC. Mirrors Cluster Toolkit's `modules/network/vpc` for net-0."""

    project: str
    region: str
    names: Names
    primary_cidr: IPv4Network
    pods_cidr: IPv4Network
    services_cidr: IPv4Network
    mtu: int
    apis: Sequence[pulumi.Resource] = ()
    """What enables the APIs this component calls (the project's `projects.Service`s)."""


class PrimaryNetwork(pulumi.ComponentResource):
    """The VPC the GKE cluster, its private nodes, Cloud NAT and Managed Lustre live on."""

    network_id: pulumi.Output[str]
    """`projects/<p>/global/networks/<name>`: the form Lustre and private services access take."""
    network_name: pulumi.Output[str]
    """GCP name of the VPC (the cluster's `network`)."""
    subnet_name: pulumi.Output[str]
    """GCP name of the node subnet (the cluster's `subnetwork`)."""
    pods_range_name: pulumi.Output[str]
    """Secondary range the cluster allocates pod IPs from."""
    services_range_name: pulumi.Output[str]
    """Secondary range the cluster allocates service IPs from."""

    def __init__(
        self, name: str, args: PrimaryNetworkArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("nemo:network:PrimaryNetwork", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        names = args.names

        network = gcp.compute.Network(
            f"{name}-net",
            name=names.primary_network,
            auto_create_subnetworks=False,
            routing_mode="REGIONAL",
            mtu=args.mtu,
            description="nemo-rl-gke cluster VPC",
            # Subnets, router, NAT and firewall hang off the network, so they wait too.
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.apis)),
        )
        # Other resources name the VPC by its name, never by its id or self link: the name is
        # ours and known during a first `pulumi preview`, so policies can judge what refers to
        # it (an id is computed by the cloud and unknown until the network exists).
        subnet = gcp.compute.Subnetwork(
            f"{name}-sub",
            name=names.primary_subnet,
            network=network.name,
            region=args.region,
            ip_cidr_range=str(args.primary_cidr),
            secondary_ip_ranges=[
                gcp.compute.SubnetworkSecondaryIpRangeArgs(
                    range_name=names.pods_range, ip_cidr_range=str(args.pods_cidr)
                ),
                gcp.compute.SubnetworkSecondaryIpRangeArgs(
                    range_name=names.services_range, ip_cidr_range=str(args.services_cidr)
                ),
            ],
            # Private nodes reach Google APIs (Artifact Registry, GCS, Lustre control plane)
            # without public IPs.
            private_ip_google_access=True,
            log_config=FLOW_LOGS,
            opts=child,
        )
        router = gcp.compute.Router(
            f"{name}-router",
            name=names.router,
            network=network.name,
            region=args.region,
            opts=child,
        )
        # Private nodes have no external IPs; NAT gives them egress for images (nvcr.io,
        # Hugging Face) and pip/uv installs. Only this subnet's ranges are translated.
        gcp.compute.RouterNat(
            f"{name}-nat",
            name=names.nat,
            router=router.name,
            region=args.region,
            nat_ip_allocate_option="AUTO_ONLY",
            source_subnetwork_ip_ranges_to_nat="LIST_OF_SUBNETWORKS",
            subnetworks=[
                gcp.compute.RouterNatSubnetworkArgs(
                    name=subnet.id, source_ip_ranges_to_nats=["ALL_IP_RANGES"]
                )
            ],
            # Multi-GB image pulls open many connections per node; let NAT hand out ports
            # dynamically instead of a fixed 64 per VM.
            enable_dynamic_port_allocation=True,
            enable_endpoint_independent_mapping=False,
            min_ports_per_vm=64,
            max_ports_per_vm=4096,
            log_config=gcp.compute.RouterNatLogConfigArgs(enable=True, filter="ERRORS_ONLY"),
            opts=child,
        )
        # Node-to-node and pod-to-pod traffic inside the VPC; GKE adds its own rules for the
        # control plane. Sources are only this VPC's node and pod ranges.
        gcp.compute.Firewall(
            f"{name}-internal",
            name=names.primary_internal_firewall,
            network=network.name,
            direction="INGRESS",
            priority=1000,
            source_ranges=[str(args.primary_cidr), str(args.pods_cidr)],
            allows=[
                gcp.compute.FirewallAllowArgs(protocol="tcp", ports=["0-65535"]),
                gcp.compute.FirewallAllowArgs(protocol="udp", ports=["0-65535"]),
                gcp.compute.FirewallAllowArgs(protocol="icmp"),
            ],
            description="Allow traffic between nodes and pods of the cluster VPC",
            opts=child,
        )

        self.network_id = pulumi.Output.concat(
            "projects/", args.project, "/global/networks/", network.name
        )
        self.network_name = network.name
        self.subnet_name = subnet.name
        self.pods_range_name = pulumi.Output.from_input(names.pods_range)
        self.services_range_name = pulumi.Output.from_input(names.services_range)
        self.register_outputs(
            {
                "network_id": self.network_id,
                "network_name": self.network_name,
                "subnet_name": self.subnet_name,
                "pods_range_name": self.pods_range_name,
                "services_range_name": self.services_range_name,
            }
        )
