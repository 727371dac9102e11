"""What the real pulumi-gcp provider replaces on, read from the shared reference table.

`gcp-forcenew.json` (shared test data, `reference/`, never copied into the repository) holds,
per resource type, every ForceNew path of the Terraform google-beta schema mapped onto
pulumi-gcp 10.2.0's property names, the ForceNew blocks, the Optional+Computed ForceNew
fields, the fields with diff suppression, CustomizeDiff replacements, the bridge's
delete-before-replace rule and the Check defaults, each with its sources. The stand-in reads
it when it starts; without it the stand-in refuses to plan (it would otherwise plan every
change in place, which is what the real provider does not do).

It is not derived from preflight's own copy (`pulumi_offline.gcp_force_new`) on purpose: the
stand-in stands for the real provider, and a test plans every input the program sends with
both tables and asks for the same answer. The rules that turn either table into a plan (the
bridge's diff, the subnet-shrink rule) are shared code.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from planning.network import cidr_shrinks_or_moves
from pulumi_offline.bridge_diff import CustomizeRule, TypeFacts, true_to_false
from testbed.shared import shared_dir

TABLE = Path("reference") / "gcp-forcenew.json"


class FactsMissingError(RuntimeError):
    """The shared table is not where the stand-in looks for it."""


def table_path() -> Path:
    """`<shared>/reference/gcp-forcenew.json`."""
    return shared_dir() / TABLE


def _customize(token: str, entry: Mapping[str, Any]) -> CustomizeRule | None:  # noqa: ARG001
    """The CustomizeDiff rules the table describes, as predicates (None: not modelled)."""
    path, when = str(entry["path"]), str(entry.get("when", ""))
    source = str(entry.get("source", ""))
    if path == "ipCidrRange" and "shrink" in when:
        return CustomizeRule(path, cidr_shrinks_or_moves, source)
    if when.replace(" ", "") in ("true->false", "true→false"):
        return CustomizeRule(path, true_to_false, source)
    return None  # e.g. "changes while enableAutopilot is true": the program never gets there


def _type_facts(token: str, entry: Mapping[str, Any]) -> TypeFacts:
    why = str(entry.get("deleteBeforeReplaceWhy", ""))
    autoname: str | None = "name"
    if "explicit DeleteBeforeReplace" in why:
        autoname = None
    elif "account_id" in why or "accountId" in why:
        autoname = "accountId"
    rules = [_customize(token, c) for c in entry.get("customizeDiffReplace") or []]
    return TypeFacts(
        resource_type=token,
        force_new=frozenset(entry.get("forceNew") or []),
        blocks=frozenset(entry.get("forceNewBlocks") or []),
        optional_computed=frozenset(entry.get("forceNewOptionalComputed") or []),
        diff_suppress=frozenset(entry.get("forceNewWithDiffSuppress") or []),
        customize=tuple(r for r in rules if r is not None),
        delete_before_replace=bool(entry.get("deleteBeforeReplace")),
        autoname=autoname,
        defaults=dict(entry.get("defaults") or {}),
        falsy_defaults=dict(entry.get("falsyDefaultsNotAdded") or {}),
    )


@functools.cache
def load(path: Path | None = None) -> dict[str, TypeFacts]:
    """Resource token -> its facts; FactsMissingError names the folder when the table is absent."""
    where = path or table_path()
    if not where.is_file():
        raise FactsMissingError(
            f"the replacement facts table is missing at {where}: set NEMO_RL_GKE_SHARED to the"
            " shared test data folder (it holds reference/gcp-forcenew.json)"
        )
    data = json.loads(where.read_text(encoding="utf-8"))
    return {token: _type_facts(token, entry) for token, entry in data["resources"].items()}
