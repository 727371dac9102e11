"""Type tokens: the one place the repository spells them.

A token names a resource type (`gcp:container/nodePool:NodePool`) or a function the program
calls (`gcp:compute/getReservation:getReservation`) the way the engine, the providers and the
policy pack see it. The policies, preflight, the offline models of the providers and the test
bed all compare against these names, so a misspelling (pulumi-gcp's module is `iAMMember`,
not `iamMember`) is fixed here once. The program itself never spells a token: it builds its
resources from the SDK classes, which carry their own.
"""

from __future__ import annotations

from typing import Final

# --- pulumi-gcp resources the program creates (the SDK's `resource_modules` table) ---------
NETWORK: Final = "gcp:compute/network:Network"
SUBNETWORK: Final = "gcp:compute/subnetwork:Subnetwork"
FIREWALL: Final = "gcp:compute/firewall:Firewall"
ROUTER: Final = "gcp:compute/router:Router"
ROUTER_NAT: Final = "gcp:compute/routerNat:RouterNat"
GLOBAL_ADDRESS: Final = "gcp:compute/globalAddress:GlobalAddress"
PSA_CONNECTION: Final = "gcp:servicenetworking/connection:Connection"
CLUSTER: Final = "gcp:container/cluster:Cluster"
NODE_POOL: Final = "gcp:container/nodePool:NodePool"
LUSTRE: Final = "gcp:lustre/instance:Instance"
BUCKET: Final = "gcp:storage/bucket:Bucket"
SERVICE_ACCOUNT: Final = "gcp:serviceaccount/account:Account"
PROJECT_IAM_MEMBER: Final = "gcp:projects/iAMMember:IAMMember"
BUCKET_IAM_MEMBER: Final = "gcp:storage/bucketIAMMember:BucketIAMMember"
PROJECT_SERVICE: Final = "gcp:projects/service:Service"

GCP_RESOURCES: Final = (
    NETWORK,
    SUBNETWORK,
    FIREWALL,
    ROUTER,
    ROUTER_NAT,
    GLOBAL_ADDRESS,
    PSA_CONNECTION,
    CLUSTER,
    NODE_POOL,
    LUSTRE,
    BUCKET,
    SERVICE_ACCOUNT,
    PROJECT_IAM_MEMBER,
    BUCKET_IAM_MEMBER,
    PROJECT_SERVICE,
)
"""Every pulumi-gcp resource type the program can create."""

# --- pulumi-gcp functions (invokes) the program calls ----------------------------------------
GET_PROJECT: Final = "gcp:organizations/getProject:getProject"
GET_CLIENT_CONFIG: Final = "gcp:organizations/getClientConfig:getClientConfig"
GET_RESERVATION: Final = "gcp:compute/getReservation:getReservation"
GET_RESERVATION_BLOCK: Final = "gcp:compute/getReservationBlock:getReservationBlock"
GET_RESERVATION_SUB_BLOCK: Final = "gcp:compute/getReservationSubBlock:getReservationSubBlock"
GET_CLUSTER: Final = "gcp:container/getCluster:getCluster"
GET_ENGINE_VERSIONS: Final = "gcp:container/getEngineVersions:getEngineVersions"

# --- pulumi-kubernetes ------------------------------------------------------------------------
POD: Final = "kubernetes:core/v1:Pod"
CONFIG_MAP: Final = "kubernetes:core/v1:ConfigMap"
SECRET: Final = "kubernetes:core/v1:Secret"  # noqa: S105 - a type name, not a password
SERVICE: Final = "kubernetes:core/v1:Service"
PERSISTENT_VOLUME: Final = "kubernetes:core/v1:PersistentVolume"
PERSISTENT_VOLUME_CLAIM: Final = "kubernetes:core/v1:PersistentVolumeClaim"
DEPLOYMENT: Final = "kubernetes:apps/v1:Deployment"
DAEMON_SET: Final = "kubernetes:apps/v1:DaemonSet"
STATEFUL_SET: Final = "kubernetes:apps/v1:StatefulSet"
JOB: Final = "kubernetes:batch/v1:Job"
CLUSTER_ROLE_BINDING: Final = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding"
ROLE_BINDING: Final = "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding"
RAY_CLUSTER: Final = "kubernetes:ray.io/v1:RayCluster"
RAY_JOB: Final = "kubernetes:ray.io/v1:RayJob"
CLUSTER_QUEUE: Final = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"
LOCAL_QUEUE: Final = "kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue"
RESOURCE_FLAVOR: Final = "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor"
HELM_RELEASE: Final = "kubernetes:helm.sh/v3:Release"

RAY_KINDS: Final = (RAY_CLUSTER, RAY_JOB)
"""KubeRay objects that run pods (a RayJob through the cluster it brings or names)."""
POD_TEMPLATE_OWNERS: Final = (POD, DEPLOYMENT, DAEMON_SET, STATEFUL_SET, JOB, *RAY_KINDS)
"""Kubernetes objects that create pods from a pod spec they hold."""

# --- the engine's own -------------------------------------------------------------------------
STACK: Final = "pulumi:pulumi:Stack"
READ_STACK_OUTPUTS: Final = "pulumi:pulumi:readStackOutputs"
"""The built-in invoke that reads a stack's last outputs (as a StackReference does)."""
