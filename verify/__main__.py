"""`python -m verify --stack STACK`: the acceptance gates' results of a deployed stack.

Reads the stack's outputs with the Pulumi CLI (`verifyJobs`, `workloadNamespace`,
`kubeconfig`), then the gate Jobs and their pods with kubectl, and prints one table: every
measurement against its threshold. Exit 0 when every gate passed, 1 when one failed, 3 when
one has not finished, 2 on a usage problem.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from planning.verify import GATE_LABEL
from verify.results import exit_code, latest_jobs, report, table


def _run(args: list[str], **kwargs: Any) -> str:
    proc = subprocess.run(args, capture_output=True, text=True, check=False, **kwargs)  # noqa: S603
    if proc.returncode != 0:
        raise SystemExit(f"verify: {Path(args[0]).name} failed: {proc.stderr.strip()[-600:]}")
    return str(proc.stdout)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(prog="python -m verify")
    parser.add_argument("--stack", required=True)
    parser.add_argument("--pulumi", default=os.environ.get("PULUMI", "pulumi"))
    parser.add_argument("--kubectl", default=os.environ.get("KUBECTL", "kubectl"))
    options = parser.parse_args(argv)
    outputs = json.loads(
        _run([options.pulumi, "stack", "output", "--json", "--show-secrets", "-s", options.stack])
    )
    jobs = outputs.get("verifyJobs")
    if not jobs:
        print(f"verify: stack {options.stack} runs no gate (nemo-rl-gke:verify is off)")
        return 2
    namespace = outputs["workloadNamespace"]
    with tempfile.TemporaryDirectory() as tmp:
        # The exported kubeconfig holds no credential (it calls gke-gcloud-auth-plugin).
        kubeconfig = Path(tmp) / "kubeconfig"
        kubeconfig.write_text(outputs["kubeconfig"], encoding="utf-8")
        kubeconfig.chmod(0o600)
        kubectl = [options.kubectl, "--kubeconfig", str(kubeconfig), "-n", namespace]
        live = json.loads(_run([*kubectl, "get", "jobs", "-l", GATE_LABEL, "-o", "json"]))
        jobs = latest_jobs(jobs, live.get("items", []))
        selector = f"job-name in ({','.join(sorted(jobs.values()))})"
        pods = json.loads(_run([*kubectl, "get", "pods", "-l", selector, "-o", "json"]))
    reports = report(jobs, live.get("items", []), pods.get("items", []))
    print(f"Acceptance gates of stack {options.stack} (namespace {namespace}):\n")
    print(table(reports))
    return exit_code(reports)


if __name__ == "__main__":
    sys.exit(main())
