"""RoCE VPC: one subnet per GPU RDMA NIC, tutorial step 3.2 (with the zonal profile fix)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from ipaddress import IPv4Network

import pulumi
import pulumi_gcp as gcp

from planning.naming import Names
from planning.network import RDMA_MTU


@dataclass(frozen=True, kw_only=True)
class RdmaNetworkArgs:
    """Inputs of the RDMA VPC. Mirrors Cluster Toolkit's `modules/network/gpu-rdma-vpc`."""

    region: str
    names: Names
    network_profile: str
    """`projects/<p>/global/networkProfiles/<zone>-vpc-roce`: zonal, never the region."""
    cidrs: Sequence[IPv4Network]
    """One subnet per RDMA NIC, in NIC order (rdma-0 first)."""
    apis: Sequence[pulumi.Resource] = ()
    """What enables the APIs this component calls (the project's `projects.Service`s)."""

    def __post_init__(self) -> None:
        if not self.cidrs:
            raise pulumi.InputPropertyError("cidrs", "an RDMA network needs at least one subnet")
        if not self.network_profile.endswith("-vpc-roce"):
            raise pulumi.InputPropertyError(
                "network_profile", "must be a <zone>-vpc-roce network profile"
            )


class RdmaNetwork(pulumi.ComponentResource):
    """A VPC on the zone's RoCE profile with one subnet per NIC and no firewall rules.

    RoCE VPCs carry implicit allow rules and reject user firewall rules, so none is made.
    """

    network_name: pulumi.Output[str]
    """GCP name of the VPC (`GKENetworkParamSet.spec.vpc` for every rdma-N)."""
    subnet_names: pulumi.Output[list[str]]
    """GCP subnet names in NIC order (`vpcSubnet` of rdma-0 ... rdma-N)."""
    node_networks: pulumi.Output[list[dict[str, str]]]
    """`[{network, subnetwork}]` in NIC order, ready for the GPU pool's additional networks."""

    def __init__(
        self, name: str, args: RdmaNetworkArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("nemo:network:RdmaNetwork", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)

        network = gcp.compute.Network(
            f"{name}-net",
            name=args.names.rdma_network,
            auto_create_subnetworks=False,
            mtu=RDMA_MTU,
            network_profile=args.network_profile,
            description="nemo-rl-gke RoCE network (GPU RDMA NICs)",
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.apis)),
        )
        # Index-named children: the list is fixed by the NIC count and append-only, so a
        # subnet's URN never moves to another CIDR.
        subnets = [
            gcp.compute.Subnetwork(
                f"{name}-sub-{index}",
                name=args.names.rdma_subnet(index),
                network=network.name,  # by name: known during a first preview
                region=args.region,
                ip_cidr_range=str(cidr),
                opts=child,
            )
            for index, cidr in enumerate(args.cidrs)
        ]

        self.network_name = network.name
        self.subnet_names = pulumi.Output.all(*[s.name for s in subnets]).apply(list)
        self.node_networks = pulumi.Output.all(network.name, self.subnet_names).apply(
            lambda pair: [{"network": pair[0], "subnetwork": sub} for sub in pair[1]]
        )
        self.register_outputs(
            {
                "network_name": self.network_name,
                "subnet_names": self.subnet_names,
                "node_networks": self.node_networks,
            }
        )
