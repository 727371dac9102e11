"""Which outputs the cloud fills in, per resource type: what a first preview cannot know.

Follows pulumi-gcp 10.2.0's resource schemas as its Python SDK types them. A resource's create
returns every output its provider always fills (for pulumi-gcp, bridged from Terraform: each
Required and each Computed attribute). When the program leaves one of them out, GCP picks it,
so during a preview it is unknown; a few (the provider's project, `deletionPolicy`, the
effective labels) are known at plan time because Terraform's CustomizeDiff sets them from the
provider configuration and the program's labels.

These lists are written out from the SDK (it types those outputs `Output[T]`, never
`Output[Optional[T]]`) rather than read from it at run time, which would cost preflight about
a second per run; a test compares them with the SDK's types, resource by resource, and the
engine test bed's stand-in provider reads the SDK itself.

It names which outputs are unknown, never their values, and knows only the types the program
creates (`planning.resource_types.GCP_RESOURCES`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from planning import resource_types as rt

CLOUD_FILLED: dict[str, frozenset[str]] = {
    rt.NETWORK: frozenset(
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
    rt.SUBNETWORK: frozenset(
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
    rt.FIREWALL: frozenset(
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
    rt.ROUTER: frozenset({"creationTimestamp", "name", "region", "selfLink"}),
    rt.ROUTER_NAT: frozenset(
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
    rt.GLOBAL_ADDRESS: frozenset(
        {"address", "creationTimestamp", "labelFingerprint", "name", "prefixLength", "selfLink"}
    ),
    rt.PSA_CONNECTION: frozenset({"network", "peering", "reservedPeeringRanges", "service"}),
    rt.CLUSTER: frozenset(
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
    rt.NODE_POOL: frozenset(
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
    rt.LUSTRE: frozenset(
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
    rt.BUCKET: frozenset(
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
    rt.SERVICE_ACCOUNT: frozenset({"accountId", "email", "member", "name", "uniqueId"}),
    rt.PROJECT_IAM_MEMBER: frozenset({"etag", "member", "role"}),
    rt.BUCKET_IAM_MEMBER: frozenset({"bucket", "etag", "member", "role"}),
    rt.PROJECT_SERVICE: frozenset({"service"}),
}
"""Resource token -> outputs the cloud fills when the program does not set them."""

PLAN_KNOWN_OUTPUTS = frozenset({"project", "deletionPolicy", "effectiveLabels", "pulumiLabels"})
"""Outputs Terraform's plan fills before the create, where a type has them: CustomizeDiff sets
them from the provider's configuration and the program's labels."""

_NO_PROJECT = frozenset({rt.PSA_CONNECTION, rt.BUCKET_IAM_MEMBER})
_NO_DELETION_POLICY = frozenset({rt.PROJECT_IAM_MEMBER, rt.BUCKET_IAM_MEMBER})
_LABELLED = frozenset({rt.GLOBAL_ADDRESS, rt.CLUSTER, rt.LUSTRE, rt.BUCKET})

PLANNED: dict[str, frozenset[str]] = {
    token: frozenset(
        {
            *(() if token in _NO_PROJECT else ("project",)),
            *(() if token in _NO_DELETION_POLICY else ("deletionPolicy",)),
            *(("effectiveLabels", "pulumiLabels") if token in _LABELLED else ()),
        }
    )
    for token in CLOUD_FILLED
}
"""Resource token -> which of PLAN_KNOWN_OUTPUTS it has (a test reads them off the SDK)."""


def plan_known(
    token: str,
    inputs: Mapping[str, Any],
    project: str,
    outputs: Collection[str] | None = None,
) -> dict[str, Any]:
    """Outputs Terraform's plan knows before the create (absent from the program's inputs).

    `outputs` are the type's output names where the caller reads them from the SDK (the test
    bed's stand-in); preflight uses this module's table. Label values are passed through as
    given, so a caller's wrapped values keep their secrecy.
    """
    names = PLANNED.get(token, frozenset()) if outputs is None else outputs
    known: dict[str, Any] = {}
    if "project" in names and "project" not in inputs and project:
        known["project"] = project
    if "deletionPolicy" in names and "deletionPolicy" not in inputs:
        known["deletionPolicy"] = "DELETE"
    labels = inputs.get("labels", inputs.get("resourceLabels"))
    for key in ("effectiveLabels", "pulumiLabels"):
        if key in names:
            known[key] = labels if labels is not None else {}
    return known
