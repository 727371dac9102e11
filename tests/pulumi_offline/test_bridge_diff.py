"""The bridge's diff rules (pulumi_offline.bridge_diff), on small hand-made facts.

Each rule is the one pulumi-terraform-bridge v3.136.0 applies (cited in the module): which
changes replace, how `replaces` and `detailedDiff` report them, when the old resource is
deleted first, and what `Check` adds.
"""

from __future__ import annotations

from typing import Any

import pytest

from planning.network import cidr_shrinks_or_moves
from pulumi_offline.bridge_diff import (
    CustomizeRule,
    Kind,
    TypeFacts,
    apply_check_defaults,
    diff_inputs,
)

UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
POOL = TypeFacts(
    resource_type="test:pool",
    force_new=frozenset(
        {
            "name",
            "initialNodeCount",
            "nodeConfig",
            "nodeConfig.oauthScopes",
            "nodeConfig.spot",
            "nodeConfig.accels",
            "nodeConfig.accels[].driver",
            "nodeConfig.accels[].driver.version",
            "nets",
            "nets[].network",
            "placement",
        }
    ),
    blocks=frozenset(
        {"nodeConfig", "nodeConfig.accels", "nodeConfig.accels[].driver", "nets", "placement"}
    ),
    optional_computed=frozenset({"initialNodeCount", "nodeConfig.accels[].driver"}),
    delete_before_replace=True,
    defaults={"management.autoRepair": True, "kind": "POOL", "nested[].mode": "ON"},
    falsy_defaults={"nodeConfig.spot": False},
)
BASE: dict[str, Any] = {
    "name": "gpu",
    "nodeCount": 2.0,
    "initialNodeCount": 1.0,
    "nodeConfig": {
        "machineType": "a4",
        "oauthScopes": ["cloud-platform"],
        "accels": [{"count": 8.0, "driver": {"version": "LATEST"}}],
    },
    "nets": [{"network": "a"}, {"network": "b"}],
}


def changed(**edits: Any) -> dict[str, Any]:
    """BASE with dotted-path edits (`None` drops the value)."""
    import copy

    result = copy.deepcopy(BASE)
    for dotted, value in edits.items():
        *head, last = dotted.split("__")
        target: Any = result
        for part in head:
            target = target[int(part)] if part.isdigit() else target[part]
        if value is None:
            target.pop(int(last) if last.isdigit() else last)
        elif last.isdigit():
            target[int(last)] = value
        else:
            target[last] = value
    return result


def test_a_nested_forcenew_leaf_replaces_and_replaces_names_the_top_level_property() -> None:
    news = changed(nodeConfig__accels__0__driver__version="DEFAULT")
    diff = diff_inputs(POOL, BASE, news)
    assert diff.replaces == ["nodeConfig"]
    assert diff.detailed == {"nodeConfig.accels[0].driver.version": Kind.UPDATE_REPLACE}
    assert diff.delete_before_replace


def test_an_update_inside_a_forcenew_block_is_in_place() -> None:
    diff = diff_inputs(POOL, BASE, changed(nodeConfig__machineType="a5"))
    assert diff.replaces == []
    assert diff.detailed == {"nodeConfig.machineType": Kind.UPDATE}
    assert not diff.delete_before_replace


def test_a_forcenew_block_replaces_when_it_appears_or_its_length_changes() -> None:
    assert diff_inputs(POOL, BASE, {**BASE, "placement": {"type": "COMPACT"}}).replaces == [
        "placement"
    ]
    three = changed(nets=[{"network": "a"}, {"network": "b"}, {"network": "c"}])
    assert diff_inputs(POOL, BASE, three).detailed == {"nets": Kind.UPDATE_REPLACE}


def test_a_list_of_scalars_that_is_forcenew_replaces_on_any_element() -> None:
    diff = diff_inputs(POOL, BASE, changed(nodeConfig__oauthScopes=["cloud-platform", "x"]))
    assert diff.detailed == {"nodeConfig.oauthScopes": Kind.UPDATE_REPLACE}


def test_an_optional_computed_field_dropped_from_the_program_is_no_change() -> None:
    assert not diff_inputs(POOL, BASE, changed(initialNodeCount=None)).changed
    assert diff_inputs(POOL, BASE, changed(initialNodeCount=3.0)).replaces == ["initialNodeCount"]


def test_falsy_defaults_are_what_terraform_plans_with() -> None:
    spot_false = changed(nodeConfig__spot=False)
    assert not diff_inputs(POOL, BASE, spot_false).changed
    spot_true = changed(nodeConfig__spot=True)
    # Dropping `spot: true` is a change to false, which replaces.
    diff = diff_inputs(POOL, spot_true, BASE)
    assert diff.detailed == {"nodeConfig.spot": Kind.UPDATE_REPLACE}


@pytest.mark.parametrize(
    ("edits", "replaces"),
    [
        ({"nets__0__network": UNKNOWN}, ["nets"]),
        ({"nets": UNKNOWN}, ["nets"]),
        ({"nodeConfig__machineType": UNKNOWN}, []),
        ({"nodeConfig": UNKNOWN}, ["nodeConfig"]),
        ({"nodeCount": UNKNOWN}, []),
    ],
)
def test_an_unknown_value_replaces_wherever_a_change_could(
    edits: dict[str, Any], replaces: list[str]
) -> None:
    diff = diff_inputs(POOL, BASE, changed(**edits))
    assert diff.changed
    assert diff.replaces == replaces


def test_delete_before_replace_follows_the_name_the_program_set() -> None:
    news = changed(nodeConfig__spot=True)
    assert diff_inputs(POOL, BASE, news).delete_before_replace
    # A name the provider filled in (listed in __defaults) is auto-named: create first.
    autonamed = {**news, "__defaults": ["name"]}
    assert not diff_inputs(POOL, {**BASE, "__defaults": ["name"]}, autonamed).delete_before_replace
    create_first = TypeFacts(resource_type="t", force_new=POOL.force_new, blocks=POOL.blocks)
    assert not diff_inputs(create_first, BASE, news).delete_before_replace
    explicit = TypeFacts(
        resource_type="t", force_new=frozenset({"role"}), delete_before_replace=True, autoname=None
    )
    assert diff_inputs(explicit, {"role": "a"}, {"role": "b"}).delete_before_replace


def test_ignore_changes_hides_a_path_and_what_is_under_it() -> None:
    news = changed(initialNodeCount=5.0, nodeConfig__accels__0__count=4.0)
    diff = diff_inputs(POOL, BASE, news, ["initialNodeCount", "nodeConfig.accels"])
    assert not diff.changed


def test_a_customize_diff_replacement_is_reported_as_meta() -> None:
    subnet = TypeFacts(
        resource_type="t",
        force_new=frozenset({"name"}),
        customize=(CustomizeRule("ipCidrRange", cidr_shrinks_or_moves, "test"),),
        delete_before_replace=True,
    )
    old = {"name": "s", "ipCidrRange": "10.0.0.0/24"}
    grown = diff_inputs(subnet, old, {"name": "s", "ipCidrRange": "10.0.0.0/23"})
    assert grown.replaces == []
    moved = diff_inputs(subnet, old, {"name": "s", "ipCidrRange": "10.0.1.0/24"})
    assert moved.replaces == ["__meta"]
    assert moved.detailed == {"ipCidrRange": Kind.UPDATE, "__meta": Kind.UPDATE_REPLACE}


def test_check_defaults_fill_only_truthy_values_under_present_parents() -> None:
    inputs: dict[str, Any] = {"management": {}, "nested": [{"mode": "OFF"}, {}], "kind": None}
    checked, filled = apply_check_defaults(POOL, inputs)
    assert checked == {
        "management": {"autoRepair": True},
        "nested": [{"mode": "OFF"}, {"mode": "ON"}],
        "kind": "POOL",
    }
    assert filled == ["kind"]  # top-level keys only, as the bridge's __defaults
    bare, _ = apply_check_defaults(POOL, {})
    assert bare == {"kind": "POOL"}  # no parent object, no nested default
    assert inputs == {"management": {}, "nested": [{"mode": "OFF"}, {}], "kind": None}
