"""The report of organisation policies a plan depends on, read from the plan itself."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from planning import resource_types as rt
from preflight import org_policies
from preflight.cli import main
from preflight.mock_run import ProgramRun
from tests.harness import REPO, run_stack, variant


def constraints(stack: str, tmp_path: Path | None = None, **changes: object) -> dict[str, bool]:
    config = (
        variant(stack, {f"nemo-rl-gke:{k}": v for k, v in changes.items()}) if changes else None
    )
    result = run_stack(stack, tmp_path, config)
    return {n.constraint: n.breaks for n in org_policies.needs(result.run)}


def test_b200_needs_the_peering_the_dns_endpoint_and_its_workload_identity_members() -> None:
    found = constraints("b200")
    assert found == {
        "compute.restrictVpcPeering": True,
        "VPC Service Controls": True,
        "iam.allowedPolicyMemberDomains / iam.managed.allowedPolicyMembers": True,
        "compute.vmExternalIpAccess": False,
        "compute.requireShieldedVm": False,
    }


def test_what_a_stack_does_not_use_is_not_asked_for(tmp_path: Path) -> None:
    assert "compute.restrictVpcPeering" not in constraints("dev")  # no Lustre
    office = [{"name": "office", "cidr": "203.0.113.0/24"}]
    ip_only = constraints(
        "dev", tmp_path, network={"controlPlaneEndpoint": "ip", "authorizedNetworks": office}
    )
    assert "VPC Service Controls" not in ip_only


def test_a_public_pool_would_break_where_external_ips_are_refused() -> None:
    run = run_stack("b200").run
    pool = run.by_type(rt.NODE_POOL)[0]
    public = copy.copy(pool)
    public.inputs = {**pool.inputs, "networkConfig": {"enablePrivateNodes": False}}
    run = ProgramRun(run.project, run.stack, [public if r is pool else r for r in run.records])
    (external,) = [
        n for n in org_policies.needs(run) if n.constraint == "compute.vmExternalIpAccess"
    ]
    assert external.breaks


def test_the_report_and_the_json_name_them(tmp_path: Path) -> None:
    report = tmp_path / "b200.json"
    assert main(["--stack-file", str(REPO / "Pulumi.b200.yaml"), "--json", str(report)]) == 0
    document = json.loads(report.read_text())
    assert document["orgPolicies"][0]["constraint"] == "compute.restrictVpcPeering"
    assert document["orgPolicies"][0]["breaksWhereEnforced"] is True
