"""Pulumi components. Each takes a typed args object and reads no config."""

from components.cluster import AuthorizedCidr, GkeCluster, GkeClusterArgs, MaintenancePlan
from components.gpu_pool.node_pools import (
    GpuNodePool,
    GpuNodePoolArgs,
    SystemNodePool,
    SystemNodePoolArgs,
)
from components.network.gvnic import GvnicNetwork, GvnicNetworkArgs
from components.network.in_cluster import GpuNetworking, GpuNetworkingArgs
from components.network.primary import PrimaryNetwork, PrimaryNetworkArgs
from components.network.rdma import RdmaNetwork, RdmaNetworkArgs
from components.ray.identity import WorkloadIdentity, WorkloadIdentityArgs
from components.storage.bucket import (
    BucketVolume,
    BucketVolumeArgs,
    TrainingBucket,
    TrainingBucketArgs,
)
from components.storage.lustre import Lustre, LustreArgs, LustreVolume, LustreVolumeArgs

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
