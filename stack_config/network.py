"""The address plan of the three VPCs and control-plane access, and the plan's own rules.

The cross-field rules live here too (`address_plan_problems`): every range must be distinct
and hold the pools at their maximum, and the RDMA plan must give every RDMA NIC a subnet.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from ipaddress import IPv4Network
from typing import Annotated, Any, Final, Literal, Self

from pydantic import AfterValidator, BeforeValidator, Field, field_validator, model_validator

from planning.catalog import extra_gvnic_networks
from planning.network import (
    DEFAULT_MAX_PODS_PER_NODE,
    consecutive_subnets,
    covers_everything,
    duplicates,
    overlaps,
    pod_range_per_node,
    prefix_for,
    usable_addresses,
)
from planning.rdma import RdmaPath
from planning.versions import VERSIONS, gke_at_least
from stack_config.base import ConfigModel
from stack_config.errors import ConfigProblem, show
from stack_config.gpu_pool import GpuConfig


def _parse_cidr(value: Any) -> Any:
    """Parse an IPv4 CIDR strictly, with a message that says what to write instead."""
    if isinstance(value, IPv4Network):
        return value
    if not isinstance(value, str):
        raise ConfigProblem(
            (), f"expected a CIDR string such as 10.0.0.0/20, got {show(value)}", ""
        )
    try:
        return IPv4Network(value, strict=True)
    except ValueError:
        try:
            loose = IPv4Network(value, strict=False)
        except ValueError:
            raise ConfigProblem(
                (),
                f"{show(value)} is not an IPv4 CIDR",
                "write it as ADDRESS/PREFIX, e.g. 10.0.0.0/20",
            ) from None
        raise ConfigProblem(
            (), f"{show(value)} has host bits set", f"use the network address: {loose}"
        ) from None


Cidr = Annotated[IPv4Network, BeforeValidator(_parse_cidr)]

PROHIBITED_RANGES: Final[dict[IPv4Network, str]] = {
    IPv4Network("0.0.0.0/8"): "the current (local) network, RFC 1122",
    IPv4Network("127.0.0.0/8"): "loopback, RFC 1122",
    IPv4Network("169.254.0.0/16"): "link-local, RFC 3927 (the metadata server lives there)",
    IPv4Network("224.0.0.0/4"): "multicast, RFC 5771",
    IPv4Network("255.255.255.255/32"): "the limited broadcast address, RFC 919",
    IPv4Network("199.36.153.4/30"): "restricted.googleapis.com (Private Google Access)",
    IPv4Network("199.36.153.8/30"): "private.googleapis.com (Private Google Access)",
}
"""Ranges GCP refuses for VPC subnets, secondary ranges and private services access
("Prohibited IPv4 subnet ranges", https://cloud.google.com/vpc/docs/subnets#valid-ranges).
Google's own public netblocks are prohibited too; they change, and are not checked here."""
GPU_ROUTED: Final = IPv4Network("192.168.0.0/16")
"""The range GPU nodes route on their gVNIC and RDMA NICs (the default plan and the
firewall-gvnic-internal policy keep eth1..eth9 inside it)."""


def _vpc_usable(value: IPv4Network) -> IPv4Network:
    for prohibited, why in PROHIBITED_RANGES.items():
        if value.overlaps(prohibited):
            raise ConfigProblem(
                (),
                f"{value} overlaps {prohibited} ({why}), which GCP refuses in a VPC",
                "use a private range (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16) or another"
                " range GCP lists as valid for subnets",
            )
    return value


VpcCidr = Annotated[IPv4Network, BeforeValidator(_parse_cidr), AfterValidator(_vpc_usable)]
"""A range the VPCs use (subnets, secondary ranges, private services access)."""


class AuthorizedNetwork(ConfigModel):
    """A CIDR allowed to reach the GKE control plane's public endpoint."""

    name: str = Field(min_length=1, max_length=64, description="Display name, e.g. office-vpn.")
    cidr: Cidr = Field(description="Source range, e.g. 203.0.113.0/24.")


class NetworkConfig(ConfigModel):
    """Address plan of the three VPCs and control-plane access."""

    primary_cidr: VpcCidr = Field(
        IPv4Network("10.0.0.0/20"), description="Cluster subnet (node IPs) in gcp:region."
    )
    pods_cidr: VpcCidr = Field(IPv4Network("10.4.0.0/14"), description="Pods secondary range.")
    services_cidr: VpcCidr = Field(
        IPv4Network("10.0.32.0/20"), description="Services secondary range."
    )
    gvnic_cidr: VpcCidr = Field(
        IPv4Network("192.168.0.0/21"),
        description="gVNIC subnet (second NIC, eth1); one address per GPU node (a /21 holds"
        " 2044, GKE's pool maximum is 1000).",
    )
    rdma_cidrs: list[VpcCidr] | None = Field(
        None,
        description="One subnet per RDMA NIC; default: consecutive subnets of gvnicCidr's size"
        " after it (192.168.8.0/21 ... 192.168.64.0/21), none for GPUs without RDMA.",
    )
    psa_cidr: VpcCidr = Field(
        IPv4Network("172.16.0.0/20"),
        description="Private services access range reserved for the Managed Lustre servers"
        " (a /16 to /23: Managed Lustre needs a /23 or larger; Google's examples use a /20)."
        " Outside 192.168.0.0/16, which GPU nodes route on their gVNIC and RDMA NICs.",
    )
    mtu: int = Field(
        8896,
        ge=1300,
        le=8896,
        description="MTU of the cluster and gVNIC VPCs; 8896 gives Managed Lustre up to ~10% more"
        " throughput (https://docs.cloud.google.com/managed-lustre/docs/performance).",
    )
    authorized_networks: list[AuthorizedNetwork] = Field(
        default_factory=list,
        max_length=50,
        description="CIDRs allowed to reach the control plane's IP endpoint (list of"
        " {name, cidr}; GKE takes at most 50 on a public endpoint).",
    )
    rdma: RdmaPath = Field(
        "multi-network",
        description="How GPU pods reach their RDMA NICs: multi-network - the stack's own RoCE"
        " VPC with one subnet per NIC, a gVNIC VPC and GKE Network objects, pods annotated per"
        " NIC; dranet - GKE managed DRANET (Google's current A4 / A3 Ultra path): the GPU pool"
        " with acceleratorNetworkProfile auto, GKE manages the RDMA networks, pods claim the NICs"
        " through the default-rdma ResourceClaimTemplate. Switching a running stack replaces"
        " the GPU pool (docs/runbook.md, Day-2 changes).",
    )
    rdma_devices: int | None = Field(
        None,
        ge=1,
        description="RDMA NICs each GPU pod claims with network.rdma dranet; default: every"
        " RDMA NIC of the machine (one per GPU).",
    )
    control_plane_endpoint: Literal["dns", "ip"] = Field(
        "dns",
        description="How Pulumi (and the kubeconfig and getCredentialsCommand outputs) reach the"
        " control plane: dns - GKE's DNS-based endpoint, authorized by IAM"
        " (container.clusters.connect), reachable from CI runners that have no fixed address;"
        " ip - the IP endpoint, only from network.authorizedNetworks.",
    )

    @field_validator("psa_cidr")
    @classmethod
    def _psa_size(cls, value: IPv4Network) -> IPv4Network:
        # Managed Lustre's VPC page asks for a /23 or larger range (Google's examples use a
        # /20); the API refuses a smaller one when the instance is created.
        if value.prefixlen > 23:
            raise ConfigProblem(
                (),
                f"{value} is a /{value.prefixlen}; Managed Lustre needs a private services range"
                " of /23 or larger",
                "use a /23 to /16, e.g. 172.16.0.0/20 (Google's examples use a /20)",
            )
        if value.prefixlen < 16:
            raise ConfigProblem(
                (),
                f"{value} is a /{value.prefixlen}; keep the private services range at a /16"
                " or smaller",
                "use e.g. 172.16.0.0/20",
            )
        return value

    @field_validator("psa_cidr")
    @classmethod
    def _psa_off_gpu_routes(cls, value: IPv4Network) -> IPv4Network:
        if value.overlaps(GPU_ROUTED):
            raise ConfigProblem(
                (),
                f"{value} overlaps {GPU_ROUTED}, which GPU nodes route on their gVNIC and RDMA"
                " NICs: Lustre traffic would leave on the wrong NIC and never arrive",
                "use a range outside 192.168.0.0/16, e.g. the default 172.16.0.0/20",
            )
        return value

    @field_validator("authorized_networks")
    @classmethod
    def _not_the_world(cls, value: list[AuthorizedNetwork]) -> list[AuthorizedNetwork]:
        # Judged on what the ranges cover together, not on the text 0.0.0.0/0.
        world = covers_everything([str(n.cidr) for n in value])
        if world is not None:
            shown = ", ".join(str(n.cidr) for n in value)
            raise ConfigProblem(
                (),
                f"the ranges ({shown}) together cover {world}, every address: the control"
                " plane would be open to the world",
                "list only the ranges Pulumi, CI and your users connect from (office, VPN, CI"
                " egress), or use controlPlaneEndpoint dns, which IAM guards",
            )
        return value

    @model_validator(mode="after")
    def _reachable(self) -> Self:
        if self.control_plane_endpoint == "ip" and not self.authorized_networks:
            raise ConfigProblem(
                ("controlPlaneEndpoint",),
                "ip makes Pulumi and the kubeconfig use the IP endpoint, which only"
                " network.authorizedNetworks may reach, and none is listed: after the cluster is"
                " created nothing could reach it, Pulumi included",
                "add the range Pulumi runs from to network.authorizedNetworks, or use"
                " controlPlaneEndpoint dns (the default; IAM-authorized, reachable from anywhere"
                " Pulumi runs)",
            )
        return self

    @field_validator("authorized_networks")
    @classmethod
    def _unique_names(cls, value: list[AuthorizedNetwork]) -> list[AuthorizedNetwork]:
        names = [n.name for n in value]
        for i, n in enumerate(names):
            if names.index(n) != i:
                raise ConfigProblem(
                    (i, "name"),
                    f"name {show(n)} is used twice",
                    "give each authorized network its own name",
                )
        return value


def planned_rdma_cidrs(network: NetworkConfig, gpu: GpuConfig) -> list[IPv4Network]:
    """The RDMA subnets: as configured, or planned right after the gVNIC subnet; none with
    DRANET (GKE manages the RDMA networks)."""
    if network.rdma == "dranet":
        return []
    if network.rdma_cidrs is not None:
        return list(network.rdma_cidrs)
    return consecutive_subnets(network.gvnic_cidr, gpu.profile.rdma_nics)


def address_plan_problems(
    network: NetworkConfig, gpu: GpuConfig, system_pool_max: int, lustre_enabled: bool
) -> Iterator[ConfigProblem]:
    """Every range distinct, one RDMA subnet per NIC, and room for the pools at their maximum.

    Paths are relative to the stack (`("network", "rdmaCidrs")`).
    """
    dranet = network.rdma == "dranet"
    if dranet:
        # Only the cluster's own ranges exist: GKE plans the RDMA networks itself.
        yield from _overlap_problems(network, [], lustre_enabled, with_gvnic=False)
        yield from _capacity_problems(network, gpu, system_pool_max, [], with_gvnic=False)
        return
    nics = gpu.profile.rdma_nics
    configured = network.rdma_cidrs
    if configured is not None and len(configured) != nics:
        yield ConfigProblem(
            ("network", "rdmaCidrs"),
            f"{len(configured)} RDMA CIDRs given but {gpu.profile.machine_type} has"
            f" {nics} RDMA NICs (one subnet each)",
            f"list exactly {nics} CIDRs, or remove network.rdmaCidrs to use the default plan",
        )
        return
    try:
        rdma = planned_rdma_cidrs(network, gpu)
    except ValueError as err:
        yield ConfigProblem(
            ("network", "gvnicCidr"),
            f"the default RDMA plan does not fit: {err}",
            "move network.gvnicCidr or list network.rdmaCidrs explicitly",
        )
        return
    if configured is None:
        for net in rdma:
            try:
                _vpc_usable(net)
            except ConfigProblem as problem:
                yield ConfigProblem(
                    ("network", "gvnicCidr"),
                    f"the default RDMA plan after it reaches {problem.problem}",
                    "move network.gvnicCidr or list network.rdmaCidrs explicitly",
                )
                return
    for dup in duplicates(rdma):
        yield ConfigProblem(
            ("network", "rdmaCidrs"),
            f"{dup} is listed twice",
            "give each RDMA NIC its own subnet",
        )
    yield from _overlap_problems(network, rdma, lustre_enabled, with_gvnic=True)
    yield from _capacity_problems(network, gpu, system_pool_max, rdma, with_gvnic=True)


def _overlap_problems(
    network: NetworkConfig, rdma: list[IPv4Network], lustre_enabled: bool, with_gvnic: bool
) -> Iterator[ConfigProblem]:
    """No two of the stack's ranges share an address."""
    ranges = {
        "primaryCidr": network.primary_cidr,
        "podsCidr": network.pods_cidr,
        "servicesCidr": network.services_cidr,
    }
    if with_gvnic:
        ranges["gvnicCidr"] = network.gvnic_cidr
    ranges.update({f"rdmaCidrs[{i}]": net for i, net in enumerate(rdma)})
    if lustre_enabled:
        ranges["psaCidr"] = network.psa_cidr
    for first, second in overlaps(ranges):
        if first.startswith("rdmaCidrs") and second.startswith("rdmaCidrs"):
            continue  # exact duplicates reported above; partial overlaps fall through below
        yield ConfigProblem(
            ("network", second),
            f"{ranges[second]} overlaps network.{first} ({ranges[first]})",
            "choose non-overlapping ranges for primary, pods, services, gVNIC, RDMA and the"
            " Lustre private services range",
        )
    for i, net in enumerate(rdma):
        for j in range(i + 1, len(rdma)):
            if net != rdma[j] and net.overlaps(rdma[j]):
                yield ConfigProblem(
                    ("network", f"rdmaCidrs[{j}]"),
                    f"{rdma[j]} overlaps network.rdmaCidrs[{i}] ({net})",
                    "give each RDMA NIC a separate subnet",
                )


def _capacity_problems(
    network: NetworkConfig,
    gpu: GpuConfig,
    system_pool_max: int,
    rdma: list[IPv4Network],
    with_gvnic: bool,
) -> Iterator[ConfigProblem]:
    """Every range must hold the pools at their maximum: GKE stops adding nodes (or pods)
    when a subnet runs out, long after `pulumi up` succeeded."""
    gpu_nodes = gpu.max_nodes
    all_nodes = gpu_nodes + system_pool_max
    per_gpu_node: dict[str, IPv4Network] = {}
    if with_gvnic and extra_gvnic_networks(gpu.profile):
        per_gpu_node["gvnicCidr"] = network.gvnic_cidr
    per_gpu_node.update({f"rdmaCidrs[{i}]": net for i, net in enumerate(rdma)})
    for key, net in per_gpu_node.items():
        if usable_addresses(net) < gpu_nodes:
            yield ConfigProblem(
                ("network", key),
                f"{net} holds {usable_addresses(net)} GPU nodes, but the GPU pool can scale"
                f" to {gpu_nodes}",
                f"use a /{prefix_for(gpu_nodes)} or larger (the default plan's /21s hold"
                " 2044), or lower gpu.nodes / gpu.autoscaling.max",
            )
    primary = network.primary_cidr
    if usable_addresses(primary) < all_nodes:
        yield ConfigProblem(
            ("network", "primaryCidr"),
            f"{primary} holds {usable_addresses(primary)} nodes, but the pools can scale to"
            f" {all_nodes} ({gpu_nodes} GPU + {system_pool_max} system)",
            f"use a /{prefix_for(all_nodes)} or larger",
        )
    # GKE gives every node a power-of-two block of the pods range at least twice its maximum
    # pods: a /26 per GPU node at 32 pods, a /24 per system node at GKE's default 110.
    pods = network.pods_cidr
    gpu_block = pod_range_per_node(gpu.max_pods_per_node)
    system_block = pod_range_per_node(DEFAULT_MAX_PODS_PER_NODE)
    needed = gpu_nodes * gpu_block + system_pool_max * system_block
    if pods.num_addresses < needed:
        yield ConfigProblem(
            ("network", "podsCidr"),
            f"{pods} holds {pods.num_addresses} pod addresses, but the pools at their maximum"
            f" take {needed}: {gpu_nodes} GPU nodes x {gpu_block} (gpu.maxPodsPerNode"
            f" {gpu.max_pods_per_node}) + {system_pool_max} system nodes x {system_block}"
            f" ({DEFAULT_MAX_PODS_PER_NODE} pods)",
            f"use a /{32 - math.ceil(math.log2(needed))} or larger, or lower gpu.maxPodsPerNode",
        )


def rdma_path_problems(network: NetworkConfig, gpu: GpuConfig) -> Iterator[ConfigProblem]:
    """The RDMA path's own rules: DRANET only on machines with RDMA NICs, never beside the
    multi-network ranges (Google's docs: both APIs would manage the same NICs), on GPU nodes
    at GKE's floor, and no claim for more NICs than the machine has."""
    row = gpu.profile
    if network.rdma != "dranet":
        if network.rdma_devices is not None:
            yield ConfigProblem(
                ("network", "rdmaDevices"),
                "is read only with network.rdma dranet (multi-network pods get every NIC"
                " through their interface annotations)",
                "remove network.rdmaDevices, or set network.rdma: dranet",
            )
        return
    if not row.rdma_nics:
        yield ConfigProblem(
            ("network", "rdma"),
            f"dranet claims RDMA NICs, and {row.machine_type} (gpu.type {row.key}) has none",
            "remove network.rdma (it defaults to multi-network); DRANET is for b200 (A4) and"
            " h200 (A3 Ultra)",
        )
        return
    for field, key in (("rdma_cidrs", "rdmaCidrs"), ("gvnic_cidr", "gvnicCidr")):
        if field in network.model_fields_set:
            yield ConfigProblem(
                ("network", key),
                "plans a network beside network.rdma dranet, where GKE manages the RDMA"
                " networks itself (acceleratorNetworkProfile auto) and Google's docs call"
                " DRANET and the multi-network API mutually exclusive",
                f"remove network.{key}, or set network.rdma: multi-network",
            )
    if network.rdma_devices is not None and network.rdma_devices > row.rdma_nics:
        yield ConfigProblem(
            ("network", "rdmaDevices"),
            f"claims {network.rdma_devices} RDMA NICs per pod, but {row.machine_type} has"
            f" {row.rdma_nics}: no node could ever allocate the claim",
            f"set at most {row.rdma_nics}, or remove it to claim every NIC of the node",
        )
    floor = VERSIONS.gke_min_dranet.value
    if gpu.version is not None and not gke_at_least(gpu.version, floor):
        yield ConfigProblem(
            ("gpu", "version"),
            f"{gpu.version} is older than {floor}, the minimum for GKE managed DRANET"
            " (network.rdma dranet)",
            f"set gpu.version to {floor} or newer, or remove it",
        )


def rdma_devices(network: NetworkConfig, gpu: GpuConfig) -> int:
    """RDMA NICs each GPU pod claims under DRANET: configured, or every NIC of the node."""
    return network.rdma_devices or gpu.profile.rdma_nics
