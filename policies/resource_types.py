"""Resource type tokens the policies look at."""

from typing import Final

NETWORK: Final = "gcp:compute/network:Network"
SUBNETWORK: Final = "gcp:compute/subnetwork:Subnetwork"
FIREWALL: Final = "gcp:compute/firewall:Firewall"
GLOBAL_ADDRESS: Final = "gcp:compute/globalAddress:GlobalAddress"
CLUSTER: Final = "gcp:container/cluster:Cluster"
NODE_POOL: Final = "gcp:container/nodePool:NodePool"
LUSTRE: Final = "gcp:lustre/instance:Instance"
BUCKET: Final = "gcp:storage/bucket:Bucket"
PERSISTENT_VOLUME: Final = "kubernetes:core/v1:PersistentVolume"
CLUSTER_QUEUE: Final = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"
LOCAL_QUEUE: Final = "kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue"
RESOURCE_FLAVOR: Final = "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor"
POD_TEMPLATE_OWNERS: Final = (
    "kubernetes:core/v1:Pod",
    "kubernetes:apps/v1:Deployment",
    "kubernetes:apps/v1:DaemonSet",
    "kubernetes:apps/v1:StatefulSet",
    "kubernetes:batch/v1:Job",
    "kubernetes:ray.io/v1:RayCluster",
    "kubernetes:ray.io/v1:RayJob",
)
