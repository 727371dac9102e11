"""Unsafe but valid variants of the committed stacks, each with the policy that must stop it.

Shared by the preflight tests and the real-engine tests, so both judge the same plans. A
variant changes the stack file, the policy config, or appends resources to the program (the
unsafe firewall rules cannot come from configuration).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tests.harness import stack_data


def _firewall(name: str, network: str, source: str, port: str) -> str:
    return (
        f"_gcp.compute.Firewall({name!r}, network={network}, source_ranges=[{source!r}],"
        f" allows=[_gcp.compute.FirewallAllowArgs(protocol='tcp', ports=[{port!r}])])\n"
    )


@dataclass(frozen=True)
class Variant:
    """A plan that is valid configuration but must be blocked before `pulumi up`."""

    name: str
    base: str
    policy: str
    """The mandatory policy that must block it."""
    config: dict[str, Any] = field(default_factory=dict)
    """Top-level stack keys replaced (None: removed)."""
    program: str = ""
    """Python appended to __main__.py (names of __main__ in scope)."""
    reservation_stops_it: bool = False
    """Where the reservation can be read (the real CLI, whose stand-in describes the committed
    placeholders; preflight given the same description) the program's own reservation check
    stops this plan before any resource is registered, so no policy gets to judge it."""

    def stack_config(self) -> dict[str, Any]:
        """The variant's full stack config."""
        config = dict(stack_data(self.base)["config"])
        config.update(self.config)
        return {k: v for k, v in config.items() if v is not None}

    def main_py(self, original: str) -> str:
        """__main__.py of the variant."""
        if not self.program:
            return original
        return original + "\nimport pulumi_gcp as _gcp\n\n" + self.program


VARIANTS: tuple[Variant, ...] = (
    Variant(
        "world-open-control-plane",
        "b200",
        "gke-authorized-networks",
        # The stack refuses authorized networks that cover every address, so the world-open
        # cluster is written by hand: two halves of IPv4, as open as 0.0.0.0/0.
        program=(
            "_gcp.container.Cluster('world-open', location='us-central1', initial_node_count=1,"
            " master_authorized_networks_config=_gcp.container."
            "ClusterMasterAuthorizedNetworksConfigArgs(cidr_blocks=["
            "_gcp.container.ClusterMasterAuthorizedNetworksConfigCidrBlockArgs("
            "cidr_block='0.0.0.0/1'),"
            " _gcp.container.ClusterMasterAuthorizedNetworksConfigCidrBlockArgs("
            "cidr_block='128.0.0.0/1')]))\n"
        ),
    ),
    Variant(
        "pool-larger-than-reservation",
        "b200",
        "gpu-reservation-size",
        config={
            "nemo-rl-gke:gpu": {
                **stack_data("b200")["config"]["nemo-rl-gke:gpu"],
                "nodes": 3,
            }
        },
        reservation_stops_it=True,
    ),
    Variant(
        # The queue off on b200: the RayCluster and the GPU gates take GPUs with no queue (and
        # no scheduled health checks, which run only through the queue).
        "gpu-work-outside-the-queue",
        "b200",
        "gpu-workloads-queued",
        config={"nemo-rl-gke:kueue": {"enabled": False}, "nemo-rl-gke:health": None},
    ),
    Variant(
        "unprotected-lustre",
        "b200",
        "protect-stateful-resources",
        config={"nemo-rl-gke:protect": False},
    ),
    Variant(
        "lustre-over-quota",
        "h200",
        "lustre-capacity-quota",
        config={
            "nemo-rl-gke:lustre": {
                **stack_data("h200")["config"]["nemo-rl-gke:lustre"],
                "capacityGib": 54000,
            }
        },
    ),
    Variant(
        "spot-over-quota",
        "dev",
        "gpu-quota",
        config={
            "nemo-rl-gke:gpu": {
                **stack_data("dev")["config"]["nemo-rl-gke:gpu"],
                "autoscaling": {"min": 0, "max": 6},
            }
        },
    ),
    Variant(
        "firewall-on-roce",
        "b200",
        "firewall-none-on-roce",
        program=_firewall("roce-ssh", "nets.rdma.network_name", "192.168.1.0/24", "22"),
    ),
    Variant(
        "world-ingress",
        "b200",
        "firewall-no-world-ingress",
        program=_firewall("open-ssh", "nets.primary.network_name", "0.0.0.0/0", "22"),
    ),
    Variant(
        "gvnic-from-outside",
        "h200",
        "firewall-gvnic-internal",
        program=_firewall("gvnic-wide", "nets.gvnic.network_name", "10.0.0.0/8", "22"),
    ),
    Variant(
        "lustre-port-from-nodes",
        "b200",
        "firewall-lustre-psa-only",
        program=_firewall("lnet-wide", "nets.primary.network_name", "10.0.0.0/20", "988"),
    ),
)
