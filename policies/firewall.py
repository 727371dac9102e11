"""Firewall policies: no rule may admit the whole internet."""

from __future__ import annotations

from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
)

from policies.props import get_list, get_str

FIREWALL = "gcp:compute/firewall:Firewall"
WORLD = ("0.0.0.0/0", "::/0")


def _no_world_ingress(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != FIREWALL:
        return
    props = args.props
    if (get_str(props, "direction") or "INGRESS") != "INGRESS":  # provider default is INGRESS
        return
    if not get_list(props, "allows"):
        return  # a deny rule from anywhere narrows access; it is not the risk here
    world = [r for r in get_list(props, "sourceRanges") if r in WORLD]
    if world:
        report(
            f"firewall '{args.name}' allows ingress from {', '.join(world)}; GPU nodes and"
            " Lustre must only be reachable from known ranges",
            None,
        )


no_world_ingress = ResourceValidationPolicy(
    name="firewall-no-world-ingress",
    description="Firewall rules must not allow ingress from 0.0.0.0/0 or ::/0.",
    validate=_no_world_ingress,
    enforcement_level=EnforcementLevel.MANDATORY,
    remediation_steps=(
        "Replace 0.0.0.0/0 or ::/0 in source_ranges with the ranges that need access"
        " (the subnet, the private-services range, or an office/VPN CIDR)."
    ),
)
