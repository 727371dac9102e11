"""Which outputs the cloud fills in, per resource type: what a first preview cannot know.

A resource's create returns every output its provider always fills (for pulumi-gcp, bridged
from Terraform: each Required and each Computed attribute). When the program leaves one of
them out, GCP picks it, so during a preview it is unknown; a few (the provider's project,
`deletionPolicy`, the effective labels) are known at plan time because Terraform's
CustomizeDiff sets them from the provider configuration and the program's labels.

These lists are preflight's own, written out from pulumi-gcp 10.2.0's resource schemas (the
SDK types those outputs `Output[T]`, never `Output[Optional[T]]`); the engine test bed's
stand-in provider derives the same from the SDK's types at run time, and a test compares the
two, resource by resource.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

CLOUD_FILLED: dict[str, frozenset[str]] = {
    "gcp:compute/network:Network": frozenset(
        {
            "bgpAlwaysCompareMed",
            "bgpBestPathSelectionMode",
            "bgpInterRegionCost",
            "gatewayIpv4",
            "internalIpv6Range",
            "mtu",
            "name",
            "networkId",
            "numericId",
            "routingMode",
            "selfLink",
        }
    ),
    "gcp:compute/subnetwork:Subnetwork": frozenset(
        {
            "allowSubnetCidrRoutesOverlap",
            "creationTimestamp",
            "externalIpv6Prefix",
            "fingerprint",
            "gatewayAddress",
            "internalIpv6Prefix",
            "ipCidrRange",
            "ipv6CidrRange",
            "ipv6GceEndpoint",
            "name",
            "network",
            "privateIpGoogleAccess",
            "privateIpv6GoogleAccess",
            "purpose",
            "region",
            "secondaryIpRanges",
            "selfLink",
            "stackType",
            "state",
            "subnetworkId",
        }
    ),
    "gcp:compute/firewall:Firewall": frozenset(
        {
            "creationTimestamp",
            "destinationRanges",
            "direction",
            "enableLogging",
            "name",
            "network",
            "selfLink",
        }
    ),
    "gcp:compute/router:Router": frozenset({"creationTimestamp", "name", "region", "selfLink"}),
    "gcp:compute/routerNat:RouterNat": frozenset(
        {
            "autoNetworkTier",
            "drainNatIps",
            "enableDynamicPortAllocation",
            "enableEndpointIndependentMapping",
            "endpointTypes",
            "minPortsPerVm",
            "name",
            "natIps",
            "region",
            "router",
            "sourceSubnetworkIpRangesToNat",
        }
    ),
    "gcp:compute/globalAddress:GlobalAddress": frozenset(
        {"address", "creationTimestamp", "labelFingerprint", "name", "prefixLength", "selfLink"}
    ),
    "gcp:servicenetworking/connection:Connection": frozenset(
        {"network", "peering", "reservedPeeringRanges", "service"}
    ),
    "gcp:container/cluster:Cluster": frozenset(
        {
            "addonsConfig",
            "anonymousAuthenticationConfig",
            "authenticatorGroupsConfig",
            "autopilotClusterPolicyConfig",
            "autopilotPrivilegedAdmissions",
            "clusterAutoscaling",
            "clusterIpv4Cidr",
            "clusterTelemetry",
            "confidentialNodes",
            "controlPlaneEndpointsConfig",
            "costManagementConfig",
            "databaseEncryption",
            "datapathProvider",
            "defaultMaxPodsPerNode",
            "defaultSnatStatus",
            "emulatedVersion",
            "enableIntranodeVisibility",
            "enableL4IlbSubsetting",
            "enableTpu",
            "endpoint",
            "enterpriseConfig",
            "gatewayApiConfig",
            "gkeAutoUpgradeConfig",
            "identityServiceConfig",
            "ipAllocationPolicy",
            "labelFingerprint",
            "location",
            "loggingConfig",
            "loggingService",
            "managedMachineLearningDiagnosticsConfig",
            "managedOpentelemetryConfig",
            "masterAuth",
            "masterAuthorizedNetworksConfig",
            "masterVersion",
            "meshCertificates",
            "monitoringConfig",
            "monitoringService",
            "name",
            "networkingMode",
            "nodeConfig",
            "nodeCreationConfig",
            "nodeLocations",
            "nodePoolAutoConfig",
            "nodePoolDefaults",
            "nodePools",
            "nodeVersion",
            "notificationConfig",
            "operation",
            "podAutoscaling",
            "privateClusterConfig",
            "privateIpv6GoogleAccess",
            "protectConfig",
            "rbacBindingConfig",
            "releaseChannel",
            "securityPostureConfig",
            "selfLink",
            "serviceExternalIpsConfig",
            "servicesIpv4Cidr",
            "subnetwork",
            "tpuConfig",
            "tpuIpv4CidrBlock",
            "verticalPodAutoscaling",
            "workloadAltsConfig",
            "workloadIdentityConfig",
        }
    ),
    "gcp:container/nodePool:NodePool": frozenset(
        {
            "cluster",
            "initialNodeCount",
            "instanceGroupUrls",
            "location",
            "managedInstanceGroupUrls",
            "management",
            "maxPodsPerNode",
            "name",
            "namePrefix",
            "networkConfig",
            "nodeConfig",
            "nodeCount",
            "nodeDrainConfigs",
            "nodeLocations",
            "operation",
            "upgradeSettings",
            "version",
        }
    ),
    "gcp:lustre/instance:Instance": frozenset(
        {
            "availableVersion",
            "capacityGib",
            "createTime",
            "effectiveVersion",
            "filesystem",
            "instanceId",
            "location",
            "mountPoint",
            "name",
            "network",
            "state",
            "stateReason",
            "uid",
            "upcomingMaintenanceSchedules",
            "updateTime",
        }
    ),
    "gcp:storage/bucket:Bucket": frozenset(
        {
            "location",
            "name",
            "projectNumber",
            "publicAccessPrevention",
            "rpo",
            "selfLink",
            "softDeletePolicy",
            "timeCreated",
            "uniformBucketLevelAccess",
            "updated",
            "url",
            "versioning",
            "website",
        }
    ),
    "gcp:serviceaccount/account:Account": frozenset(
        {"accountId", "email", "member", "name", "uniqueId"}
    ),
    "gcp:projects/iAMMember:IAMMember": frozenset({"etag", "member", "role"}),
    "gcp:storage/bucketIAMMember:BucketIAMMember": frozenset({"bucket", "etag", "member", "role"}),
    "gcp:projects/service:Service": frozenset({"service"}),
}
"""Resource token -> outputs the cloud fills when the program does not set them."""

PLAN_PROJECT = frozenset(
    t
    for t in CLOUD_FILLED
    if not t.endswith(("/bucketIAMMember:BucketIAMMember", "/connection:Connection"))
)
"""Types whose `project` output the provider fills from its configuration at plan time."""
PLAN_DELETION_POLICY = frozenset(
    t
    for t in CLOUD_FILLED
    if not t.endswith(("/iAMMember:IAMMember", "/bucketIAMMember:BucketIAMMember"))
)
"""Types with the provider-only `deletionPolicy` (DELETE unless the program says otherwise)."""
PLAN_LABELS = frozenset(
    {
        "gcp:compute/globalAddress:GlobalAddress",
        "gcp:container/cluster:Cluster",
        "gcp:lustre/instance:Instance",
        "gcp:storage/bucket:Bucket",
    }
)
"""Types with `effectiveLabels` / `pulumiLabels` (the program's labels, known at plan)."""


def plan_known(token: str, inputs: Mapping[str, Any], project: str) -> dict[str, Any]:
    """Outputs Terraform's plan knows before the create (absent from the program's inputs)."""
    known: dict[str, Any] = {}
    if token in PLAN_PROJECT and "project" not in inputs and project:
        known["project"] = project
    if token in PLAN_DELETION_POLICY and "deletionPolicy" not in inputs:
        known["deletionPolicy"] = "DELETE"
    if token in PLAN_LABELS:
        labels = inputs.get("labels", inputs.get("resourceLabels"))
        known["effectiveLabels"] = labels if labels is not None else {}
        known["pulumiLabels"] = labels if labels is not None else {}
    return known
