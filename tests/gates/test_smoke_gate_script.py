"""gates/grpo_smoke.py against the test bed's stand-in of Ray's job API.

The script runs as the pod would (its environment from planning.verify.smoke_env), with
RAY_DASHBOARD pointed at the stand-in; its verdict is read with `make verify`'s parser.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from planning.verify import GATES_DIR, SMOKE_SCRIPT, SmokePlan, plan_smoke, smoke_env
from program.verification import verify_inputs
from testbed.ray_dashboard_standin import DashboardStandin, SmokeScenario
from tests.test_verification import config
from verify.results import parse_message


def b200_smoke(steps: int = 3) -> SmokePlan:
    cfg = config("b200", verify={"grpoSmoke": {"enabled": True}})
    return plan_smoke(cfg.grpo_run, verify_inputs(cfg), steps=steps, image="python:3")


@pytest.fixture
def dashboard() -> Iterator[DashboardStandin]:
    standin = DashboardStandin(expected_resources={"nemo_rl_gib": 1}).start()
    yield standin
    standin.stop()


def run_smoke(
    plan: SmokePlan, url: str, tmp: Path, **overrides: str
) -> tuple[subprocess.CompletedProcess[str], str]:
    tmp.mkdir(parents=True, exist_ok=True)
    env = smoke_env(plan, "nemo-rl-head-svc")
    env.update(
        {
            "RAY_DASHBOARD": url,
            "GATE_RUN_ID": "6f1d2c3b-4a5e-uid",
            "POLL_SECONDS": "0.1",
            "TERMINATION_LOG": str(tmp / "termination-log"),
            "PATH": os.environ["PATH"],
            **overrides,
        }
    )
    proc = subprocess.run(
        [sys.executable, str(GATES_DIR / SMOKE_SCRIPT)],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    log = tmp / "termination-log"
    return proc, log.read_text(encoding="utf-8") if log.exists() else ""


def test_a_smoke_that_ray_reports_succeeded_passes(
    dashboard: DashboardStandin, tmp_path: Path
) -> None:
    plan = b200_smoke()
    proc, message = run_smoke(plan, dashboard.url, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert message.splitlines()[0].startswith("grpo-smoke gate passed on 1 GPU: job_status")
    found = {m.metric: m for m in parse_message(message)}
    assert found["job_status"].value == "SUCCEEDED"
    assert found["job_status"].verdict == "PASS"
    assert float(found["duration"].value) <= float(found["duration"].threshold)
    # One submission, of exactly the planned entrypoint, under the Job's own id.
    (submission,) = dashboard.jobs
    assert submission == f"{plan.job_name}-6f1d2c3b"
    assert dashboard.jobs[submission].body["entrypoint"] == plan.entrypoint
    assert dashboard.jobs[submission].body["entrypoint_resources"] == {"nemo_rl_gib": 1}
    assert "stand-in step 3/3" in proc.stdout  # the job's log tail is in the pod's log


def test_a_failed_run_fails_the_gate_with_ray_s_message(tmp_path: Path) -> None:
    standin = DashboardStandin(
        SmokeScenario(status="FAILED", message="Job entrypoint command failed with exit code 1")
    ).start()
    try:
        proc, message = run_smoke(b200_smoke(), standin.url, tmp_path)
    finally:
        standin.stop()
    assert proc.returncode == 1
    first = message.splitlines()[0]
    assert first.startswith(
        "grpo-smoke gate FAILED on 1 GPU: job_status FAILED name (needs = SUCCEEDED)"
    ), first
    assert first.endswith("- Job entrypoint command failed with exit code 1")


def test_a_run_that_outlives_the_deadline_is_stopped(tmp_path: Path) -> None:
    standin = DashboardStandin(SmokeScenario(seconds=1e9)).start()
    try:
        proc, message = run_smoke(b200_smoke(), standin.url, tmp_path, DEADLINE_SECONDS="1")
    finally:
        standin.stop()
    assert proc.returncode == 1
    assert "job_status TIMEOUT" in message.splitlines()[0]
    assert standin.stops == list(standin.jobs)  # the GPUs are given back


def test_a_refused_submission_fails_with_the_reason(
    dashboard: DashboardStandin, tmp_path: Path
) -> None:
    proc, message = run_smoke(b200_smoke(), dashboard.url, tmp_path, ENTRYPOINT="python x.py")
    assert proc.returncode == 1
    assert "Ray refused the submission: HTTP 400" in message.splitlines()[0]
    assert dashboard.problems
    assert not dashboard.jobs


def test_an_unreachable_dashboard_fails_at_the_deadline(tmp_path: Path) -> None:
    proc, message = run_smoke(b200_smoke(), "http://127.0.0.1:9", tmp_path, DEADLINE_SECONDS="0.5")
    assert proc.returncode == 1
    assert "the Ray dashboard at http://127.0.0.1:9 never answered" in message.splitlines()[0]
    assert [m.verdict for m in parse_message(message)] == ["FAIL"]


def test_a_replaced_job_submits_anew(dashboard: DashboardStandin, tmp_path: Path) -> None:
    """Ray refuses a submission id twice: each run of the Job has its own."""
    plan = b200_smoke()
    first, _ = run_smoke(plan, dashboard.url, tmp_path / "a")
    second, _ = run_smoke(plan, dashboard.url, tmp_path / "b", GATE_RUN_ID="99aa88bb-uid")
    assert (first.returncode, second.returncode) == (0, 0), second.stdout
    assert len(dashboard.jobs) == 2
