"""The GCP stand-in's Diff against what the real pulumi-gcp provider planned (shared data).

The stand-in plans from the shared table of what the real provider replaces on; these tests
hold its answers, as the engine receives them over the wire, to the real provider's plans of
the same inputs. (The change model is held to the same plans in
tests/pulumi_offline/test_real_provider_plans.py; the two are never compared with each other.)
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Mapping
from functools import cache
from typing import Any

import pytest
from pulumi.provider.experimental.property_value import PropertyValue
from pulumi.runtime import proto

from pulumi_offline.bridge_diff import top_level
from testbed.gcp_standin import replace_facts
from testbed.gcp_standin.provider import GcpStandIn, _Servicer, wrap
from tests import real_plans
from tests.harness import run_stack

pytestmark = [
    real_plans.needs_plans,
    pytest.mark.skipif(
        not replace_facts.table_path().is_file(),
        reason=f"the shared replacement facts are not at {replace_facts.table_path()}",
    ),
]
PLANNED = list(real_plans.planned()) if real_plans.PLANS.is_file() else []


def standin_diff(token: str, olds: Mapping[str, Any], news: Mapping[str, Any]) -> Any:
    """The stand-in's Diff over the wire types, as the engine calls it."""
    servicer = _Servicer(["127.0.0.1:1"], "10.2.0", GcpStandIn(), "127.0.0.1:1")

    def marshal(value: Mapping[str, Any]) -> Any:
        return PropertyValue.marshal_map({k: wrap(v) for k, v in value.items()})

    request = proto.DiffRequest(
        urn=f"urn:pulumi:b200::nemo-rl-gke::{token}::x",
        id="some-id",
        old_inputs=marshal(olds),
        olds=marshal(olds),
        news=marshal(news),
    )
    return asyncio.run(servicer.Diff(request, None))


@cache
def ignored(name: str) -> tuple[str, ...]:
    """The b200 program's ignoreChanges for that resource today."""
    records = {r.name: r for r in run_stack("b200", known=True).run.records}
    return tuple(records[name].ignore_changes)


def as_the_engine_sends(
    olds: Mapping[str, Any], news: Mapping[str, Any], paths: tuple[str, ...]
) -> dict[str, Any]:
    """The engine keeps the old value of every ignored property before it asks for a Diff."""
    sent = copy.deepcopy(dict(news))
    for path in paths:
        *parents, leaf = path.split(".")
        old, new = olds, sent
        for part in parents:
            old, new = old.get(part) or {}, new.setdefault(part, {})
        if leaf in old:
            new[leaf] = copy.deepcopy(old[leaf])
        else:
            new.pop(leaf, None)
    return sent


@pytest.mark.parametrize("real", PLANNED, ids=lambda p: f"{p.change}:{p.name}")
def test_the_standin_plans_what_the_real_provider_planned(real: real_plans.Planned) -> None:
    news = as_the_engine_sends(real.old, real.new, ignored(real.name))
    response = standin_diff(real.type, real.old, news)
    assert response.changes == proto.DiffResponse.DIFF_SOME
    # The bridge cuts `replaces` to top-level properties; the detailed diff keeps the paths.
    assert set(response.replaces) == {top_level(p) for p in real.replaces}
    kinds = {path: diff.kind for path, diff in response.detailedDiff.items()}
    replacing = {path for path, kind in kinds.items() if kind in REPLACE_KINDS}
    assert replacing == real.replaces
    if real.op == "update":
        assert set(kinds) == real.updates


REPLACE_KINDS = {
    proto.PropertyDiff.ADD_REPLACE,
    proto.PropertyDiff.UPDATE_REPLACE,
    proto.PropertyDiff.DELETE_REPLACE,
}
