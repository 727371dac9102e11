"""`python tools/checkov/scan.py CHECKOV [--charts STACK EXPORT]`: checkov's Kubernetes checks.

Without `--charts`: renders each committed stack's Kubernetes objects with
`python -m preflight --manifests`. With `--charts STACK EXPORT`: the objects the operators'
charts (KubeRay, Kueue: `helm.v4.Chart`) hold in a deployed stack, as the real provider
rendered them, read from `pulumi stack export` (preflight runs offline and cannot render a
chart). Either way it adds the reviewed skips of tools/checkov/skips.yaml as checkov.io/skip
annotations to those rendered copies (entries with `source: charts` apply to the charts' objects
only, the others to preflight's), runs the given checkov executable (installed in a virtualenv
of its own), and prints the passed / failed / skipped counts per stack. Exits 1 on any failed
check, on a skip that matches no object, and on a skip checkov did not use. An entry's object
is `Kind/name`, where the name may be a shell pattern.
"""

from __future__ import annotations

import fnmatch
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
SKIPS = Path(__file__).with_name("skips.yaml")
STACKS = ("dev", "b200", "h200")


def render(stack: str, folder: Path) -> None:
    """The stack's manifests, as preflight writes them."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "preflight",
            "--stack",
            stack,
            "--quiet",
            "--manifests",
            str(folder),
        ],
        cwd=REPO,
        check=False,
        capture_output=True,
    )
    if not any(folder.glob("*.yaml")):
        raise SystemExit(f"scan: preflight wrote no manifests for {stack}")


CHART = "kubernetes:helm.sh/v4:Chart"
"""The chart component whose children `--charts` scans."""
NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"


def write_chart_objects(export: Path, folder: Path) -> int:
    """The charts' objects (and the stack's NetworkPolicies) of a `pulumi stack export` as YAML
    files; how many were written."""
    deployment = json.loads(export.read_text(encoding="utf-8")).get("deployment") or {}
    written = 0
    for resource in deployment.get("resources") or []:
        # The stack's NetworkPolicies too: checkov's graph check asks for one over each pod.
        if f"{CHART}$" not in resource.get("urn", "") and resource.get("type") != NETWORK_POLICY:
            continue
        obj = resource.get("inputs") or {}
        if "apiVersion" not in obj or "kind" not in obj:
            continue
        written += 1
        path = folder / f"{written:03d}-{obj['kind']}.yaml"
        path.write_text(yaml.safe_dump(obj, sort_keys=False), encoding="utf-8")
    return written


def entries_for(source: str, skips: Path = SKIPS) -> list[dict[str, Any]]:
    """The skip entries of one source: "charts", or "preflight" (entries without a source)."""
    entries: list[dict[str, Any]] = yaml.safe_load(skips.read_text(encoding="utf-8"))
    return [e for e in entries if e.get("source", "preflight") == source]


def annotate(
    stack: str, folder: Path, skips: Path = SKIPS, source: str = "preflight"
) -> set[tuple[str, str]]:
    """Write the skips into the rendered objects; return the (object, check) pairs placed."""
    entries = entries_for(source, skips)
    placed: set[tuple[str, str]] = set()
    matched: set[int] = set()
    for path in sorted(folder.glob("*.yaml")):
        obj = yaml.safe_load(path.read_text(encoding="utf-8"))
        ident = f"{obj['kind']}/{obj['metadata'].get('name')}"
        annotations = obj["metadata"].setdefault("annotations", {})
        count = len([k for k in annotations if k.startswith("checkov.io/skip")])
        for index, entry in enumerate(entries):
            if stack not in entry.get("only_stacks", STACKS):
                continue
            if not fnmatch.fnmatchcase(ident, entry["object"]):
                continue
            matched.add(index)
            reason = " ".join(str(entry["why"]).split())[:180]
            for check in entry["checks"]:
                count += 1
                annotations[f"checkov.io/skip{count}"] = f"{check}={reason}"
                placed.add((ident, check))
        path.write_text(yaml.safe_dump(obj, sort_keys=False), encoding="utf-8")
    for index, entry in enumerate(entries):
        if index not in matched and stack in entry.get("only_stacks", STACKS):
            raise SystemExit(
                f"scan: the skip entry for {entry['object']} matches nothing in {stack}"
            )
    return placed


def scan(
    checkov: str, stack: str, skips: Path = SKIPS, charts: Path | None = None
) -> tuple[dict[str, int], list[str]]:
    """Counts and problems for one stack (its charts' objects from `charts`, an export)."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if charts is None:
            render(stack, folder)
        elif not write_chart_objects(charts, folder):
            raise SystemExit(f"scan: {charts} holds no object of a chart")
        placed = annotate(stack, folder, skips, "preflight" if charts is None else "charts")
        # No --quiet: it drops the passed and skipped lists from the JSON. BC_SKIP_MAPPING keeps
        # checkov from fetching guideline links from its vendor's API (no network here or in CI).
        proc = subprocess.run(
            [checkov, "-d", str(folder), "--framework", "kubernetes", "-o", "json"],
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "BC_SKIP_MAPPING": "TRUE"},
        )
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise SystemExit(f"scan: checkov gave no JSON for {stack}: {proc.stderr[-2000:]}") from None
    if not isinstance(report, dict) or report.get("check_type") != "kubernetes":
        raise SystemExit(f"scan: unexpected checkov report for {stack}")
    results = report["results"]
    failed = results.get("failed_checks", [])
    skipped = results.get("skipped_checks", [])
    problems = [f"{stack}: {c['check_id']} {c['check_name']} on {c['resource']}" for c in failed]
    # checkov names a resource Kind.namespace.name (Kind.name when cluster-scoped).
    used = set()
    for check in skipped:
        parts = check["resource"].split(".")
        used.add((f"{parts[0]}/{parts[-1]}", check["check_id"]))
    problems += [
        f"{stack}: the skip of {check} on {ident} was not used; remove it"
        for ident, check in sorted(placed)
        if (ident, check) not in used
    ]
    summary = report["summary"]
    counts = {key: int(summary[key]) for key in ("passed", "failed", "skipped")}
    if counts["passed"] == 0:
        problems.append(f"{stack}: checkov passed no check at all; the scan saw nothing")
    return counts, problems


def main() -> int:
    """Scan every stack (or one stack's charts); print the counts."""
    args = sys.argv[1:]
    if len(args) not in (1, 4) or (len(args) == 4 and args[1] != "--charts"):
        raise SystemExit("usage: python tools/checkov/scan.py CHECKOV [--charts STACK EXPORT]")
    checkov = args[0]
    runs = [(args[2], Path(args[3]))] if len(args) == 4 else [(s, None) for s in STACKS]
    problems: list[str] = []
    for stack, charts in runs:
        counts, found = scan(checkov, stack, charts=charts)
        problems += found
        what = f"{stack} charts" if charts is not None else stack
        print(
            f"checkov {what}: {counts['passed']} passed, {counts['failed']} failed,"
            f" {counts['skipped']} skipped (reviewed in tools/checkov/skips.yaml)",
            flush=True,
        )
    for problem in problems:
        print(f"  {problem}", flush=True)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
