"""Security baseline for the cluster, its node pools and Kubernetes workloads.

Mapped to the CIS GKE Benchmark and checkov's CKV_GCP_* checks (README lists the mapping):
Workload Identity and the GKE metadata server, private nodes, shielded nodes with secure boot,
no legacy ABAC / basic auth / client certificates, a non-default node service account, COS,
auto-repair/upgrade, release channel, network policy (Dataplane V2), VPC-native, logging and
monitoring, labels, alpha features off, subnet flow logs, and secrets passed by reference.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pulumi_policy import EnforcementLevel, PolicyResource, ResourceValidationArgs

from planning.resource_types import CLUSTER, NODE_POOL, POD_TEMPLATE_OWNERS, SUBNETWORK
from policies.base import Config, last_segment, of_type, resource_policy, stack_policy
from policies.firewall import roce_network_names
from policies.props import (
    get_bool,
    get_list,
    get_map,
    get_requested_list,
    get_str,
    has_key,
    known_items,
)

DEFAULT_COMPUTE_SA = re.compile(r"^\d+-compute@developer\.gserviceaccount\.com$")


def _node_config(props: Mapping[str, Any]) -> Mapping[str, Any]:
    return get_map(props, "nodeConfig")


def _workload_identity(args: ResourceValidationArgs, _config: Config) -> Iterator[str]:
    if args.resource_type == CLUSTER:
        if not get_str(get_map(args.props, "workloadIdentityConfig"), "workloadPool"):
            yield "has no Workload Identity pool (workloadIdentityConfig.workloadPool)"
        return
    mode = get_str(get_map(_node_config(args.props), "workloadMetadataConfig"), "mode")
    if mode != "GKE_METADATA":
        yield f"exposes the node metadata (mode {mode or 'unset'}); use GKE_METADATA"


gke_workload_identity = resource_policy(
    name="gke-workload-identity",
    description="Clusters use Workload Identity and node pools serve only the GKE metadata server.",
    types=[CLUSTER, NODE_POOL],
    check=_workload_identity,
    remediation=(
        "Set workload_identity_config.workload_pool to <project>.svc.id.goog and every pool's"
        " node_config.workload_metadata_config.mode to GKE_METADATA."
    ),
)


def _private_nodes(args: ResourceValidationArgs, _config: Config) -> Iterator[str]:
    if args.resource_type == CLUSTER:
        if not get_bool(get_map(args.props, "privateClusterConfig"), "enablePrivateNodes"):
            yield "gives nodes public IPs (privateClusterConfig.enablePrivateNodes is not true)"
        return
    # A pool decides for its own nodes: pulumi-gcp sends a pool's networkConfig with
    # enablePrivateNodes false when the program leaves it out, overriding the cluster's setting
    # (Terraform's expandNodeNetworkConfig). Only an explicit true is private.
    if get_bool(get_map(args.props, "networkConfig"), "enablePrivateNodes") is not True:
        yield (
            "gives its nodes public IPs unless networkConfig.enablePrivateNodes is true (the"
            " provider sends false for a pool that leaves it out, overriding the cluster)"
        )


gke_private_nodes = resource_policy(
    name="gke-private-nodes",
    description="Cluster and node pool nodes have no public IP addresses.",
    types=[CLUSTER, NODE_POOL],
    check=_private_nodes,
    remediation=(
        "Set private_cluster_config.enable_private_nodes on the cluster and"
        " network_config.enable_private_nodes on every node pool, and give the VPC a Cloud NAT."
    ),
)


def _shielded(args: ResourceValidationArgs, _config: Config) -> Iterator[str]:
    if args.resource_type == CLUSTER:
        if get_bool(args.props, "enableShieldedNodes") is False:
            yield "turns shielded nodes off"
        return
    shielded = get_map(_node_config(args.props), "shieldedInstanceConfig")
    if get_bool(shielded, "enableSecureBoot") is not True:
        yield "boots without Secure Boot (shieldedInstanceConfig.enableSecureBoot)"
    if get_bool(shielded, "enableIntegrityMonitoring") is False:
        yield "turns integrity monitoring off"


gke_shielded_nodes = resource_policy(
    name="gke-shielded-nodes",
    description="Nodes are shielded VMs with Secure Boot and integrity monitoring.",
    types=[CLUSTER, NODE_POOL],
    check=_shielded,
    remediation="Enable shielded nodes and set enable_secure_boot / enable_integrity_monitoring.",
)


def _no_legacy_auth(args: ResourceValidationArgs, _config: Config) -> Iterator[str]:
    props = args.props
    if get_bool(props, "enableLegacyAbac"):
        yield "enables legacy ABAC authorization"
    auth = get_map(props, "masterAuth")
    if get_str(auth, "username") or get_str(auth, "password"):
        yield "configures basic authentication"
    if get_bool(get_map(auth, "clientCertificateConfig"), "issueClientCertificate"):
        yield "issues a client certificate"
    if get_bool(props, "enableKubernetesAlpha"):
        yield "enables Kubernetes alpha features (unsupported, auto-deleted clusters)"


gke_no_legacy_auth = resource_policy(
    name="gke-no-legacy-auth",
    description="Clusters use neither legacy ABAC, basic auth, client certificates nor alpha APIs.",
    types=[CLUSTER],
    check=_no_legacy_auth,
    remediation=(
        "Set enable_legacy_abac false, drop master_auth username/password, set"
        " issue_client_certificate false and leave enable_kubernetes_alpha unset."
    ),
)


def _node_service_account(args: ResourceValidationArgs, _config: Config) -> Iterator[str]:
    node = _node_config(args.props)
    if args.resource_type == CLUSTER and not node:
        return  # no default pool configured on the cluster resource
    account = get_str(node, "serviceAccount")
    if not account or account == "default" or DEFAULT_COMPUTE_SA.match(account):
        yield (
            f"runs nodes as {account or 'the Compute Engine default service account'}; use a"
            " dedicated least-privilege account"
        )


gke_node_service_account = resource_policy(
    name="gke-node-service-account",
    description="Nodes run as a dedicated service account, never the Compute Engine default one.",
    types=[CLUSTER, NODE_POOL],
    check=_node_service_account,
    remediation=(
        "Create a service account with roles/container.defaultNodeServiceAccount and set it as"
        " node_config.service_account on every pool (and the cluster's default pool)."
    ),
)


def _node_hardening(args: ResourceValidationArgs, _config: Config) -> Iterator[str]:
    node = _node_config(args.props)
    image = (get_str(node, "imageType") or "COS_CONTAINERD").upper()
    if not image.startswith("COS"):
        yield f"uses image {image}; Container-Optimized OS is required (and by GPUDirect RDMA)"
    management = get_map(args.props, "management")
    flex = node.get("flexStart") is True
    if get_bool(management, "autoRepair") is False and not flex:
        yield "turns auto-repair off (only flex-start pools may)"
    if get_bool(management, "autoUpgrade") is False:
        yield "turns auto-upgrade off; hold upgrades with a maintenance exclusion instead"


gke_node_hardening = resource_policy(
    name="gke-node-hardening",
    description="Node pools run COS with auto-repair and auto-upgrade on.",
    types=[NODE_POOL],
    check=_node_hardening,
    remediation=(
        "Use image_type COS_CONTAINERD, auto_repair true (false only for flex-start) and"
        " auto_upgrade true; protect training with the cluster's maintenance exclusion."
    ),
)


def _cluster_hardening(args: ResourceValidationArgs, config: Config) -> Iterator[str]:
    props = args.props
    if not get_str(get_map(props, "releaseChannel"), "channel"):
        yield "is on no release channel"
    network_policy = get_bool(get_map(props, "networkPolicy"), "enabled")
    if get_str(props, "datapathProvider") != "ADVANCED_DATAPATH" and not network_policy:
        yield "cannot enforce network policy (use Dataplane V2, ADVANCED_DATAPATH)"
    if not get_map(props, "ipAllocationPolicy"):
        yield "is not VPC-native (no ipAllocationPolicy)"
    for field in ("loggingService", "monitoringService"):
        if get_str(props, field) == "none":
            yield f"disables {field}"
    if config["requireMaintenanceExclusion"]:
        exclusions = get_list(get_map(props, "maintenancePolicy"), "maintenanceExclusions")
        if not exclusions:
            yield "has no maintenance exclusion, so GKE may recreate GPU nodes mid-run"
    if not get_map(props, "resourceLabels"):
        yield "has no resource labels"


gke_cluster_hardening = resource_policy(
    name="gke-cluster-hardening",
    description="Clusters use a release channel, network policy, VPC-native IPs, logging,"
    " labels and an upgrade exclusion for training.",
    types=[CLUSTER],
    check=_cluster_hardening,
    remediation=(
        "Set release_channel, datapath_provider ADVANCED_DATAPATH, ip_allocation_policy,"
        " resource_labels and a maintenance exclusion (cluster.maintenance.blockUpgrades)."
    ),
    properties={
        "requireMaintenanceExclusion": {
            "type": "boolean",
            "default": True,
            "description": "Require a maintenance exclusion on training clusters.",
        }
    },
)


def _flow_logs(
    resources: Sequence[PolicyResource], _config: Config
) -> Iterator[tuple[str, PolicyResource | None]]:
    roce = roce_network_names(resources)
    for subnet in of_type(resources, SUBNETWORK):
        if last_segment(get_str(subnet.props, "network")) in roce:
            continue  # RoCE subnets carry only RDMA traffic; flow logs do not apply
        if not get_map(subnet.props, "logConfig"):
            yield ("has no VPC flow logs", subnet)
        if get_requested_list(subnet.props, "secondaryIpRanges") and not get_bool(
            subnet.props, "privateIpGoogleAccess"
        ):
            yield ("hosts GKE nodes without Private Google Access", subnet)


subnet_flow_logs = stack_policy(
    name="subnet-flow-logs",
    description="Non-RDMA subnets keep VPC flow logs; the node subnet has Private Google Access.",
    check=_flow_logs,
    level=EnforcementLevel.ADVISORY,
    remediation="Set log_config on the subnet and private_ip_google_access on the node subnet.",
)

SENSITIVE_ENV = re.compile(r"(TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|CREDENTIAL|PRIVATE_KEY)", re.I)
WHERE_IT_IS = re.compile(r"_(FILE|PATH|DIR)$", re.I)
"""A name that says where a secret is (HF_TOKEN_PATH, DASHBOARD_TOKEN_FILE): its value is a
path to a mounted Secret's file, which is how a secret should reach a process."""


def _containers(value: Any) -> Iterator[Mapping[str, Any]]:
    """Every container (and init container) found anywhere under a manifest's spec.

    Props are read-only proxies: test for Mapping / Sequence, never dict / list. During a
    first preview many values are unknown (a namespace or claim name that another resource
    computes); the walk steps around those, because reading one would make the whole policy
    advisory. A container list that is itself unknown is read, so the policy says it could
    not check rather than pass.
    """
    if isinstance(value, Mapping):
        for key in ("containers", "initContainers"):
            for container in get_list(value, key):
                if isinstance(container, Mapping):
                    yield container
        for _, child in known_items(value):
            yield from _containers(child)
    elif isinstance(value, Sequence) and not isinstance(value, str):
        for _, item in known_items(value):
            yield from _containers(item)


def _secrets_by_reference(args: ResourceValidationArgs, _config: Config) -> Iterator[str]:
    for container in _containers(get_map(args.props, "spec")):
        for env in get_list(container, "env"):
            name = get_str(env, "name") or ""
            # Presence of `value` is the violation; its content may be unknown, so only the
            # keys are looked at.
            if (
                SENSITIVE_ENV.search(name)
                and not WHERE_IT_IS.search(name)
                and has_key(env, "value")
            ):
                yield (
                    f"container {get_str(container, 'name')!r} sets {name} as a literal; read it"
                    " from a Secret (valueFrom.secretKeyRef) filled from a Pulumi secret"
                )


k8s_secrets_by_reference = resource_policy(
    name="k8s-secrets-by-reference",
    description="Tokens and keys reach pods only through Secret references, never literals.",
    types=list(POD_TEMPLATE_OWNERS),
    check=_secrets_by_reference,
    remediation=(
        "Store the value with `pulumi config set --secret`, put it in a Kubernetes Secret and"
        " reference it with env[].valueFrom.secretKeyRef."
    ),
)
