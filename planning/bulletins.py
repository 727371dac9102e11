"""GKE security bulletins that bear on the stack's GKE versions: the check of the table.

The table (`planning.versions.BULLETINS`, with the other pins) follows Cluster Toolkit's
validator (`pkg/validators/security-advisories.json`, CT #5718): a PENDING bulletin affects
every version, a PATCHED one every version below the fix of its minor. Unlike Cluster Toolkit
it reads the node image each bulletin names (this platform's nodes run COS_CONTAINERD, so an
Ubuntu-only bulletin does not apply). A table read long ago says so: bulletins change, and an
old table can only err towards silence.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from typing import Final

from planning.versions import (
    BULLETINS,
    BULLETINS_READ,
    Bulletin,
    Pin,
    gke_at_least,
    parse_gke_version,
)

NODE_IMAGE: Final = "COS_CONTAINERD"
"""The node image of every pool (components.gpu_pool.node_pools)."""
STALE_AFTER_DAYS: Final = 90


def _minor(version: str) -> str:
    major, minor, *_ = parse_gke_version(version)
    return f"{major}.{minor}"


def bulletin_warnings(
    versions: Mapping[str, str | None],
    today: date,
    resolve_prefix: Mapping[str, str] | None = None,
    table: tuple[Bulletin, ...] = BULLETINS,
    read: Pin = BULLETINS_READ,
) -> list[str]:
    """One line per (key, bulletin) that affects the GKE version a key names, then one when the
    table is stale. `versions` maps a config key to its version (None: unset, not judged); a
    prefix such as `1.35` is judged as `resolve_prefix` resolves it (what GKE would pick)."""
    lines: list[str] = []
    for key, version in versions.items():
        if version is None:
            continue
        resolved = version
        if "-gke." not in version and resolve_prefix is not None:
            resolved = resolve_prefix.get(version, version)
        if "-gke." not in resolved:
            continue  # a prefix GKE resolves later: nothing precise to say
        shown = resolved if resolved == version else f"{version} ({resolved} today)"
        for bulletin in table:
            if NODE_IMAGE not in bulletin.images:
                continue
            what = f"{bulletin.cve} ({bulletin.name}, {bulletin.bulletin})"
            if bulletin.status == "PENDING":
                lines.append(
                    f"{key} {shown} is affected by {what}: no fixed GKE version was published"
                    f" when the table was read ({read.value}); watch the bulletin"
                )
                continue
            fix = bulletin.patched.get(_minor(resolved))
            if fix is None:
                lines.append(
                    f"{key} {shown}: {what} lists no fix for GKE {_minor(resolved)}; move to a"
                    f" minor it names ({', '.join(sorted(bulletin.patched))})"
                )
            elif not gke_at_least(resolved, fix):
                lines.append(
                    f"{key} {shown} is affected by {what}: the fix is in {fix}; move {key} there"
                    " (docs/runbook.md, Upgrading GKE)"
                )
    age = (today - date.fromisoformat(read.value)).days
    if age > STALE_AFTER_DAYS:
        lines.append(
            f"the security bulletin table was read {age} days ago ({read.value}): newer"
            " bulletins are not in it; check https://cloud.google.com/kubernetes-engine/"
            "security-bulletins and update BULLETINS in planning/versions.py"
        )
    return lines
