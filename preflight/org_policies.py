"""The organisation policies a plan depends on, read from the resources it registers.

An organisation's constraints are invisible to a preview: a plan that previews cleanly can fail
half-way through the first `up`, after the cluster exists. This module names each constraint
(or control) that the plan's resources run into and what happens where it is enforced, so a
platform team can ask for the exception before the first `up`. It reads only the plan: whether
the organisation enforces a constraint is for `gcloud org-policies describe` to say.
Facts: shared reference day-two-facts.md section 9.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from planning import resource_types as rt
from preflight.mock_run import ProgramRun


@dataclass(frozen=True)
class OrgPolicyNeed:
    """One constraint the plan runs into."""

    constraint: str
    what: str
    """The resources (or members) of this plan it applies to."""
    where_enforced: str
    """What happens in an organisation that enforces it, and what to ask for."""
    breaks: bool
    """True: the plan fails where enforced; False: the plan already complies."""


def _members(run: ProgramRun) -> list[str]:
    members = []
    for record in (*run.by_type(rt.PROJECT_IAM_MEMBER), *run.by_type(rt.BUCKET_IAM_MEMBER)):
        member = record.inputs.get("member")
        if isinstance(member, str) and member.startswith("principal://"):
            members.append(member)
    return members


def _dns_endpoint(run: ProgramRun) -> bool:
    for cluster in run.by_type(rt.CLUSTER):
        endpoints: Any = cluster.inputs.get("controlPlaneEndpointsConfig") or {}
        if (endpoints.get("dnsEndpointConfig") or {}).get("allowExternalTraffic") is True:
            return True
    return False


def needs(run: ProgramRun) -> list[OrgPolicyNeed]:
    """Every constraint this plan depends on, those that can break it first."""
    found: list[OrgPolicyNeed] = []
    if run.by_type(rt.PSA_CONNECTION):
        found.append(
            OrgPolicyNeed(
                "compute.restrictVpcPeering",
                "the Managed Lustre private services connection (servicenetworking) peers the"
                " cluster VPC with Google's producer network",
                "the connection is refused, Lustre never starts, and the cluster is created"
                " anyway; ask for the servicenetworking peering to be allowed",
                breaks=True,
            )
        )
    if _dns_endpoint(run):
        found.append(
            OrgPolicyNeed(
                "VPC Service Controls",
                "Pulumi reaches the cluster on its DNS-based endpoint (container.googleapis.com"
                " guards it)",
                "a runner outside the project's perimeter creates the Google Cloud half, then"
                " fails at the first Kubernetes object; run inside the perimeter or add an"
                " ingress rule for the deploy identity",
                breaks=True,
            )
        )
    members = _members(run)
    if members:
        found.append(
            OrgPolicyNeed(
                "iam.allowedPolicyMemberDomains / iam.managed.allowedPolicyMembers",
                f"{len(members)} Workload Identity grant(s) to principal:// members of the"
                " project's pool (PROJECT.svc.id.goog)",
                'a grant is refused ("do not belong to a permitted customer") after the cluster'
                " exists; whether pool principals pass a customer-ID list is not confirmed: allow"
                " the pool's principals",
                breaks=True,
            )
        )
    pools = run.by_type(rt.NODE_POOL)
    if pools:
        private = all(
            (p.inputs.get("networkConfig") or {}).get("enablePrivateNodes") is True for p in pools
        )
        found.append(
            OrgPolicyNeed(
                "compute.vmExternalIpAccess",
                f"{len(pools)} node pool(s)",
                "every pool asks for private nodes itself"
                if private
                else "a pool without private nodes gets external IPs and is refused",
                breaks=not private,
            )
        )
        shielded = all(
            ((p.inputs.get("nodeConfig") or {}).get("shieldedInstanceConfig") or {}).get(
                "enableSecureBoot"
            )
            is True
            for p in pools
        )
        found.append(
            OrgPolicyNeed(
                "compute.requireShieldedVm",
                f"{len(pools)} node pool(s)",
                "Secure Boot on every pool"
                if shielded
                else "a pool without Secure Boot is refused",
                breaks=not shielded,
            )
        )
    return sorted(found, key=lambda n: not n.breaks)


def render(found: list[OrgPolicyNeed]) -> str:
    """The report's section."""
    if not found:
        return "Organisation policies this plan depends on: none found"
    lines = ["Organisation policies this plan depends on (check them before the first up):"]
    for need in found:
        mark = "where enforced" if need.breaks else "complies"
        lines.append(f"  {need.constraint} [{mark}]: {need.what}; {need.where_enforced}")
    return "\n".join(lines)


def to_json(found: list[OrgPolicyNeed]) -> list[dict[str, Any]]:
    """The `orgPolicies` section of the `--json` document."""
    return [
        {
            "constraint": n.constraint,
            "what": n.what,
            "whereEnforced": n.where_enforced,
            "breaksWhereEnforced": n.breaks,
        }
        for n in found
    ]
