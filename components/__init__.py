"""Pulumi components. Each takes a typed args object and reads no config."""

from components.gke_cluster import AuthorizedCidr, GkeCluster, GkeClusterArgs, MaintenancePlan
from components.gpu_networking import GpuNetworking, GpuNetworkingArgs
from components.gvnic_network import GvnicNetwork, GvnicNetworkArgs
from components.node_pools import GpuNodePool, GpuNodePoolArgs, SystemNodePool, SystemNodePoolArgs
from components.primary_network import PrimaryNetwork, PrimaryNetworkArgs
from components.rdma_network import RdmaNetwork, RdmaNetworkArgs

__all__ = [
    "AuthorizedCidr",
    "GkeCluster",
    "GkeClusterArgs",
    "GpuNetworking",
    "GpuNetworkingArgs",
    "GpuNodePool",
    "GpuNodePoolArgs",
    "GvnicNetwork",
    "GvnicNetworkArgs",
    "MaintenancePlan",
    "PrimaryNetwork",
    "PrimaryNetworkArgs",
    "RdmaNetwork",
    "RdmaNetworkArgs",
    "SystemNodePool",
    "SystemNodePoolArgs",
]
