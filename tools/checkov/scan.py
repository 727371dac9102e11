"""`python tools/checkov/scan.py CHECKOV`: checkov's Kubernetes checks on every stack's objects.

Renders each committed stack's Kubernetes objects with `python -m preflight --manifests`, adds
the reviewed skips of tools/checkov/skips.yaml as checkov.io/skip annotations to those rendered
copies, runs the given checkov executable (installed in a virtualenv of its own), and prints
the passed / failed / skipped counts per stack. Exits 1 on any failed check, on a skip that
matches no object, and on a skip checkov did not use. An entry's object is `Kind/name`, where the
name may be a shell pattern (the CRD Job's name carries the chart version).
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


def annotate(stack: str, folder: Path, skips: Path = SKIPS) -> set[tuple[str, str]]:
    """Write the skips into the rendered objects; return the (object, check) pairs placed."""
    entries: list[dict[str, Any]] = yaml.safe_load(skips.read_text(encoding="utf-8"))
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


def scan(checkov: str, stack: str, skips: Path = SKIPS) -> tuple[dict[str, int], list[str]]:
    """Counts and problems for one stack."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        render(stack, folder)
        placed = annotate(stack, folder, skips)
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
    """Scan every stack; print the counts."""
    if len(sys.argv) != 2:
        raise SystemExit("usage: python tools/checkov/scan.py PATH/TO/checkov")
    checkov = sys.argv[1]
    problems: list[str] = []
    for stack in STACKS:
        counts, found = scan(checkov, stack)
        problems += found
        print(
            f"checkov {stack}: {counts['passed']} passed, {counts['failed']} failed,"
            f" {counts['skipped']} skipped (reviewed in tools/checkov/skips.yaml)",
            flush=True,
        )
    for problem in problems:
        print(f"  {problem}", flush=True)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
