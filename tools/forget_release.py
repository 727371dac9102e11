"""Forget an operator's Helm release in a stack's state, leaving everything else as it is.

A stack deployed before KubeRay became chart objects holds it as a `helm.v3.Release`; the
update that takes the live objects over as chart objects would delete that release, and Helm
would uninstall the operator (planning.operators). `pulumi state delete` cannot forget the
release alone (the RayCluster depends on it), and with --target-dependents the RayCluster
leaves the state too: its re-creation then conflicts with its own earlier field manager. So
this edits the exported state instead: the release goes, its URN leaves every dependency list,
and every other resource keeps its state (field managers included).

    pulumi stack export --file state.json
    python -m tools.forget_release state.json kuberay > forgotten.json
    pulumi stack import --file forgotten.json

prints the edited deployment to stdout and one line to stderr naming what it removed. Exit 2
with one line when the file is not a stack export or holds no such release.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"
RELEASES = {"kuberay": "nemo:apps:KubeRayOperator$kubernetes:helm.sh/v3:Release::kuberay-release"}
"""Operator -> the URN tail of the Release that installed it (after `<stack>::<project>::`)."""


class ForgetError(ValueError):
    """The input cannot be edited as asked."""


def _without(urns: Any, urn: str) -> Any:
    return [u for u in urns if u != urn] if isinstance(urns, list) else urns


def forget(export: dict[str, Any], operator: str) -> tuple[dict[str, Any], str]:
    """`export` without the operator's release: the edited export and the URN removed."""
    if operator not in RELEASES:
        raise ForgetError(f"operator {operator!r}: expected one of {', '.join(sorted(RELEASES))}")
    deployment = export.get("deployment") if isinstance(export, dict) else None
    if not isinstance(deployment, dict):
        raise ForgetError("not a `pulumi stack export` (no deployment)")
    resources = deployment.get("resources")
    if not isinstance(resources, list):
        raise ForgetError("not a `pulumi stack export` (no deployment.resources)")
    found = [
        r
        for r in resources
        if isinstance(r, dict)
        and r.get("type") == RELEASE_TYPE
        and str(r.get("urn", "")).endswith(f"::{RELEASES[operator]}")
    ]
    if len(found) != 1:
        raise ForgetError(f"the state holds no Helm release of {operator} (nothing to forget)")
    urn = str(found[0]["urn"])
    kept = []
    for resource in resources:
        if resource is found[0]:
            continue
        edited = dict(resource)
        if "dependencies" in edited:
            edited["dependencies"] = _without(edited["dependencies"], urn)
        deps = edited.get("propertyDependencies")
        if isinstance(deps, dict):
            edited["propertyDependencies"] = {k: _without(v, urn) for k, v in deps.items()}
        if edited.get("deletedWith") == urn:
            del edited["deletedWith"]
        kept.append(edited)
    return {**export, "deployment": {**deployment, "resources": kept}}, urn


def main(argv: list[str]) -> int:
    """`python -m tools.forget_release EXPORT OPERATOR`."""
    if len(argv) != 2:
        print("usage: python -m tools.forget_release STATE_EXPORT.json OPERATOR", file=sys.stderr)
        return 2
    try:
        export = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
        edited, urn = forget(export, argv[1])
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        print(f"forget_release: {argv[0]}: cannot read a stack export ({error})", file=sys.stderr)
        return 2
    except ForgetError as error:
        print(f"forget_release: {argv[0]}: {error}", file=sys.stderr)
        return 2
    print(json.dumps(edited, indent=2))
    print(f"forget_release: removed {urn} and every dependency on it", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
