"""The operators' installation, and the one move that must not uninstall them.

KubeRay is a `helm.v4.Chart`: its objects are the stack's own resources. Kueue is still a
`helm.v3.Release` (docs/testbed.md says what its move waits for). Earlier versions installed both
as releases. When such a stack is updated, the chart's objects take over the live ones
(server-side apply), and the engine then deletes the release it no longer sees: Helm uninstalls
what the chart just took over. So an update that moves an operator from a release to a chart is
refused until the stack names that operator's release as forgotten (removed from the state, the
operator left running). The record of which operators are releases (`operators.releases`) makes
the rule hold for each later move too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from planning.naming import PROJECT

NONROOT = 65532
"""The user both operator images run as: `USER 65532:65532` in Kueue's Dockerfile (v0.19.2) and
KubeRay's ray-operator/Dockerfile (v1.6.2, the newest the module proxy serves), distroless."""
POD_SECURITY: dict[str, Any] = {
    "runAsNonRoot": True,
    "runAsUser": NONROOT,
    "runAsGroup": NONROOT,
    "seccompProfile": {"type": "RuntimeDefault"},
}
"""The operators' pod security context: the charts set no user (KubeRay no pod context at all);
the images' own user, stated, is a high UID no host account shares."""

KUBERAY_PORTS = (8080,)
"""Ports the KubeRay chart's operator serves (`http`: metrics and its probes), 1.7.0."""
KUEUE_PORTS = (9443, 8443, 8081, 8082)
"""Ports the Kueue chart's controller serves (webhooks from the API server, metrics, probes,
visibility), 0.19.2 templates/manager/manager.yaml."""


def serving_only(ports: tuple[int, ...]) -> dict[str, Any]:
    """A NetworkPolicy spec for an operator's namespace: ingress to its pods on the ports it
    serves and nothing else (it takes no other connection; egress is left open: it calls the
    API server and, for KubeRay, each Ray head's dashboard)."""
    return {
        "podSelector": {},
        "policyTypes": ["Ingress"],
        "ingress": [{"ports": [{"protocol": "TCP", "port": port} for port in ports]}],
    }


CHARTS_KEY = "operators.charts"
"""The replacement export's record of the operators a deployment installed as charts."""
RELEASES_KEY = "operators.releases"
"""The replacement export's record of the operators a deployment installed as Helm releases
(absent before this record: those versions installed every operator so)."""
RELEASES_FORGOTTEN = "helmReleasesForgotten"
"""The operators whose Helm releases of an earlier deployment were removed from the state."""
EVERY_OPERATOR = ("kuberay", "kueue")


def installed(kuberay: bool, kueue: bool) -> list[str]:
    """The operators a stack installs."""
    return [name for name, on in zip(EVERY_OPERATOR, (kuberay, kueue), strict=True) if on]


def releases_problem(
    previous: Mapping[str, Any], charts: list[str], forgotten: list[str]
) -> tuple[str, list[str]] | None:
    """Why this update would uninstall running operators, and which (None when it would not):
    an operator this update installs as a chart was a Helm release at the last deployment, and
    the stack has not named it among the releases it forgot."""
    # `name` is in every version's record: without it there is no earlier deployment to judge.
    if "name" not in previous:
        return None
    releases = previous.get(RELEASES_KEY, list(EVERY_OPERATOR))
    moved = [op for op in charts if op in releases and op not in forgotten]
    if not moved:
        return None
    return (
        f"this version installs {' and '.join(moved)} as chart objects; the stack's last"
        " deployment installed it as a Helm release, which this update would delete, and Helm"
        " would uninstall the running operator with it",
        moved,
    )


def releases_fix(moved: list[str]) -> str:
    """The documented way: forget the releases, then name them."""
    named = " && ".join(
        f"pulumi config set --path '{PROJECT}:{RELEASES_FORGOTTEN}[{i}]' {op}"
        for i, op in enumerate(moved)
    )
    return (
        "forget the release first, leaving the operator and its dependents in the state:"
        " `pulumi stack export --file s.json && python -m tools.forget_release s.json"
        f" {moved[0]} > f.json && pulumi stack import --file f.json`; then `{named} && pulumi"
        " up` (docs/operations.md, Operators as charts)"
    )
