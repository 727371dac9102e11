"""Whether a saved update plan can be applied as it is, or must be applied without `--plan`.

`pulumi up --plan` holds an update to the steps and inputs its preview recorded. A provider whose
own configuration changes in the same update (created, replaced or updated: the Kubernetes
provider before the cluster exists, or when the cluster's endpoint changes) cannot check its
resources' inputs at preview, as its kubeconfig is not known yet: the plan holds them raw, and
the update stops at the first of them with "violates plan: properties changed", after the
steps before it were applied (Pulumi's update-plans page lists this limitation; measured with
pulumi-kubernetes 4.25.0 on the project's Helm releases). The deploy job therefore applies a
plan that holds steps of such a provider without `--plan` (`pulumi up` previews again, with the
policy pack) and says so in the job's summary; every other plan is applied with `--plan`.

    python -m tools.update_plan PLAN

prints one line (`with-plan` or `without-plan: ...`), and writes `with-plan=true|false` to the
file GITHUB_OUTPUT names and the line to GITHUB_STEP_SUMMARY's when they are set. Exit 0, or
2 with one line naming the problem when PLAN is not a saved update plan.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

PROVIDER_TYPE = "pulumi:providers:"
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
"""The engine's unknown value in a serialised plan."""
SECRET_SIG = "4dabf18193072939515e22adb298388d"  # noqa: S105 - the engine's marker
"""The key that marks a secret in a serialised plan (its value is encrypted: it may be unknown)."""


class PlanError(ValueError):
    """Not a saved update plan."""


def hidden(value: Any) -> bool:
    """Whether a planned input may not be known at preview: unknown, or a secret (the plan
    holds only its ciphertext; the Kubernetes provider's kubeconfig is one)."""
    if value == UNKNOWN:
        return True
    if isinstance(value, dict):
        return SECRET_SIG in value or any(hidden(v) for v in value.values())
    if isinstance(value, list):
        return any(hidden(v) for v in value)
    return False


def unsettled(entry: Mapping[str, Any]) -> bool:
    """A provider this update creates, updates or replaces with configuration it may not
    know at preview."""
    if not set(steps(entry)) - {"same"}:
        return False
    diff = (entry.get("goal") or {}).get("inputDiff") or {}
    changed = [*(diff.get("adds") or {}).values(), *(diff.get("updates") or {}).values()]
    return any(hidden(v) for v in changed)


def changing_providers(plan: Mapping[str, Any]) -> dict[str, list[str]]:
    """Providers whose configuration may be unknown at preview -> the resources of theirs
    that the plan changes."""
    plans = plan.get("resourcePlans")
    if not isinstance(plans, dict):
        raise PlanError("no resourcePlans: not a file `pulumi preview --save-plan` wrote")
    changing = {
        urn
        for urn, entry in plans.items()
        if unsettled(entry)
        and urn.split("::")[2:3]
        and urn.split("::")[2].startswith(PROVIDER_TYPE)
    }
    found: dict[str, list[str]] = {}
    for urn, entry in plans.items():
        provider = str((entry.get("goal") or {}).get("provider") or "")
        if provider.rpartition("::")[0] in changing and set(steps(entry)) - {"same"}:
            found.setdefault(provider.rpartition("::")[0], []).append(urn)
    return found


def steps(entry: Any) -> list[str]:
    """The steps a resource's plan allows."""
    if not isinstance(entry, dict) or not isinstance(entry.get("steps", []), list):
        raise PlanError("a resource plan without a list of steps")
    return [str(s) for s in entry.get("steps", [])]


def verdict(plan: Mapping[str, Any]) -> tuple[bool, str]:
    """(apply with --plan, the line that says why)."""
    found = changing_providers(plan)
    if not found:
        return True, "with-plan: every planned step's provider is configured at preview"
    named = ", ".join(
        f"{urn.rsplit('::', 1)[-1]} ({len(urns)} resources)" for urn, urns in sorted(found.items())
    )
    return False, (
        f"without-plan: the configuration of provider {named} changes in this update, so its"
        " resources were not checked at preview; pulumi up previews again with the policy pack"
    )


def main(argv: list[str]) -> int:
    """Judge one plan file; 2 on bad input."""
    if len(argv) != 1:
        print("usage: python -m tools.update_plan PLAN", file=sys.stderr)
        return 2
    try:
        plan = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
        if not isinstance(plan, dict):
            raise PlanError("not a JSON object")
        with_plan, line = verdict(plan)
    except (OSError, ValueError, IndexError) as problem:
        print(f"update_plan: {argv[0]}: cannot read the saved plan: {problem}", file=sys.stderr)
        return 2
    print(line)
    if os.environ.get("GITHUB_OUTPUT"):
        with open(os.environ["GITHUB_OUTPUT"], "a", encoding="utf-8") as out:
            out.write(f"with-plan={'true' if with_plan else 'false'}\n")
    if os.environ.get("GITHUB_STEP_SUMMARY"):
        with open(os.environ["GITHUB_STEP_SUMMARY"], "a", encoding="utf-8") as summary:
            summary.write(f"{line}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
