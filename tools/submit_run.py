"""`python -m tools.submit_run --stack STACK --name NAME [--hours H]`: a run through the queue.

Reads the stack's `grpoQueuedRunManifest` and `kubeconfig` with the Pulumi CLI, makes the
submission (planning.queue_submit: the name; with `--hours`, the run's expected length, its GPU
workers also take nodes whose host maintenance starts after the run is expected to end) and
creates it with kubectl. `--print` writes the RayJob instead of creating it. Exit 0 when
created, 2 on a usage problem (one line naming the argument), 1 when a CLI failed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from planning.queue_submit import CLEAR_UNTIL_ANNOTATION, SubmissionError, submission


def _run(args: list[str], stdin: str | None = None) -> str:
    proc = subprocess.run(args, input=stdin, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        print(
            f"submit_run: {Path(args[0]).name} failed: {proc.stderr.strip()[-600:]}",
            file=sys.stderr,
        )
        raise SystemExit(1)
    return str(proc.stdout)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(prog="python -m tools.submit_run")
    parser.add_argument("--stack", required=True)
    parser.add_argument("--name", required=True, help="the RayJob's name (the run's identity)")
    parser.add_argument("--hours", type=float, help="the run's expected length in hours")
    parser.add_argument("--print", action="store_true", help="print the RayJob, create nothing")
    parser.add_argument("--pulumi", default=os.environ.get("PULUMI", "pulumi"))
    parser.add_argument("--kubectl", default=os.environ.get("KUBECTL", "kubectl"))
    options = parser.parse_args(argv)
    outputs = json.loads(
        _run([options.pulumi, "stack", "output", "--json", "--show-secrets", "-s", options.stack])
    )
    manifest = outputs.get("grpoQueuedRunManifest")
    if not manifest:
        print(
            f"submit_run: stack {options.stack} publishes no queued run (nemo-rl-gke:kueue is"
            " off): enable the queue, or raise ray.job.attempt to run the configured job again",
            file=sys.stderr,
        )
        return 2
    try:
        job = submission(
            json.loads(manifest), options.name, now=int(time.time()), hours=options.hours
        )
    except SubmissionError as error:
        print(f"submit_run: {error}", file=sys.stderr)
        return 2
    text = json.dumps(job, indent=2)
    if options.print:
        print(text)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        # The exported kubeconfig holds no credential (it calls gke-gcloud-auth-plugin).
        kubeconfig = Path(tmp) / "kubeconfig"
        kubeconfig.write_text(outputs["kubeconfig"], encoding="utf-8")
        kubeconfig.chmod(0o600)
        _run([options.kubectl, "--kubeconfig", str(kubeconfig), "create", "-f", "-"], stdin=text)
    until = job["metadata"].get("annotations", {}).get(CLEAR_UNTIL_ANNOTATION)
    where = (
        "nodes without host maintenance before"
        f" {datetime.fromtimestamp(int(until), UTC):%Y-%m-%d %H:%M} UTC"
        if until
        else "nodes without host maintenance scheduled"
    )
    namespace = job["metadata"]["namespace"]
    print(
        f"created RayJob {namespace}/{options.name}: it waits in the queue for the GPUs on {where}"
        f" (why it waits: kubectl -n {namespace} get workloads)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
