"""Pulumi components. Each takes a typed args object and reads no config."""

from components.bucket import BucketVolume, BucketVolumeArgs, TrainingBucket, TrainingBucketArgs
from components.gke_cluster import AuthorizedCidr, GkeCluster, GkeClusterArgs, MaintenancePlan
from components.gpu_networking import GpuNetworking, GpuNetworkingArgs
from components.gvnic_network import GvnicNetwork, GvnicNetworkArgs
from components.lustre import Lustre, LustreArgs, LustreVolume, LustreVolumeArgs
from components.node_pools import GpuNodePool, GpuNodePoolArgs, SystemNodePool, SystemNodePoolArgs
from components.primary_network import PrimaryNetwork, PrimaryNetworkArgs
from components.rdma_network import RdmaNetwork, RdmaNetworkArgs
from components.workload_identity import WorkloadIdentity, WorkloadIdentityArgs

__all__ = [
    "AuthorizedCidr",
    "BucketVolume",
    "BucketVolumeArgs",
    "GkeCluster",
    "GkeClusterArgs",
    "GpuNetworking",
    "GpuNetworkingArgs",
    "GpuNodePool",
    "GpuNodePoolArgs",
    "GvnicNetwork",
    "GvnicNetworkArgs",
    "Lustre",
    "LustreArgs",
    "LustreVolume",
    "LustreVolumeArgs",
    "MaintenancePlan",
    "PrimaryNetwork",
    "PrimaryNetworkArgs",
    "RdmaNetwork",
    "RdmaNetworkArgs",
    "SystemNodePool",
    "SystemNodePoolArgs",
    "TrainingBucket",
    "TrainingBucketArgs",
    "WorkloadIdentity",
    "WorkloadIdentityArgs",
]
