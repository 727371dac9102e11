"""What the real pulumi-gcp 10.2.0 replaces on, for the properties this program sets.

Follows hashicorp/terraform-provider-google-beta@93c65b2d60 (the release-8.0.0 branch head,
`services/*/resource_*.go`, `container/node_config.go`), pulumi/pulumi-gcp@ed6078aacc
(`provider/resources.go`) and pulumi/pulumi-terraform-bridge v3.136.0: the sources read for
pulumi-gcp 10.2.0, whose own upstream commit no source here states.

Preflight runs on machines without the engine test bed's shared data, so it carries its own
facts for the 15 resource types the program creates: the ForceNew inputs (google-beta's
schema, mapped onto pulumi-gcp's property names), the ForceNew blocks, the Optional+Computed
ForceNew fields, those with diff suppression, CustomizeDiff replacements, the bridge's
delete-before-replace rule and the Check defaults whose parent objects the program sends.

The shared reference table (`gcp-forcenew.json`, read by the test bed's stand-in) states the
same facts in full for every path of those types; this module keeps the paths the program
sends, and a test compares the two, path by path on every input the program sends, for every
committed stack. `planning.replacements` is a different fact built on these: which config key
recreates what, and what a user loses with it.

It cannot prove what it was not compared on (an input the program does not send), nor what
google-beta changed after 93c65b2d60 that 10.2.0 carries (10.2.0 has at least NodePool's
`bestEffortProvisioning` and the Lustre instance's `targetVersion`, which that commit lacks).
"""

from __future__ import annotations

from planning import resource_types as rt
from planning.network import cidr_shrinks_or_moves
from pulumi_offline.bridge_diff import CustomizeRule, TypeFacts

_NODE_CONFIG_BLOCKS = frozenset(
    {
        "nodeConfig",
        "nodeConfig.ephemeralStorageLocalSsdConfig",
        "nodeConfig.guestAccelerators",
        "nodeConfig.guestAccelerators[].gpuDriverInstallationConfig",
        "nodeConfig.guestAccelerators[].gpuSharingConfig",
        "nodeConfig.reservationAffinity",
        "nodeConfig.shieldedInstanceConfig",
    }
)
"""schemaNodeConfig() blocks (node_config.go:291-665), shared by pools and the cluster."""
_NODE_CONFIG_FORCE_NEW = _NODE_CONFIG_BLOCKS | {
    "nodeConfig.ephemeralStorageLocalSsdConfig.localSsdCount",
    "nodeConfig.flexStart",
    "nodeConfig.guestAccelerators[].count",
    "nodeConfig.guestAccelerators[].gpuDriverInstallationConfig.gpuDriverVersion",  # :346
    "nodeConfig.guestAccelerators[].gpuPartitionSize",
    "nodeConfig.guestAccelerators[].gpuSharingConfig.gpuSharingStrategy",
    "nodeConfig.guestAccelerators[].gpuSharingConfig.maxSharedClientsPerGpu",
    "nodeConfig.guestAccelerators[].type",
    "nodeConfig.localSsdCount",
    "nodeConfig.metadata",
    "nodeConfig.minCpuPlatform",
    "nodeConfig.oauthScopes",
    "nodeConfig.preemptible",
    "nodeConfig.reservationAffinity.consumeReservationType",  # :602
    "nodeConfig.reservationAffinity.key",
    "nodeConfig.reservationAffinity.values",
    "nodeConfig.serviceAccount",
    "nodeConfig.shieldedInstanceConfig.enableIntegrityMonitoring",
    "nodeConfig.shieldedInstanceConfig.enableSecureBoot",
    "nodeConfig.spot",
}
_NODE_CONFIG_OPTIONAL_COMPUTED = frozenset(
    {
        "nodeConfig",
        "nodeConfig.guestAccelerators",
        "nodeConfig.guestAccelerators[].gpuDriverInstallationConfig",
        "nodeConfig.localSsdCount",
        "nodeConfig.metadata",
        "nodeConfig.minCpuPlatform",
        "nodeConfig.oauthScopes",
        "nodeConfig.serviceAccount",
        "nodeConfig.shieldedInstanceConfig",
    }
)
_IP_ALLOCATION = frozenset(
    {
        "ipAllocationPolicy",
        "ipAllocationPolicy.clusterIpv4CidrBlock",
        "ipAllocationPolicy.clusterSecondaryRangeName",
        "ipAllocationPolicy.servicesIpv4CidrBlock",
        "ipAllocationPolicy.servicesSecondaryRangeName",
    }
)
"""The cluster's IP allocation block and its ranges: ForceNew, and the API fills each one the
program leaves out (resource_container_cluster.go, ip_allocation_policy)."""
_NODE_CONFIG_FALSY = {
    "nodeConfig.preemptible": False,
    "nodeConfig.shieldedInstanceConfig.enableSecureBoot": False,
    "nodeConfig.spot": False,
}

FACTS: dict[str, TypeFacts] = {
    # resource_compute_network.go; name lowercaseAutoName (resources.go:1156) -> DBR
    rt.NETWORK: TypeFacts(
        resource_type=rt.NETWORK,
        force_new=frozenset(
            {
                "autoCreateSubnetworks",
                "description",
                "internalIpv6Range",
                "name",
                "networkProfile",
                "params",
                "params.resourceManagerTags",
                "project",
            }
        ),
        blocks=frozenset({"params"}),
        optional_computed=frozenset({"internalIpv6Range", "project"}),
        diff_suppress=frozenset({"networkProfile"}),
        delete_before_replace=True,
        defaults={
            "autoCreateSubnetworks": True,
            "networkFirewallPolicyEnforcementOrder": "AFTER_CLASSIC_FIREWALL",
        },
        falsy_defaults={"deleteDefaultRoutesOnCreate": False},
    ),
    # resource_compute_subnetwork.go; ipCidrRange shrink/move via CustomizeDiff (:63-80, :512)
    rt.SUBNETWORK: TypeFacts(
        resource_type=rt.SUBNETWORK,
        force_new=frozenset(
            {
                "description",
                "externalIpv6Prefix",
                "internalIpv6Prefix",
                "name",
                "network",
                "params",
                "params.resourceManagerTags",
                "project",
                "region",
                "reservedInternalRange",
                "resolveSubnetMask",
            }
        ),
        blocks=frozenset({"params"}),
        optional_computed=frozenset(
            {"externalIpv6Prefix", "internalIpv6Prefix", "project", "region"}
        ),
        diff_suppress=frozenset(
            {"internalIpv6Prefix", "network", "region", "reservedInternalRange"}
        ),
        customize=(
            CustomizeRule(
                "ipCidrRange", cidr_shrinks_or_moves, "resource_compute_subnetwork.go:63-80,512"
            ),
        ),
        delete_before_replace=True,
        defaults={
            "logConfig.aggregationInterval": "INTERVAL_5_SEC",
            "logConfig.filterExpr": "true",
            "logConfig.flowSampling": 0.5,
            "logConfig.metadata": "INCLUDE_ALL_METADATA",
        },
    ),
    # resource_compute_firewall.go: network is NOT ForceNew; SetAutonaming (resources.go:3014)
    rt.FIREWALL: TypeFacts(
        resource_type=rt.FIREWALL,
        force_new=frozenset({"direction", "name", "params", "project"}),
        blocks=frozenset({"params"}),
        optional_computed=frozenset({"direction", "project"}),
        delete_before_replace=True,
        defaults={"priority": 1000},
    ),
    rt.ROUTER: TypeFacts(
        resource_type=rt.ROUTER,
        force_new=frozenset(
            {
                "encryptedInterconnectRouter",
                "name",
                "nccGateway",
                "network",
                "params",
                "project",
                "region",
            }
        ),
        blocks=frozenset({"params"}),
        optional_computed=frozenset({"project", "region"}),
        diff_suppress=frozenset({"nccGateway", "network", "region"}),
        delete_before_replace=True,
        defaults={"bgp.advertiseMode": "DEFAULT", "bgp.keepaliveInterval": 20},
    ),
    rt.ROUTER_NAT: TypeFacts(
        resource_type=rt.ROUTER_NAT,
        force_new=frozenset(
            {"endpointTypes", "initialNatIps", "name", "project", "region", "router", "type"}
        ),
        optional_computed=frozenset({"endpointTypes", "project", "region"}),
        diff_suppress=frozenset({"region", "router"}),
        delete_before_replace=True,
        defaults={
            "icmpIdleTimeoutSec": 30,
            "tcpEstablishedIdleTimeoutSec": 1200,
            "tcpTimeWaitTimeoutSec": 120,
            "tcpTransitoryIdleTimeoutSec": 30,
            "type": "PUBLIC",
            "udpIdleTimeoutSec": 30,
        },
    ),
    # resource_compute_global_address.go: every input but labels
    rt.GLOBAL_ADDRESS: TypeFacts(
        resource_type=rt.GLOBAL_ADDRESS,
        force_new=frozenset(
            {
                "address",
                "addressType",
                "description",
                "ipVersion",
                "name",
                "network",
                "prefixLength",
                "project",
                "purpose",
            }
        ),
        optional_computed=frozenset({"address", "prefixLength", "project"}),
        diff_suppress=frozenset({"addressType", "ipVersion", "network"}),
        delete_before_replace=True,
        defaults={"addressType": "EXTERNAL"},
    ),
    # resource_service_networking_connection.go:67-86; reservedPeeringRanges PATCHes (:284-310)
    rt.PSA_CONNECTION: TypeFacts(
        resource_type=rt.PSA_CONNECTION,
        force_new=frozenset({"network", "service"}),
        diff_suppress=frozenset({"network"}),
    ),
    # resource_container_cluster.go; nodeConfig is schemaNodeConfig() (:1848)
    rt.CLUSTER: TypeFacts(
        resource_type=rt.CLUSTER,
        force_new=_NODE_CONFIG_FORCE_NEW
        | _IP_ALLOCATION
        | {
            "datapathProvider",
            "defaultMaxPodsPerNode",
            "description",
            "enableAutopilot",
            "enableKubernetesAlpha",
            "enableTpu",
            "initialNodeCount",  # :1232, not Computed
            "location",
            "masterAuth.clientCertificateConfig",
            "masterAuth.clientCertificateConfig.issueClientCertificate",
            "name",
            "network",
            "networkingMode",
            "nodePools",
            "privateClusterConfig.masterIpv4CidrBlock",
            "privateClusterConfig.privateEndpointSubnetwork",
            "project",
            "subnetwork",
        },
        blocks=_NODE_CONFIG_BLOCKS
        | {"ipAllocationPolicy", "masterAuth.clientCertificateConfig", "nodePools"},
        optional_computed=_NODE_CONFIG_OPTIONAL_COMPUTED
        | _IP_ALLOCATION
        | {
            "datapathProvider",
            "defaultMaxPodsPerNode",
            "enableTpu",
            "location",
            "networkingMode",
            "nodePools",
            "privateClusterConfig.masterIpv4CidrBlock",
            "project",
            "subnetwork",
        },
        diff_suppress=frozenset(
            {
                "datapathProvider",
                "ipAllocationPolicy.clusterIpv4CidrBlock",
                "ipAllocationPolicy.servicesIpv4CidrBlock",
                "network",
                "nodeConfig.guestAccelerators[].type",
                "nodeConfig.oauthScopes",
                "privateClusterConfig.privateEndpointSubnetwork",
                "subnetwork",
            }
        ),
        delete_before_replace=True,
        defaults={
            "deletionProtection": True,
            "enableShieldedNodes": True,
            "ipAllocationPolicy.stackType": "IPV4",
            "network": "default",
            "nodeConfig.shieldedInstanceConfig.enableIntegrityMonitoring": True,
        },
        falsy_defaults={
            **_NODE_CONFIG_FALSY,
            "enableKubernetesAlpha": False,
            "enableLegacyAbac": False,
            "enableMultiNetworking": False,
        },
    ),
    # resource_container_node_pool.go:206-609 + schemaNodeConfig()
    rt.NODE_POOL: TypeFacts(
        resource_type=rt.NODE_POOL,
        force_new=_NODE_CONFIG_FORCE_NEW
        | {
            "cluster",
            "initialNodeCount",  # :480, Optional+Computed
            "location",
            "maxPodsPerNode",
            "name",
            "namePrefix",
            "networkConfig.additionalNodeNetworkConfigs",  # :609
            "networkConfig.additionalNodeNetworkConfigs[].network",
            "networkConfig.additionalNodeNetworkConfigs[].subnetwork",
            "networkConfig.podRange",
            "networkConfig.subnetwork",
            "placementPolicy",  # :381, a ForceNew block; its type is not ForceNew
            "placementPolicy.policyName",
            "project",
            "queuedProvisioning",
            "queuedProvisioning.enabled",
        },
        blocks=_NODE_CONFIG_BLOCKS
        | {"networkConfig.additionalNodeNetworkConfigs", "placementPolicy", "queuedProvisioning"},
        optional_computed=_NODE_CONFIG_OPTIONAL_COMPUTED
        | {
            "initialNodeCount",
            "location",
            "maxPodsPerNode",
            "name",
            "namePrefix",
            "networkConfig.additionalNodeNetworkConfigs",
            "networkConfig.additionalNodeNetworkConfigs[].network",
            "networkConfig.additionalNodeNetworkConfigs[].subnetwork",
            "networkConfig.podRange",
            "networkConfig.subnetwork",
            "project",
        },
        diff_suppress=frozenset(
            {
                "networkConfig.subnetwork",
                "nodeConfig.guestAccelerators[].type",
                "nodeConfig.oauthScopes",
            }
        ),
        delete_before_replace=True,
        defaults={
            "management.autoRepair": True,
            "management.autoUpgrade": True,
            "nodeConfig.shieldedInstanceConfig.enableIntegrityMonitoring": True,
            "upgradeSettings.strategy": "SURGE",
        },
        falsy_defaults=_NODE_CONFIG_FALSY,
    ),
    # resource_lustre_instance.go:145-179,528; capacityGib is in the update mask (:996-1021)
    rt.LUSTRE: TypeFacts(
        resource_type=rt.LUSTRE,
        force_new=frozenset(
            {
                "dynamicTierOptions",
                "dynamicTierOptions.mode",
                "filesystem",
                "instanceId",
                "kmsKey",
                "location",
                "network",
                "perUnitStorageThroughput",
                "project",
            }
        ),
        blocks=frozenset({"dynamicTierOptions"}),
        optional_computed=frozenset({"project"}),
        delete_before_replace=False,  # name is output-only, instanceId not auto-named
    ),
    # resource_storage_bucket.go; AutoName("name") (resources.go:1649)
    rt.BUCKET: TypeFacts(
        resource_type=rt.BUCKET,
        force_new=frozenset(
            {
                "customPlacementConfig.dataLocations",
                "enableObjectRetention",
                "hierarchicalNamespace",
                "hierarchicalNamespace.enabled",
                "location",
                "name",
                "project",
            }
        ),
        blocks=frozenset({"hierarchicalNamespace"}),
        optional_computed=frozenset({"project"}),
        diff_suppress=frozenset({"hierarchicalNamespace"}),
        delete_before_replace=True,
        defaults={"softDeletePolicy.retentionDurationSeconds": 604800, "storageClass": "STANDARD"},
        falsy_defaults={"forceDestroy": False},
    ),
    # resource_google_service_account.go:90; account_id AutoName (resources.go:982)
    rt.SERVICE_ACCOUNT: TypeFacts(
        resource_type=rt.SERVICE_ACCOUNT,
        force_new=frozenset({"accountId", "project"}),
        optional_computed=frozenset({"project"}),
        delete_before_replace=True,
        autoname="accountId",
        falsy_defaults={"disabled": False},
    ),
    # IAM members have no Update; explicit DeleteBeforeReplace (resources.go:934-939)
    rt.PROJECT_IAM_MEMBER: TypeFacts(
        resource_type=rt.PROJECT_IAM_MEMBER,
        force_new=frozenset(
            {
                "condition",
                "condition.description",
                "condition.expression",
                "condition.title",
                "member",
                "project",
                "role",
            }
        ),
        blocks=frozenset({"condition"}),
        diff_suppress=frozenset({"member", "project"}),
        delete_before_replace=True,
        autoname=None,
    ),
    rt.BUCKET_IAM_MEMBER: TypeFacts(
        resource_type=rt.BUCKET_IAM_MEMBER,
        force_new=frozenset(
            {
                "bucket",
                "condition",
                "condition.description",
                "condition.expression",
                "condition.title",
                "member",
                "role",
            }
        ),
        blocks=frozenset({"condition"}),
        diff_suppress=frozenset({"bucket", "member"}),
    ),
    rt.PROJECT_SERVICE: TypeFacts(
        resource_type=rt.PROJECT_SERVICE,
        force_new=frozenset({"project", "service"}),
        optional_computed=frozenset({"project"}),
        diff_suppress=frozenset({"project"}),
    ),
}
"""Resource token -> what it replaces on (only the types this program creates)."""
