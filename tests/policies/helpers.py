"""Run policies through the same in-process analyzer the preflight uses."""

from __future__ import annotations

from typing import Any

from google.protobuf import struct_pb2
from pulumi.runtime.rpc import UNKNOWN
from pulumi_policy import Policy

from policies.pack import PACK_ENFORCEMENT_LEVEL, PACK_NAME, PACK_VERSION, POLICIES
from preflight.policy_runner import Violation, evaluate, reconcile_config
from preflight.recorder import Record

STACK = "urn:pulumi:test::nemo-rl-gke::pulumi:pulumi:Stack::nemo-rl-gke-test"


def record(type_: str, name: str, props: dict[str, Any], *, protect: bool = False) -> Record:
    """A registration as the engine would record it (props in wire form)."""
    struct = struct_pb2.Struct()
    struct.update(props)
    return Record(
        urn=f"urn:pulumi:test::nemo-rl-gke::{type_}::{name}",
        type=type_,
        name=name,
        custom=True,
        parent=STACK,
        dependencies=[],
        property_dependencies={},
        protect=protect,
        delete_before_replace=None,
        ignore_changes=[],
        additional_secret_outputs=[],
        provider=None,
        object=struct,
        state=dict(props),
    )


def run(
    policy: Policy, records: list[Record], config: dict[str, Any] | None = None
) -> list[Violation]:
    """Violations of one policy over `records`, with config reconciled like the CLI."""
    raw: dict[str, Any] = {p.name: "disabled" for p in POLICIES if p.name != policy.name}
    if config is not None:
        raw[policy.name] = config
    reconciled = reconcile_config(POLICIES, raw)
    _, violations = evaluate(
        records, POLICIES, reconciled, PACK_NAME, PACK_VERSION, PACK_ENFORCEMENT_LEVEL
    )
    return [v for v in violations if v.policy == policy.name]


UNKNOWN_VALUE = UNKNOWN
