"""nemo-rl-gke: GKE platform for NVIDIA NeMo RL. Wiring only: config -> components -> exports."""

from __future__ import annotations

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
from stack_config import load_stack_config
from stack_config.pulumi_source import current_config_values

# Validate everything before the first resource is registered: a bad stack fails here
# with one message naming the key, and nothing is half-applied.
cfg = load_stack_config(current_config_values(), pulumi.get_stack())
gpu = cfg.gpu.profile

primary = PrimaryNetwork(
    "primary",
    PrimaryNetworkArgs(
        region=cfg.region,
        names=cfg.names,
        primary_cidr=cfg.network.primary_cidr,
        pods_cidr=cfg.network.pods_cidr,
        services_cidr=cfg.network.services_cidr,
        mtu=cfg.network.mtu,
    ),
)
# A4 / A3 Ultra nodes have a second gVNIC NIC and eight RoCE NICs; an L4 node has neither.
gvnic = (
    GvnicNetwork(
        "gvnic",
        GvnicNetworkArgs(
            region=cfg.region, names=cfg.names, cidr=cfg.network.gvnic_cidr, mtu=cfg.network.mtu
        ),
    )
    if extra_gvnic_networks(gpu)
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
        ),
    )
    if gpu.rdma_nics
    else None
)

# The GPU pool's extra NICs in slot order - gVNIC first, then rdma-0..7 - taken from the
# network components' outputs so no network name is typed twice.
node_networks: pulumi.Output[list[dict[str, str]]] = pulumi.Output.all(
    *[net.node_networks for net in (gvnic, rdma) if net is not None]
).apply(lambda parts: [n for part in parts for n in part])

pulumi.export("network", primary.network_name)
pulumi.export("gpuType", gpu.key)
pulumi.export("additionalNodeNetworks", node_networks)
