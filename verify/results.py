"""Reading gate results out of the gate pods' termination messages (pure, no cluster)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from planning.verify import GATE_LABEL

JobState = Literal["passed", "failed", "running", "missing"]


@dataclass(frozen=True)
class Measurement:
    """One RESULT line a gate script wrote."""

    gate: str
    metric: str
    value: str
    op: str
    threshold: str
    unit: str
    verdict: str
    scope: str


def parse_message(message: str) -> list[Measurement]:
    """The RESULT lines of a termination message (verify/gates/common.sh writes them)."""
    found = []
    for line in message.splitlines():
        parts = line.split()
        if len(parts) >= 9 and parts[0] == "RESULT":
            gate, metric, value, op, threshold, unit, verdict = parts[1:8]
            found.append(
                Measurement(gate, metric, value, op, threshold, unit, verdict, " ".join(parts[8:]))
            )
    return found


def pod_message(pod: Mapping[str, Any]) -> str:
    """The gate container's termination message (current or last state)."""
    for status in pod.get("status", {}).get("containerStatuses", []) or []:
        if status.get("name") != "gate":
            continue
        for state in (status.get("state", {}), status.get("lastState", {})):
            message = (state.get("terminated") or {}).get("message")
            if message:
                return str(message)
    return ""


def job_state(job: Mapping[str, Any] | None) -> JobState:
    """Complete -> passed, Failed -> failed, otherwise running (None -> missing)."""
    if job is None:
        return "missing"
    for condition in job.get("status", {}).get("conditions", []) or []:
        if condition.get("status") != "True":
            continue
        if condition.get("type") == "Complete":
            return "passed"
        if condition.get("type") == "Failed":
            return "failed"
    return "running"


@dataclass(frozen=True)
class GateReport:
    """One gate: its Job's state, its measurements and the first line a person reads."""

    gate: str
    job: str
    state: JobState
    measurements: list[Measurement]
    summary: str


def latest_jobs(jobs: Mapping[str, str], live_jobs: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Gate -> the Job of its last run: the newest live Job labelled with the gate, else the
    stack output's name (for a gate whose Job is gone). The stack's outputs are those of its
    last successful update: after an update that a gate failed they still name the gate's
    earlier, passing Job."""
    newest: dict[str, tuple[str, str]] = {}
    for job in live_jobs:
        meta = job.get("metadata", {})
        gate = meta.get("labels", {}).get(GATE_LABEL)
        if gate is None:
            continue
        stamp = str(meta.get("creationTimestamp", ""))
        if gate not in newest or stamp > newest[gate][0]:
            newest[gate] = (stamp, str(meta["name"]))
    # A gate whose first run failed is in no output yet; a removed gate's Jobs are gone.
    return {**jobs, **{gate: name for gate, (_, name) in newest.items()}}


def report(
    jobs: Mapping[str, str],
    live_jobs: Iterable[Mapping[str, Any]],
    pods: Iterable[Mapping[str, Any]],
) -> list[GateReport]:
    """Gate -> Job name, the live Jobs and their pods -> one report per gate."""
    by_name = {j["metadata"]["name"]: j for j in live_jobs}
    pods_of: dict[str, list[Mapping[str, Any]]] = {}
    for pod in pods:
        owner = pod.get("metadata", {}).get("labels", {}).get("job-name", "")
        pods_of.setdefault(owner, []).append(pod)
    reports = []
    for gate, job in jobs.items():
        measurements: list[Measurement] = []
        summary = ""
        for pod in sorted(pods_of.get(job, []), key=lambda p: str(p["metadata"]["name"])):
            message = pod_message(pod)
            found = parse_message(message)
            measurements += found
            if found and (not summary or "FAILED" in message.splitlines()[0]):
                summary = message.splitlines()[0]
        reports.append(GateReport(gate, job, job_state(by_name.get(job)), measurements, summary))
    return reports


def table(reports: list[GateReport]) -> str:
    """The results as a fixed-width table, then each gate's verdict line."""
    rows = [("gate", "on", "measured", "value", "needs", "result")]
    for gate in reports:
        if not gate.measurements:
            rows.append((gate.gate, "-", "-", "-", "-", gate.state.upper()))
        for m in gate.measurements:
            value = f"{m.value} {m.unit}" if m.unit not in ("-", "name") else m.value
            rows.append((m.gate, m.scope, m.metric, value, f"{m.op} {m.threshold}", m.verdict))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
             for row in rows]  # fmt: skip
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines.append("")
    for gate in reports:
        lines.append(f"{gate.gate} ({gate.job}): {gate.state}" + (
            f" - {gate.summary}" if gate.summary else ""))  # fmt: skip
    return "\n".join(lines)


def exit_code(reports: list[GateReport]) -> int:
    """0 all passed, 1 a gate failed, 3 a gate has not finished (or its Job is gone)."""
    if any(r.state == "failed" or any(m.verdict == "FAIL" for m in r.measurements)
           for r in reports):  # fmt: skip
        return 1
    if any(r.state != "passed" for r in reports):
        return 3
    return 0
