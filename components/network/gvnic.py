"""gVNIC VPC: the GPU nodes' second NIC (eth1 in pods), tutorial step 3.1."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from ipaddress import IPv4Network

import pulumi
import pulumi_gcp as gcp

from components.network.primary import FLOW_LOGS
from planning.naming import Names


@dataclass(frozen=True, kw_only=True)
class GvnicNetworkArgs:
    """Inputs of the gVNIC VPC. Mirrors Cluster Toolkit's net-1 in `examples/gke-a4`."""

    region: str
    names: Names
    cidr: IPv4Network
    mtu: int
    apis: Sequence[pulumi.Resource] = ()
    """What enables the APIs this component calls (the project's `projects.Service`s)."""


class GvnicNetwork(pulumi.ComponentResource):
    """A custom-mode VPC with one subnet and an internal-only firewall rule."""

    network_name: pulumi.Output[str]
    """GCP name of the VPC (`GKENetworkParamSet.spec.vpc`)."""
    subnet_name: pulumi.Output[str]
    """GCP name of the subnet (`GKENetworkParamSet.spec.vpcSubnet`)."""
    node_networks: pulumi.Output[list[dict[str, str]]]
    """`[{network, subnetwork}]` ready for the GPU pool's additional node networks."""

    def __init__(
        self, name: str, args: GvnicNetworkArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("nemo:network:GvnicNetwork", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        names = args.names

        network = gcp.compute.Network(
            f"{name}-net",
            name=names.gvnic_network,
            auto_create_subnetworks=False,
            routing_mode="REGIONAL",
            mtu=args.mtu,
            description="nemo-rl-gke gVNIC network (second NIC of GPU nodes)",
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.apis)),
        )
        subnet = gcp.compute.Subnetwork(
            f"{name}-sub",
            name=names.gvnic_subnet,
            network=network.name,  # by name: known during a first preview (see PrimaryNetwork)
            region=args.region,
            ip_cidr_range=str(args.cidr),
            log_config=FLOW_LOGS,
            opts=child,
        )
        # The tutorial allows 192.168.0.0/16; the only peers on this VPC are the GPU nodes'
        # eth1 addresses, so the subnet itself is the tightest correct source.
        gcp.compute.Firewall(
            f"{name}-internal",
            name=names.gvnic_firewall,
            network=network.name,
            direction="INGRESS",
            priority=1000,
            source_ranges=[str(args.cidr)],
            allows=[
                gcp.compute.FirewallAllowArgs(protocol="tcp", ports=["0-65535"]),
                gcp.compute.FirewallAllowArgs(protocol="udp", ports=["0-65535"]),
                gcp.compute.FirewallAllowArgs(protocol="icmp"),
            ],
            description="Allow traffic between GPU nodes on the gVNIC network",
            opts=child,
        )

        self.network_name = network.name
        self.subnet_name = subnet.name
        self.node_networks = pulumi.Output.all(network.name, subnet.name).apply(
            lambda pair: [{"network": pair[0], "subnetwork": pair[1]}]
        )
        self.register_outputs(
            {
                "network_name": self.network_name,
                "subnet_name": self.subnet_name,
                "node_networks": self.node_networks,
            }
        )
