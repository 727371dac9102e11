"""verify/gates/grpo_smoke.py as the pod runs it (its environment from planning.verify.smoke_env).

Its runs against a real Ray head are in tests/program/test_ray_driver_under_ray.py (passing) and
tests/engine/test_driver_under_ray.py (failing); here, what it does when no Ray answers. Its verdict
is read with `make verify`'s parser.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from planning.verify import GATES_DIR, SMOKE_SCRIPT, SmokePlan, plan_smoke, smoke_env
from program.verify import verify_inputs
from tests.program.test_verify import config
from tests.verify.harness import run_smoke_script
from verify.results import parse_message


def b200_smoke(steps: int = 3) -> SmokePlan:
    cfg = config("b200", verify={"grpoSmoke": {"enabled": True}})
    return plan_smoke(cfg.grpo_run, verify_inputs(cfg), steps=steps, image="python:3")


def run_smoke(
    plan: SmokePlan, url: str, tmp: Path, **overrides: str
) -> tuple[subprocess.CompletedProcess[str], str]:
    env = {
        **smoke_env(plan, "nemo-rl-head-svc"),
        "RAY_DASHBOARD": url,
        "GATE_RUN_ID": "6f1d2c3b-4a5e-uid",
        "POLL_SECONDS": "0.1",
        **overrides,
    }
    return run_smoke_script(env, tmp, timeout=60)


def test_an_unreachable_dashboard_fails_at_the_deadline(tmp_path: Path) -> None:
    proc, message = run_smoke(b200_smoke(), "http://127.0.0.1:9", tmp_path, DEADLINE_SECONDS="0.5")
    assert proc.returncode == 1
    assert "the Ray dashboard at http://127.0.0.1:9 never answered" in message.splitlines()[0]
    assert [m.verdict for m in parse_message(message)] == ["FAIL"]


def smoke_module() -> Any:
    """verify/gates/grpo_smoke.py as a module (it is a script the Job runs, not a package)."""
    spec = importlib.util.spec_from_file_location("grpo_smoke", GATES_DIR / SMOKE_SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    smoke = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(smoke)
    return smoke


def test_the_verdict_names_the_driver_s_error_from_ray_s_message() -> None:
    """When the driver ran on another node than the job agent that answers `/logs` (a worker
    placed by entrypoint resources), the error is only in the log excerpt Ray puts in the
    job's message: the verdict takes it from there."""
    smoke = smoke_module()
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


def test_an_error_python_prints_after_the_driver_s_own_is_not_the_verdict() -> None:
    """Seen under real Ray 2.55.1: after the driver's error, Ray's shutdown at exit can fail in an
    atexit callback; Python prints that traceback last, and the verdict named it instead of the
    driver's error. A run whose only traceback came after the fact still names it."""
    smoke = smoke_module()
    driver = (
        "Traceback (most recent call last):\n"
        '  File "run_grpo.py", line 236, in <module>\n'
        "RuntimeError: 1 of 1 workers cannot train: a worker died before it reported\n"
        "IndexError: list index out of range\n"
    )
    noise = (
        "Exception ignored in atexit callback: <function shutdown at 0x7f0>\n"
        "Traceback (most recent call last):\n"
        '  File "ray/_private/worker.py", line 2030, in shutdown\n'
        "RuntimeError: can't register atexit after shutdown\n"
    )
    head = "Job entrypoint command failed with exit code 1"
    message = f"{head}, last available logs (truncated to 20,000 chars):\n"
    assert smoke.verdict_detail(message + driver + noise, "") == (
        f"{head}: IndexError: list index out of range"
    )
    thread = "Exception in thread Thread-3 (poll):\nTraceback (most recent call last):\n"
    assert smoke.verdict_detail(message + driver + thread + "OSError: closed\n", "") == (
        f"{head}: IndexError: list index out of range"
    )
    assert smoke.verdict_detail(message + noise, "") == (
        f"{head}: RuntimeError: can't register atexit after shutdown"
    )


def test_a_chained_or_lead_in_free_shutdown_error_is_not_the_verdict() -> None:
    """Seen in CI on a slower machine: the shutdown error came without the lead-in Python prints
    for an atexit callback, and the verdict named it instead of the driver's IndexError. A
    traceback chained to one printed after the fact belongs to it too."""
    smoke = smoke_module()
    head = "Job entrypoint command failed with exit code 1"
    message = f"{head}, last available logs (truncated to 20,000 chars):\n"
    driver = "Traceback (most recent call last):\nIndexError: list index out of range\n"
    bare = (
        "Traceback (most recent call last):\nRuntimeError: can't register atexit after shutdown\n"
    )
    assert smoke.verdict_detail(message + driver + bare, "") == (
        f"{head}: IndexError: list index out of range"
    )
    chained = (
        "Exception ignored in atexit callback: <function shutdown at 0x7f0>\n"
        "Traceback (most recent call last):\nKeyError: 'node'\n\n"
        "During handling of the above exception, another exception occurred:\n\n"
        "Traceback (most recent call last):\nOSError: socket closed\n"
    )
    assert smoke.verdict_detail(message + driver + chained, "") == (
        f"{head}: IndexError: list index out of range"
    )
    # A chain of the driver's own keeps its last error.
    own = driver + "\nThe above exception was the direct cause of the following exception:\n\n"
    own += "Traceback (most recent call last):\nRuntimeError: 1 of 1 workers cannot train\n"
    assert smoke.verdict_detail(message + own, "") == (
        f"{head}: RuntimeError: 1 of 1 workers cannot train"
    )


def test_a_measuring_job_s_values_are_its_own_last_measure_lines() -> None:
    """Only the driver's own lines count: an actor's output reaches the log prefixed by Ray."""
    logs = "MEASURE a 1\n(Rank pid=1) MEASURE a 9\nMEASURE a 2\nMEASURE b none\nMEASURE c\n"
    assert smoke_module().measurements(logs) == {"a": "2", "b": ""}


class _RayLogThread:
    """A stdout on which another writer (Ray's log thread, printing an actor's line with
    `print`) gets in after every write call: its text at once, its newline later."""

    def __init__(self) -> None:
        self.text = ""

    def write(self, text: str) -> int:
        self.text += text + "(_Rank pid=7) NCCL INFO ring 0"
        return len(text)

    def flush(self) -> None:
        self.text += "\n"


def test_measure_lines_survive_a_log_thread_writing_between_calls(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The job NCCL driver's MEASURE lines reach the gate whole although Ray's log thread
    writes to the same stdout (a worker's line inside a MEASURE line lost it at random)."""
    spec = importlib.util.spec_from_file_location("job_nccl", GATES_DIR / "job_nccl.py")
    assert spec is not None
    assert spec.loader is not None
    driver = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(driver)
    out = _RayLogThread()
    monkeypatch.setattr(sys, "stdout", out)
    measures = {"ranks_formed": "8", "gib_version": "v1.1.1", "all_gather_busbw": "344.10"}
    driver.print_measures(measures)
    monkeypatch.undo()
    assert smoke_module().measurements(out.text) == measures
