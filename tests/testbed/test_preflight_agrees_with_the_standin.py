"""Preflight's own facts against the engine test bed's, which stand for the real provider.

Preflight carries what pulumi-gcp replaces on (`pulumi_offline.gcp_force_new`) and which outputs
the cloud fills (`pulumi_offline.cloud_outputs`) for the program's resources; the stand-in reads the
shared reference table and derives the outputs from the SDK's types. These tests compare the
two on every input the program sends, for every committed stack: each value changed, dropped
and made unknown must plan the same way, and a preview must leave the same outputs unknown.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Iterator
from functools import cache
from typing import Any

import pytest
from pulumi.provider.experimental import provider as p
from pulumi.runtime import MockResourceArgs

from planning.resource_types import GCP_RESOURCES
from preflight.cli import Result
from preflight.recorder import Record
from pulumi_offline import gcp_types as types_model
from pulumi_offline.bridge_diff import apply_check_defaults, diff_inputs
from pulumi_offline.cloud_outputs import CLOUD_FILLED, PLAN_KNOWN_OUTPUTS, PLANNED
from pulumi_offline.fake_cloud import FakeCloud
from pulumi_offline.gcp_force_new import FACTS
from testbed.gcp_standin import replace_facts
from testbed.gcp_standin.provider import UNKNOWN, GcpStandIn, plain, wrap
from tests.harness import STACKS, run_stack

DROP = object()
TABLE = replace_facts.table_path()


@cache
def stack(name: str) -> Result:
    return run_stack(name, known=True)


def gcp_records() -> Iterator[Record]:
    for name in STACKS:
        yield from (r for r in stack(name).run.records if r.type.startswith("gcp:"))


def leaves(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(value, dict):
        for key, item in value.items():
            if not str(key).startswith("__"):
                yield from leaves(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from leaves(item, (*path, index))
    if path:
        yield path


def at(value: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        value = value[part]
    return value


def replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    result = copy.deepcopy(value)
    target = at(result, path[:-1])
    if new is DROP:
        target.pop(path[-1])
    else:
        target[path[-1]] = new
    return result


def other(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    if isinstance(value, str):
        return value + "x"
    if isinstance(value, list):
        return [*value, value[0]] if value else ["x"]
    return {**value, "extra": "x"}


@pytest.mark.skipif(not TABLE.is_file(), reason=f"no shared replacement facts at {TABLE}")
def test_every_input_the_program_sends_plans_the_same_with_both_tables() -> None:
    reference = replace_facts.load()
    disagreements = []
    checked = 0
    for record in gcp_records():
        mine, theirs = FACTS[record.type], reference[record.type]
        assert apply_check_defaults(mine, record.inputs) == apply_check_defaults(
            theirs, record.inputs
        ), record.name
        base = record.inputs
        for path in leaves(base):
            for new in (other(at(base, path)), DROP, UNKNOWN):
                news = replaced(base, path, new)
                a, b = diff_inputs(mine, base, news), diff_inputs(theirs, base, news)
                checked += 1
                if (a.replaces, a.delete_before_replace, a.detailed) != (
                    b.replaces,
                    b.delete_before_replace,
                    b.detailed,
                ):
                    disagreements.append((record.type, path, "drop" if new is DROP else new, a, b))
    assert checked > 1000
    assert disagreements == []


def test_a_preview_leaves_the_same_outputs_unknown_in_preflight_and_the_stand_in() -> None:
    standin = GcpStandIn()
    asyncio.run(
        standin.configure(
            p.ConfigureRequest(
                {"gcp:config:project": "proj-1", "gcp:config:region": "r"}, {}, True, True
            )
        )
    )
    for record in gcp_records():
        assert set(CLOUD_FILLED) >= {record.type}
        inputs = {k: v for k, v in record.inputs.items() if v != "[unknown]"}
        created = asyncio.run(
            standin.create(
                p.CreateRequest(
                    f"urn:pulumi:s::p::{record.type}::{record.name}",
                    {k: wrap(v) for k, v in inputs.items()},
                    60,
                    True,
                )
            )
        )
        theirs = {k: plain(v) for k, v in created.properties.items()}
        fake = FakeCloud("proj-1", "r", "r-b", preview=True)
        _, ours = fake.new_resource(MockResourceArgs(record.type, record.name, dict(inputs)))
        assert {k for k, v in ours.items() if v == UNKNOWN} == {
            k for k, v in theirs.items() if v == UNKNOWN
        }, record.name
        assert set(ours) == set(theirs), record.name


def test_preflight_lists_the_outputs_the_sdk_types_as_always_set() -> None:
    """Preflight writes the SDK's facts out (reading them costs about a second a run); they
    must stay what the SDK says, type by type."""
    assert set(CLOUD_FILLED) == set(GCP_RESOURCES)
    for token, filled in CLOUD_FILLED.items():
        assert filled == types_model.always_set_outputs(token) - PLAN_KNOWN_OUTPUTS, token
        assert PLANNED[token] == types_model.output_names(token) & PLAN_KNOWN_OUTPUTS, token
