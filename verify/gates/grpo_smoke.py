"""The Ray job gates: the GRPO smoke (a few NeMo RL steps) and the job NCCL gate, on the stack's
RayCluster, judged by Ray and by what the job measured.

Submits the gate's Ray job to the RayCluster's job REST API (the path KubeRay takes for a RayJob in
HTTP mode: the same entrypoint and entrypoint resources), follows it until Ray reports a final
status, stops it when the deadline nears, and ends like every gate: one verdict line, then
RESULT lines (gates/common.sh's format), as stdout and as the termination message. A job that
measures prints `MEASURE <metric> <value>` lines; each threshold of MEASURES is judged against
the last such value (a metric the job never printed fails).
Standard library only: the pod runs a plain Python image.

Environment (set by the Job): GATE_NAME, GATE_SCOPE, RAY_DASHBOARD, SUBMISSION_PREFIX,
GATE_RUN_ID (the Job's UID), ENTRYPOINT, ENTRYPOINT_RESOURCES (JSON), MEASURES (JSON list of
[metric, op, threshold, unit]; optional), DEADLINE_SECONDS, POLL_SECONDS; TERMINATION_LOG.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

FINAL = ("SUCCEEDED", "FAILED", "STOPPED")
LOG_TAIL_LINES = 40
DRIVER_ERROR = re.compile(r"^(?:[\w.]+(?:Error|Exception)\b.*|nemo-rl-gke: setup step failed: .*)$")
"""A line of the driver's log that says why it failed: a Python exception's last line, or the
driver script's own setup message (planning.ray.fail_fast)."""


AFTER_THE_FACT = re.compile(
    r"^(?:Exception ignored in|Error in atexit\._run_exitfuncs|Exception in thread"
    r"|Error in sys\.excepthook)"
)
"""Python's lead-in to a traceback that did not end the program: an atexit callback (Ray's
shutdown at exit), a thread, an excepthook. What it prints comes after the driver's own error
and never says why the run failed ("RuntimeError: can't register atexit after shutdown")."""

CHAINED = re.compile(
    r"^(?:During handling of the above exception, another exception occurred:"
    r"|The above exception was the direct cause of the following exception:)$"
)
"""Python's link between two tracebacks of one chain: the second belongs where the first did."""

AT_SHUTDOWN = ("can't register atexit after shutdown", "after interpreter shutdown")
"""Errors only an interpreter that is already exiting raises: whatever lead-in Python or Ray
printed before them (or none, on a slow machine), they came after the driver's own error."""


MEASURE = re.compile(r"^MEASURE (\S+) (\S+)$")


def measurements(logs: str) -> dict[str, str]:
    """The job's `MEASURE <metric> <value>` lines (the last value of each; `none`: empty)."""
    found: dict[str, str] = {}
    for line in logs.splitlines():
        match = MEASURE.match(line.strip())
        if match:
            found[match.group(1)] = "" if match.group(2) == "none" else match.group(2)
    return found


def verdict_detail(message: str, logs: str) -> str:
    """Why a run did not pass, for the verdict line: the first sentence of Ray's message, then
    the driver's own error, from the log excerpt Ray puts in that message (the last 20,000
    characters of the driver's log) or from the job's log: the last exception line that is not
    part of a traceback Python printed after the fact (AFTER_THE_FACT), unless only those are."""
    head, _, excerpt = message.partition(", last available logs")
    errors: list[str] = []
    afterwards: list[str] = []
    after_the_fact = last_after = False
    for raw in f"{logs}\n{excerpt}".splitlines():
        line = raw.strip()
        if AFTER_THE_FACT.match(line):
            after_the_fact = True
        elif CHAINED.match(line):
            after_the_fact = last_after
        elif DRIVER_ERROR.match(line):
            last_after = after_the_fact or any(mark in line for mark in AT_SHUTDOWN)
            (afterwards if last_after else errors).append(line)
            after_the_fact = False
    found = errors or afterwards
    detail = f"{head}: {found[-1]}" if found else head
    return " ".join(detail.split())[:600]


class Gate:
    """The gate's measurements and its verdict."""

    def __init__(self) -> None:
        self.name = os.environ.get("GATE_NAME", "grpo-smoke")
        self.scope = os.environ.get("GATE_SCOPE", "1 GPU")
        self.results: list[tuple[str, str, str, str, str, str]] = []

    def result(self, metric: str, value: str, op: str, threshold: str, unit: str) -> bool:
        """Record one measurement against its threshold (empty value: not measured)."""
        if not value:
            ok = False
        elif op == "=":
            ok = value == threshold
        elif op == "<=":
            ok = float(value) <= float(threshold)
        else:
            ok = float(value) >= float(threshold)
        verdict = "PASS" if ok else "FAIL"
        self.results.append((metric, value or "none", op, threshold, unit, verdict))
        print(
            f"{self.name}: {metric} = {value or 'none'} {unit} (needs {op} {threshold}): {verdict}"
        )
        return ok

    def skip(self, metric: str, value: str) -> None:
        """Record why the gate did not run (verdict SKIP: neither a pass nor a failure)."""
        self.results.append((metric, value, "=", "none", "id", "SKIP"))
        print(f"{self.name}: {metric} = {value}: SKIP")

    def finish(self, detail: str = "") -> int:
        """Write the verdict line and the RESULT lines; 0 when nothing failed."""
        failed = [r for r in self.results if r[5] == "FAIL"]
        shown = failed or self.results
        parts = "; ".join(
            f"{m} {v} {u} ({'needs ' if failed else ''}{op} {t})" for m, v, op, t, u, _ in shown
        )
        skipped = any(r[5] == "SKIP" for r in self.results)
        verdict = "FAILED" if failed else "skipped" if skipped else "passed"
        head = f"{self.name} gate {verdict} on {self.scope}: {parts}"
        if detail:
            head += f" - {detail}"
        lines = [head] + [
            f"RESULT {self.name} {m} {v} {op} {t} {u} {verdict} {self.scope}"
            for m, v, op, t, u, verdict in self.results
        ]
        message = "\n".join(lines) + "\n"
        try:
            with open(os.environ.get("TERMINATION_LOG", "/dev/termination-log"), "wb") as log:
                # The kubelet keeps at most 4096 bytes of a termination message.
                log.write(message.encode()[:4000])
        except OSError:
            pass
        print(message, end="")
        return 1 if failed else 0


def running_jobs(listed: Any) -> list[dict[str, Any]]:
    """The Ray jobs (GET /api/jobs/) that are pending or running and are not a gate's own
    submission (those carry the gate's metadata and end at its deadline)."""
    return [
        job
        for job in listed or []
        if job.get("status") in ("PENDING", "RUNNING")
        and "nemo-rl-gke/gate" not in (job.get("metadata") or {})
    ]


def dashboard_token() -> str:
    """The dashboard's token, from the file of KubeRay's Secret (DASHBOARD_TOKEN_FILE); empty
    when no file is named (a RayCluster without token auth)."""
    path = os.environ.get("DASHBOARD_TOKEN_FILE", "")
    if not path:
        return ""
    with open(path, encoding="utf-8") as handle:
        return handle.read().strip()


def call(base: str, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    """One request to Ray's dashboard, with its token; the decoded JSON answer."""
    return json.loads(request(base, method, path, body) or "null")


def request(base: str, method: str, path: str, body: dict[str, Any] | None = None) -> str:
    """One request to Ray's dashboard, with its token; the answer's text."""
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json"} if data else {}
    token = dashboard_token()
    if token:
        headers["Authorization"] = f"Bearer {token}"
    asked = urllib.request.Request(  # noqa: S310 - the RayCluster's own http address
        base.rstrip("/") + path, data=data, method=method, headers=headers
    )
    with urllib.request.urlopen(asked, timeout=30) as answer:  # noqa: S310
        return str(answer.read().decode(errors="replace"))


def driver_log(base: str, submission: str, node: str) -> str:
    """The job's driver log: what Ray's job API serves (the agent at the address the driver's
    supervisor recorded reads its file), or, where that holds no line of the driver, Ray's log
    API for the file on the driver's node `node` (what `ray logs` reads, through the node's
    log agent)."""
    logs = str(call(base, "GET", f"/api/jobs/{submission}/logs").get("logs", ""))
    if os.environ.get("MEASURES") and not measurements(logs) and node:
        query = urllib.parse.urlencode(
            {
                "node_id": node,
                "filename": f"job-driver-{submission}.log",
                "lines": "5000",
                "filter_ansi_code": "true",
            }
        )
        try:
            logs = request(base, "GET", f"/api/v0/logs/file?{query}")
        except (OSError, ValueError) as problem:
            print(f"no driver log from Ray's log API ({problem})")
    return logs


def main() -> int:
    """Submit, follow, judge."""
    gate = Gate()
    base = os.environ["RAY_DASHBOARD"]
    deadline = time.monotonic() + float(os.environ["DEADLINE_SECONDS"])
    poll = float(os.environ.get("POLL_SECONDS", "15"))
    limit = os.environ["DEADLINE_SECONDS"]
    # One submission per run of the Job: a replaced Job (after a failure) submits anew, since
    # Ray refuses a submission id it has seen.
    submission = f"{os.environ['SUBMISSION_PREFIX']}-{os.environ.get('GATE_RUN_ID', '')[:8]}"
    submission = submission.rstrip("-")
    started = time.monotonic()

    # The head may still be starting (image pull): wait for its dashboard.
    while True:
        try:
            version = call(base, "GET", "/api/version")
            print(f"{gate.name}: Ray {version.get('ray_version', '?')} answers at {base}")
            break
        except (OSError, ValueError) as problem:
            if isinstance(problem, urllib.error.HTTPError) and problem.code in (401, 403):
                # Waiting would not help: the token is KubeRay's for this RayCluster, or none.
                gate.result("job_status", "", "=", "SUCCEEDED", "name")
                return gate.finish(
                    f"the Ray dashboard at {base} refused the gate: HTTP {problem.code} (token"
                    f" file {os.environ.get('DASHBOARD_TOKEN_FILE') or 'not set'})"
                )
            if time.monotonic() > deadline:
                gate.result("job_status", "", "=", "SUCCEEDED", "name")
                return gate.finish(f"the Ray dashboard at {base} never answered ({problem})")
            time.sleep(poll)

    # A run on the RayCluster holds its GPUs: the smoke would wait for one and fail `pulumi up`
    # (NeMo RL gives up on its placement groups after 180 s). It does not run beside a run.
    try:
        holding = running_jobs(call(base, "GET", "/api/jobs/"))
    except (OSError, ValueError) as problem:
        print(f"{gate.name}: could not list the RayCluster's jobs ({problem}); submitting")
        holding = []
    if holding:
        job = holding[0]
        name = str(job.get("submission_id") or job.get("job_id"))
        gate.skip("ray_job_holding_gpus", name)
        return gate.finish(
            f"Ray job {name} is {job.get('status')} on the RayCluster (a training run holds its"
            " GPUs): the smoke did not run; `pulumi up --replace` its Job once the run ends"
        )

    body: dict[str, Any] = {
        "entrypoint": os.environ["ENTRYPOINT"],
        "submission_id": submission,
        "metadata": {"nemo-rl-gke/gate": gate.name},
    }
    resources = json.loads(os.environ.get("ENTRYPOINT_RESOURCES") or "{}")
    if resources:
        body["entrypoint_resources"] = resources
    try:
        call(base, "POST", "/api/jobs/", body)
    except urllib.error.HTTPError as refused:
        gate.result("job_status", "", "=", "SUCCEEDED", "name")
        # Ray answers a refused submission with its server's traceback (HTTP 500 for a
        # submission id it has seen, ray 2.55.1): its last exception line says why.
        text = refused.read().decode(errors="replace")
        errors = [line.strip() for line in text.splitlines() if DRIVER_ERROR.match(line.strip())]
        reason = (errors[-1] if errors else text.strip())[:300]
        return gate.finish(f"Ray refused the submission: HTTP {refused.code} {reason}")
    print(f"{gate.name}: submitted {submission}; following it every {poll:g} s")

    status, message, node = "PENDING", "", ""
    while True:
        try:
            info = call(base, "GET", f"/api/jobs/{submission}")
            status, message = str(info.get("status", "")), str(info.get("message") or "")
            node = str(info.get("driver_node_id") or "")
        except (OSError, ValueError) as problem:
            print(f"{gate.name}: could not read the job's status ({problem}); retrying")
        if status in FINAL:
            break
        if time.monotonic() > deadline:
            # Stop it, so the GPUs are free for whatever comes next.
            try:
                call(base, "POST", f"/api/jobs/{submission}/stop")
            except (OSError, ValueError) as problem:
                print(f"{gate.name}: could not stop {submission} ({problem})")
            message = f"still {status} when the deadline came; stopped"
            status = "TIMEOUT"
            break
        time.sleep(poll)

    elapsed = f"{time.monotonic() - started:.0f}"
    logs = ""
    try:
        logs = driver_log(base, submission, node)
        tail = logs.splitlines()[-LOG_TAIL_LINES:]
        print(f"--- last {len(tail)} lines of {submission}'s log ---", *tail, "---", sep="\n")
    except (OSError, ValueError) as problem:
        print(f"{gate.name}: could not read the job's log ({problem})")
    passed = gate.result("job_status", status, "=", "SUCCEEDED", "name")
    gate.result("duration", elapsed, "<=", limit, "s")
    measured = measurements(logs)
    for metric, op, threshold, unit in json.loads(os.environ.get("MEASURES") or "[]"):
        gate.result(metric, measured.get(metric, ""), op, threshold, unit)
    detail = "" if passed else verdict_detail(message, logs)
    return gate.finish(detail)


if __name__ == "__main__":
    sys.exit(main())
