"""A first `pulumi up` in a fresh project must need no second `up` to finish.

GCP creates some things only as a side effect of others: the Workload Identity pool
`<project>.svc.id.goog` exists only once the project's first Workload Identity cluster does,
and nodes that start before their service account has its roles come up unable to write logs
or pull images. The engine orders creation by dependencies only, so these tests walk the
recorded dependency graph (explicit, through inputs, and through the provider).
"""

from __future__ import annotations

from functools import cache

import pytest

from preflight.cli import Result
from preflight.recorder import Record
from tests.conftest import committed
from tests.harness import STACKS, stack_data

IAM_MEMBER_TYPES = (
    "gcp:projects/iAMMember:IAMMember",
    "gcp:storage/bucketIAMMember:BucketIAMMember",
)


def closure(result: Result) -> dict[str, set[str]]:
    """URN -> every URN it waits for, transitively (dependencies, parents' dependencies, and
    the explicit provider of a resource)."""
    records = {r.urn: r for r in result.run.records}

    def direct(record: Record) -> set[str]:
        deps = set(record.dependencies)
        for urns in record.property_dependencies.values():
            deps |= set(urns)
        if record.provider:
            deps.add(record.provider)
        return deps

    @cache
    def waits(urn: str) -> frozenset[str]:
        record = records.get(urn)
        if record is None:
            return frozenset()
        found: set[str] = set()
        for dep in direct(record):
            found.add(dep)
            found |= waits(dep)
            # Waiting for a component waits for its children.
            found |= {r.urn for r in records.values() if r.parent == dep}
            for child in [r for r in records.values() if r.parent == dep]:
                found |= waits(child.urn)
        return frozenset(found)

    return {urn: set(waits(urn)) for urn in records}


def named(result: Result, name: str) -> Record:
    (record,) = [r for r in result.run.records if r.name == name]
    return record


@pytest.mark.parametrize("stack", STACKS)
def test_every_grant_to_a_workload_identity_principal_waits_for_the_cluster(stack: str) -> None:
    result = committed(stack)
    waits = closure(result)
    cluster = named(result, "gke-cluster").urn
    grants = [
        r
        for r in result.run.records
        if r.type in IAM_MEMBER_TYPES and ".svc.id.goog/" in str(r.inputs.get("member", ""))
    ]
    assert grants, "the workload has Workload Identity grants"
    for grant in grants:
        assert cluster in waits[grant.urn], f"{grant.name} may be created before the pool exists"


@pytest.mark.parametrize("stack", STACKS)
def test_the_cluster_and_every_pool_wait_for_the_node_account_and_its_roles(stack: str) -> None:
    result = committed(stack)
    waits = closure(result)
    account = named(result, "gke-nodes").urn
    roles = [r.urn for r in result.run.records if r.name.startswith("gke-nodes-")]
    assert len(roles) == 2
    starters = [named(result, "gke-cluster")] + [
        r for r in result.run.records if r.type == "gcp:container/nodePool:NodePool"
    ]
    for resource in starters:
        assert account in waits[resource.urn], resource.name
        for role in roles:
            assert role in waits[resource.urn], f"{resource.name} does not wait for {role}"


@pytest.mark.parametrize("stack", STACKS)
def test_everything_in_the_cluster_waits_for_a_schedulable_pool(stack: str) -> None:
    result = committed(stack)
    waits = closure(result)
    system_pool = named(result, "system-pool").urn
    for record in result.run.records:
        if record.type.startswith("kubernetes:") and record.custom:
            assert system_pool in waits[record.urn], record.name


def test_lustre_still_starts_without_waiting_for_the_cluster() -> None:
    """The fixes above must not serialize the slowest resource behind GKE."""
    result = committed("b200")
    waits = closure(result)
    lustre = named(result, "lustre-instance").urn
    cluster = named(result, "gke-cluster").urn
    assert cluster not in waits[lustre]
    assert lustre not in waits[cluster]


SERVICE = "gcp:projects/service:Service"


@pytest.mark.parametrize("stack", STACKS)
def test_every_cloud_resource_waits_for_the_apis(stack: str) -> None:
    """In a fresh project the APIs are off: a VPC, cluster or bucket created before its API
    is enabled fails the first `up`. Every GCP resource waits for every API the stack enables
    (through the network, the cluster or an explicit dependency)."""
    result = committed(stack)
    waits = closure(result)
    services = [r for r in result.run.records if r.type == SERVICE]
    assert services
    for record in result.run.records:
        if not record.custom or not record.type.startswith("gcp:") or record.type == SERVICE:
            continue
        for service in services:
            assert service.urn in waits[record.urn], (
                f"{record.name} may start before {service.name}"
            )


@pytest.mark.parametrize("stack", STACKS)
def test_the_apis_enabled_are_the_ones_the_plan_calls(stack: str) -> None:
    """The list is derived from what the program creates: every resource type's API is
    enabled, and every API enabled serves a resource here or something that runs after."""
    from planning.apis import RUNTIME_APIS, api_of

    result = committed(stack)
    enabled = {r.inputs["service"] for r in result.run.records if r.type == SERVICE}
    used = {
        r.type: api_of(r.type)
        for r in result.run.records
        if r.custom and r.type.startswith("gcp:") and r.type != SERVICE
    }
    assert None not in used.values(), [t for t, api in used.items() if api is None]
    assert enabled == set(used.values()) | set(RUNTIME_APIS)
    for record in result.run.records:
        if record.type == SERVICE:
            # destroying one stack never turns an API off under another stack
            assert record.inputs["disableOnDestroy"] is False
            assert record.inputs["project"] == stack_data(stack)["config"]["gcp:project"]


@pytest.mark.parametrize("stack", STACKS)
def test_an_upgrade_moves_the_gpu_pool_after_the_system_pool(stack: str) -> None:
    """Both pools wait for the cluster (control plane first), and the GPU pool for the system
    pool, so one update that moves all three moves the GPU nodes last."""
    result = committed(stack)
    waits = closure(result)
    cluster, system_pool = named(result, "gke-cluster").urn, named(result, "system-pool").urn
    assert cluster in waits[system_pool]
    assert {cluster, system_pool} <= waits[named(result, "gpu-pool").urn]
