"""Pulumi components. Each takes a typed args object and reads no config."""

from components.gvnic_network import GvnicNetwork, GvnicNetworkArgs
from components.primary_network import PrimaryNetwork, PrimaryNetworkArgs
from components.rdma_network import RdmaNetwork, RdmaNetworkArgs

__all__ = [
    "GvnicNetwork",
    "GvnicNetworkArgs",
    "PrimaryNetwork",
    "PrimaryNetworkArgs",
    "RdmaNetwork",
    "RdmaNetworkArgs",
]
