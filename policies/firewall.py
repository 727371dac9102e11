"""Network exposure policies: firewall sources, RoCE networks, Lustre ports, control plane."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from ipaddress import IPv4Network, ip_network

from pulumi_policy import PolicyResource, ResourceValidationArgs

from planning.network import covers_everything
from planning.resource_types import CLUSTER, FIREWALL, GLOBAL_ADDRESS, NETWORK, NODE_POOL
from policies.base import Config, last_segment, of_type, resource_policy, stack_policy
from policies.props import get_bool, get_list, get_map, get_requested_list, get_str

WORLD = ("0.0.0.0/0", "::/0")
LUSTRE_PORTS = ("988", "6988")


def _no_world_ingress(args: ResourceValidationArgs, _config: Config) -> Iterator[str]:
    props = args.props
    if (get_str(props, "direction") or "INGRESS") != "INGRESS":  # provider default is INGRESS
        return
    if not get_list(props, "allows"):
        return  # a deny rule from anywhere narrows access; it is not the risk here
    sources = [str(r) for r in get_list(props, "sourceRanges")]
    world = [r for r in sources if r in WORLD]
    covered = covers_everything(sources)
    if covered is not None and covered not in world:
        world.append(f"{covered} (ranges that together cover it)")
    if world:
        yield (
            f"allows ingress from {', '.join(world)}; GPU nodes and Lustre must only be"
            " reachable from known ranges"
        )


no_world_ingress = resource_policy(
    name="firewall-no-world-ingress",
    description="Firewall rules must not allow ingress from 0.0.0.0/0 or ::/0.",
    types=[FIREWALL],
    check=_no_world_ingress,
    remediation=(
        "Replace 0.0.0.0/0 or ::/0 in source_ranges with the ranges that need access"
        " (the subnet, the private-services range, or an office/VPN CIDR)."
    ),
)


def roce_network_names(resources: Sequence[PolicyResource]) -> set[str]:
    """GCP names of the networks created on a RoCE (`*-vpc-roce`) profile."""
    return {
        str(n.props.get("name") or n.name)
        for n in of_type(resources, NETWORK)
        if str(n.props.get("networkProfile") or "").endswith(("-vpc-roce", "-vpc-roce-metal"))
    }


def _firewalls_on(resources: Sequence[PolicyResource], networks: set[str]) -> list[PolicyResource]:
    return [
        fw
        for fw in of_type(resources, FIREWALL)
        if last_segment(get_str(fw.props, "network")) in networks
    ]


def _none_on_roce(
    resources: Sequence[PolicyResource], _config: Config
) -> Iterator[tuple[str, PolicyResource | None]]:
    for fw in _firewalls_on(resources, roce_network_names(resources)):
        yield (
            "targets a RoCE network; RoCE VPCs carry implicit allow rules and reject user rules",
            fw,
        )


firewall_none_on_roce = stack_policy(
    name="firewall-none-on-roce",
    description="No firewall rule may target an RDMA (RoCE) network.",
    check=_none_on_roce,
    remediation="Delete the rule; RDMA traffic needs no firewall rule on a vpc-roce network.",
)


def gvnic_network_names(resources: Sequence[PolicyResource]) -> set[str]:
    """Networks GPU pools attach as extra NICs that are not RoCE: the gVNIC networks."""
    roce = roce_network_names(resources)
    names: set[str] = set()
    for pool in of_type(resources, NODE_POOL):
        for extra in get_requested_list(
            pool.props, "networkConfig", "additionalNodeNetworkConfigs"
        ):
            network = last_segment(get_str(extra, "network"))
            if network and network not in roce:
                names.add(network)
    return names


def _gvnic_internal(
    resources: Sequence[PolicyResource], config: Config
) -> Iterator[tuple[str, PolicyResource | None]]:
    allowed = ip_network(config["allowedRange"])
    for fw in _firewalls_on(resources, gvnic_network_names(resources)):
        for source in get_list(fw.props, "sourceRanges"):
            try:
                inside = ip_network(str(source)).subnet_of(allowed)  # type: ignore[arg-type]
            except (TypeError, ValueError):
                inside = False
            if not inside:
                yield (f"admits {source} on the gVNIC network; only {allowed} may reach it", fw)


firewall_gvnic_internal = stack_policy(
    name="firewall-gvnic-internal",
    description="Firewall rules on the gVNIC network admit only sources inside its private range.",
    check=_gvnic_internal,
    remediation="Limit source_ranges to the gVNIC subnet (inside 192.168.0.0/16 by default).",
    properties={
        "allowedRange": {
            "type": "string",
            "default": "192.168.0.0/16",
            "description": "Range every gVNIC firewall source must lie in (tutorial step 3.1).",
        }
    },
)


def _opens_lustre_port(fw: PolicyResource) -> bool:
    for allow in get_list(fw.props, "allows"):
        tcp = str(get_str(allow, "protocol") or "").lower() in ("tcp", "all")
        if tcp and any(str(p) in LUSTRE_PORTS for p in get_list(allow, "ports")):
            return True
    return False


def _psa_ranges(resources: Sequence[PolicyResource]) -> list[IPv4Network]:
    ranges = []
    for address in of_type(resources, GLOBAL_ADDRESS):
        if get_str(address.props, "purpose") != "VPC_PEERING":
            continue
        start, prefix = address.props.get("address"), address.props.get("prefixLength")
        if start is not None and prefix is not None:
            ranges.append(IPv4Network(f"{start}/{int(prefix)}", strict=False))
    return ranges


def _lustre_psa_only(
    resources: Sequence[PolicyResource], _config: Config
) -> Iterator[tuple[str, PolicyResource | None]]:
    lustre_rules = [fw for fw in of_type(resources, FIREWALL) if _opens_lustre_port(fw)]
    if not lustre_rules:
        return
    psa = _psa_ranges(resources)
    for fw in lustre_rules:
        for source in get_list(fw.props, "sourceRanges"):
            try:
                net = IPv4Network(str(source), strict=False)
            except ValueError:
                net = None
            if net is None or not any(net.subnet_of(r) for r in psa):
                yield (
                    f"opens the Lustre port to {source}, outside every private services range"
                    f" ({', '.join(map(str, psa)) or 'none found'})",
                    fw,
                )


firewall_lustre_psa_only = stack_policy(
    name="firewall-lustre-psa-only",
    description="Rules opening Lustre's port (988/6988) admit only the private services range.",
    check=_lustre_psa_only,
    remediation=(
        "Set the rule's source_ranges to the private services access range (the GlobalAddress"
        " with purpose VPC_PEERING) that the Lustre instance is peered through."
    ),
)


def _authorized_networks(args: ResourceValidationArgs, config: Config) -> Iterator[str]:
    props = args.props
    private_endpoint = get_bool(get_map(props, "privateClusterConfig"), "enablePrivateEndpoint")
    authorized = get_map(props, "masterAuthorizedNetworksConfig")
    if not authorized and not private_endpoint:
        yield "has a public control-plane endpoint with no authorized networks (open to the world)"
        return
    cidrs = [str(get_str(block, "cidrBlock") or "") for block in get_list(authorized, "cidrBlocks")]
    for cidr in cidrs:
        if cidr in WORLD:
            yield f"authorizes {cidr} to reach the control plane"
    world = covers_everything(cidrs)
    if world is not None and world not in cidrs:
        # 0.0.0.0/1 + 128.0.0.0/1 is the world too: judged on what the ranges cover.
        yield f"authorizes ranges that together cover {world} to reach the control plane"
    if get_bool(authorized, "gcpPublicCidrsAccessEnabled") and not config["allowGcpPublicCidrs"]:
        yield "lets every Google Cloud public IP reach the control plane"


gke_authorized_networks = resource_policy(
    name="gke-authorized-networks",
    description="The GKE control plane is reachable only from listed, non-world networks.",
    types=[CLUSTER],
    check=_authorized_networks,
    remediation=(
        "List office/VPN/CI ranges in network.authorizedNetworks (never 0.0.0.0/0), or use a"
        " private endpoint."
    ),
    properties={
        "allowGcpPublicCidrs": {
            "type": "boolean",
            "default": False,
            "description": "Accept gcpPublicCidrsAccessEnabled (any Google Cloud public IP).",
        }
    },
)
