"""firewall-no-world-ingress: compliant, violating, missing props, config, unknown values."""

from __future__ import annotations

from typing import Any

import pytest

from policies.firewall import FIREWALL, no_world_ingress
from tests.policies.helpers import UNKNOWN_VALUE, record, run

ALLOW_SSH = [{"protocol": "tcp", "ports": ["22"]}]


def fw(**props: Any) -> list[Any]:
    base: dict[str, Any] = {
        "name": "fw",
        "network": "n",
        "allows": ALLOW_SSH,
        "sourceRanges": ["10.0.0.0/8"],
    }
    base.update(props)
    return [record(FIREWALL, "fw", {k: v for k, v in base.items() if v is not None})]


def test_compliant_rule_passes() -> None:
    assert run(no_world_ingress, fw()) == []


@pytest.mark.parametrize("world", ["0.0.0.0/0", "::/0"])
def test_world_ingress_is_mandatory_violation(world: str) -> None:
    violations = run(no_world_ingress, fw(sourceRanges=["10.0.0.0/8", world]))
    assert len(violations) == 1
    v = violations[0]
    assert v.enforcement_level == "mandatory"
    assert v.message.startswith(f"firewall 'fw' allows ingress from {world}")
    assert v.urn is not None
    assert v.urn.endswith("::fw")


def test_missing_direction_defaults_to_ingress_and_missing_ranges_are_fine() -> None:
    assert len(run(no_world_ingress, fw(direction=None, sourceRanges=["0.0.0.0/0"]))) == 1
    assert run(no_world_ingress, fw(sourceRanges=None)) == []


def test_egress_and_deny_rules_are_not_ingress_risks() -> None:
    assert run(no_world_ingress, fw(direction="EGRESS", sourceRanges=["0.0.0.0/0"])) == []
    assert (
        run(no_world_ingress, fw(allows=None, denies=ALLOW_SSH, sourceRanges=["0.0.0.0/0"])) == []
    )


def test_config_can_lower_the_level() -> None:
    violations = run(no_world_ingress, fw(sourceRanges=["0.0.0.0/0"]), config="advisory")  # type: ignore[arg-type]
    assert [v.enforcement_level for v in violations] == ["advisory"]


def test_unknown_source_ranges_at_preview_give_an_advisory_note() -> None:
    violations = run(no_world_ingress, fw(sourceRanges=[UNKNOWN_VALUE]))
    assert len(violations) == 1
    assert violations[0].enforcement_level == "advisory"
    assert "during preview" in violations[0].message
