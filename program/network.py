"""The three VPCs and the GPU pool's extra-NIC list."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi

from components import (
    GvnicNetwork,
    GvnicNetworkArgs,
    PrimaryNetwork,
    PrimaryNetworkArgs,
    RdmaNetwork,
    RdmaNetworkArgs,
)
from planning.catalog import extra_gvnic_networks
from stack_config import StackConfig


@dataclass(frozen=True)
class Networks:
    """The stack's networks."""

    primary: PrimaryNetwork
    gvnic: GvnicNetwork | None
    """Only for GPUs with a second gVNIC NIC (A4, A3 Ultra)."""
    rdma: RdmaNetwork | None
    """Only for GPUs with RDMA NICs."""
    node_networks: pulumi.Output[list[dict[str, str]]]
    """The GPU pool's extra NICs in slot order: gVNIC first, then rdma-0..N."""


def build_networks(cfg: StackConfig, apis: Sequence[pulumi.Resource] = ()) -> Networks:
    """Cluster VPC always; gVNIC and RoCE VPCs when the GPU has those NICs (not on L4) and the
    stack manages them (not with DRANET, where GKE does). Each VPC (and so everything on it,
    Lustre included) waits for `apis`."""
    gpu = cfg.gpu.profile
    primary = PrimaryNetwork(
        "primary",
        PrimaryNetworkArgs(
            project=cfg.project,
            region=cfg.region,
            names=cfg.names,
            primary_cidr=cfg.network.primary_cidr,
            pods_cidr=cfg.network.pods_cidr,
            services_cidr=cfg.network.services_cidr,
            mtu=cfg.network.mtu,
            apis=apis,
        ),
    )
    gvnic = (
        GvnicNetwork(
            "gvnic",
            GvnicNetworkArgs(
                region=cfg.region,
                names=cfg.names,
                cidr=cfg.network.gvnic_cidr,
                mtu=cfg.network.mtu,
                apis=apis,
            ),
        )
        if extra_gvnic_networks(gpu) and not cfg.dranet
        else None
    )
    rdma = (
        RdmaNetwork(
            "rdma",
            RdmaNetworkArgs(
                region=cfg.region,
                names=cfg.names,
                network_profile=cfg.network_profile,
                cidrs=cfg.rdma_cidrs,
                apis=apis,
            ),
        )
        if gpu.rdma_nics and not cfg.dranet
        else None
    )
    # Taken from the network components' outputs, so no network name is typed twice.
    node_networks: pulumi.Output[list[dict[str, str]]] = pulumi.Output.all(
        *[net.node_networks for net in (gvnic, rdma) if net is not None]
    ).apply(lambda parts: [n for part in parts for n in part])
    return Networks(primary=primary, gvnic=gvnic, rdma=rdma, node_networks=node_networks)
