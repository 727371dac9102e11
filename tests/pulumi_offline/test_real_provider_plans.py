"""The change model against what the real pulumi-gcp provider planned (shared test data).

For every resource of every day-2 change the real provider planned, the model (`bridge_diff`
over `gcp_force_new`'s facts, as `preflight --previous` runs it) is given the same inputs the
program sent before and after, and must plan the same operation on the same property paths.
"""

from __future__ import annotations

from functools import cache

import pytest

from preflight.recorder import Record
from pulumi_offline.bridge_diff import diff_inputs
from pulumi_offline.gcp_force_new import FACTS
from tests import real_plans
from tests.harness import run_stack

pytestmark = real_plans.needs_plans
PLANNED = list(real_plans.planned()) if real_plans.PLANS.is_file() else []


@cache
def program_record(name: str) -> Record:
    """The b200 program's resource of that name today (for its resource options)."""
    records = {r.name: r for r in run_stack("b200", known=True).run.records}
    return records[name]


def test_the_real_plans_cover_every_kind_of_change() -> None:
    ops = {p.op for p in PLANNED}
    assert ops == {"update", "replace"}
    assert len({p.change for p in PLANNED}) == 10
    assert [c["change"].split()[0] for c in real_plans.panicked()] == ["zone"]


@pytest.mark.parametrize("real", PLANNED, ids=lambda p: f"{p.change}:{p.name}")
def test_the_model_plans_what_the_real_provider_planned(real: real_plans.Planned) -> None:
    record = program_record(real.name)
    assert record.type == real.type
    diff = diff_inputs(FACTS[real.type], real.old, real.new, record.ignore_changes)
    replacing = {path for path, kind in diff.detailed.items() if kind.replaces}
    updating = {path for path, kind in diff.detailed.items() if not kind.replaces}
    assert ("replace" if replacing else "update" if updating else "same") == real.op
    assert replacing == real.replaces
    if real.op == "update":
        assert updating == real.updates
    else:
        # A replacement's in-place paths are recorded where the provider named them.
        assert real.updates <= updating
    if real.delete_before_replace is not None:
        ordered = diff.delete_before_replace or bool(record.delete_before_replace)
        assert ordered == real.delete_before_replace
