"""gates/grpo_smoke.py as the pod runs it (its environment from planning.verify.smoke_env).

Its runs against a real Ray head are in tests/engine/test_driver_under_ray.py; here, what it does
when no Ray answers. Its verdict is read with `make verify`'s parser.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from planning.verify import GATES_DIR, SMOKE_SCRIPT, SmokePlan, plan_smoke, smoke_env
from program.verification import verify_inputs
from tests.test_verification import config
from verify.results import parse_message


def b200_smoke(steps: int = 3) -> SmokePlan:
    cfg = config("b200", verify={"grpoSmoke": {"enabled": True}})
    return plan_smoke(cfg.grpo_run, verify_inputs(cfg), steps=steps, image="python:3")


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


def test_an_unreachable_dashboard_fails_at_the_deadline(tmp_path: Path) -> None:
    proc, message = run_smoke(b200_smoke(), "http://127.0.0.1:9", tmp_path, DEADLINE_SECONDS="0.5")
    assert proc.returncode == 1
    assert "the Ray dashboard at http://127.0.0.1:9 never answered" in message.splitlines()[0]
    assert [m.verdict for m in parse_message(message)] == ["FAIL"]


def test_the_verdict_names_the_driver_s_error_from_ray_s_message() -> None:
    """When the driver ran on another node than the job agent that answers `/logs` (a worker
    placed by entrypoint resources), the error is only in the log excerpt Ray puts in the
    job's message: the verdict takes it from there."""
    spec = importlib.util.spec_from_file_location("grpo_smoke", GATES_DIR / SMOKE_SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    smoke = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(smoke)
    message = (
        "Job entrypoint command failed with exit code 1, last available logs (truncated to"
        " 20,000 chars):\nRunning entrypoint for job x: bash -c '...'\nTraceback (most recent"
        ' call last):\n  File "run_grpo.py", line 1\nValueError: Failed to merge the Job\'s'
        " runtime env {'env_vars': {...}}\n"
    )
    logs = "2026-12-03 15:15:39,007\tINFO job_manager.py:587 -- Runtime env is setting up.\n"
    assert smoke.verdict_detail(message, logs) == (
        "Job entrypoint command failed with exit code 1: ValueError: Failed to merge the Job's"
        " runtime env {'env_vars': {...}}"
    )
