"""The real pulumi-gcp provider's day-2 plans of the b200 stack (shared test data).

`real-pulumi-gcp-day2/plans.json` records what a real pulumi-gcp binary planned for twelve
changes of one deployed b200 stack, with the inputs the program sent before and after each. It
is the ground truth that the project's change model (`pulumi_offline.bridge_diff` with
`gcp_force_new`'s facts) and the test bed's GCP stand-in are each held to, never each other.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("NEMO_RL_GKE_SHARED", str(REPO.parent / "shared")))
PLANS = SHARED / "testdata" / "real-pulumi-gcp-day2" / "plans.json"

needs_plans = pytest.mark.skipif(
    not PLANS.is_file(),
    reason=f"the real provider's day-2 plans are not at {PLANS} (set NEMO_RL_GKE_SHARED)",
)


@dataclass(frozen=True)
class Planned:
    """One resource of one change as the real provider planned it, with what it was sent."""

    change: str
    name: str
    type: str
    old: dict[str, Any]
    new: dict[str, Any]
    op: str
    """"update", "replace", or "same" (the program sent other inputs, the provider planned
    nothing: never the case in this data, but a model must still say so)."""
    replaces: frozenset[str]
    updates: frozenset[str]
    delete_before_replace: bool | None
    """Recorded only where the engine's event log was read (None: not measured)."""


def load() -> dict[str, Any]:
    """The whole file."""
    data = json.loads(PLANS.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def planned() -> Iterator[Planned]:
    """Every resource of every change the real provider could plan (the zone change panicked
    it, so it has no plan)."""
    for change in load()["changes"]:
        plan = change.get("plan")
        if not plan:
            continue
        for name, sent in change["at_111d580"]["inputs"].items():
            real = plan.get(name, {})
            yield Planned(
                change=change["change"],
                name=name,
                type=sent["type"],
                old=sent["old"],
                new=sent["new"],
                op=real.get("op", "same"),
                replaces=frozenset(real.get("replaces", ())),
                updates=frozenset(real.get("updates", ())),
                delete_before_replace=real.get("delete_before_replace"),
            )


def panicked() -> list[dict[str, Any]]:
    """The changes the real provider could not plan, with the reason recorded."""
    return [c for c in load()["changes"] if c.get("plan") is None and c.get("error")]
