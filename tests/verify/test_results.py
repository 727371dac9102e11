"""`make verify`'s reading of gate results, on termination messages the real scripts wrote."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from testbed.gate_standins import Scenario
from tests.verify.harness import run_gate
from tests.verify.test_gate_scripts import b200
from verify.results import exit_code, latest_jobs, parse_message, report, table


def pod(job: str, index: int, message: str, phase: str) -> dict[str, Any]:
    return {
        "metadata": {"name": f"{job}-{index}-x", "labels": {"job-name": job}},
        "status": {
            "phase": phase,
            "containerStatuses": [
                {"name": "gate", "state": {"terminated": {"message": message, "exitCode": 0}}}
            ],
        },
    }


def job(name: str, condition: str | None) -> dict[str, Any]:
    conditions = [{"type": condition, "status": "True"}] if condition else []
    return {"metadata": {"name": name}, "status": {"conditions": conditions}}


def test_a_passing_and_a_failing_gate_in_one_table(tmp_path: Path) -> None:
    plans = b200()
    health = run_gate(plans["gpu-health"], tmp_path / "h")
    slow = Scenario(busbw_8g={"all_gather": 250.0, "all_reduce": 200.0})
    nccl = run_gate(plans["nccl"], tmp_path / "n", slow)
    jobs = {"gpu-health": plans["gpu-health"].job_name, "nccl": plans["nccl"].job_name}
    pods = [
        *(pod(jobs["gpu-health"], i, r.message, "Succeeded") for i, r in enumerate(health)),
        *(pod(jobs["nccl"], i, r.message, "Failed") for i, r in enumerate(nccl) if r.message),
    ]
    reports = report(jobs, [job(jobs["gpu-health"], "Complete"), job(jobs["nccl"], "Failed")], pods)
    text = table(reports)
    assert exit_code(reports) == 1
    lines = text.splitlines()
    assert lines[0].split() == ["gate", "on", "measured", "value", "needs", "result"]
    row = next(line for line in lines if "all_gather_busbw_8GiB" in line)
    assert row.split() == ["nccl", "2", "nodes", "all_gather_busbw_8GiB", "250.00", "GB/s", ">=",
                           "292.8", "FAIL"]  # fmt: skip
    health_rows = [line for line in lines if line.startswith("gpu-health  ") and " gpus " in line]
    assert {r.split()[1] for r in health_rows} == {"gpu-node-0", "gpu-node-1"}
    assert f"nccl ({jobs['nccl']}): failed - nccl gate FAILED on 2 nodes:" in text


def test_all_passed_is_exit_0_and_unfinished_is_exit_3(tmp_path: Path) -> None:
    plans = b200()
    runs = run_gate(plans["gpu-health"], tmp_path)
    jobs = {"gpu-health": plans["gpu-health"].job_name}
    pods = [pod(jobs["gpu-health"], i, r.message, "Succeeded") for i, r in enumerate(runs)]
    assert exit_code(report(jobs, [job(jobs["gpu-health"], "Complete")], pods)) == 0
    assert exit_code(report(jobs, [job(jobs["gpu-health"], None)], [])) == 3
    missing = report(jobs, [], [])
    assert missing[0].state == "missing"
    assert "MISSING" in table(missing)


def test_lines_that_are_not_results_are_ignored() -> None:
    message = "gpu-health gate passed on n: x\nnoise\nRESULT g m 1 >= 1 u PASS node a\nRESULT short"
    (only,) = parse_message(message)
    assert (only.metric, only.scope) == ("m", "node a")


def test_after_a_failed_update_the_newest_job_of_a_gate_is_read() -> None:
    """The stack's outputs still name the gate's earlier, passing Job after an update it failed."""

    def labelled(name: str, gate: str, created: str) -> dict[str, Any]:
        return {
            "metadata": {
                "name": name,
                "labels": {"nemo-rl-gke/gate": gate},
                "creationTimestamp": created,
            }
        }

    live = [
        labelled("verify-storage-old", "storage", "2026-12-03T07:00:00Z"),
        labelled("verify-storage-new", "storage", "2026-12-03T07:06:32Z"),
        labelled("verify-grpo-smoke-a", "grpo-smoke", "2026-12-03T07:07:00Z"),
        {"metadata": {"name": "unrelated"}},
    ]
    outputs = {"storage": "verify-storage-old", "nccl": "verify-nccl-x"}
    assert latest_jobs(outputs, live) == {
        "storage": "verify-storage-new",
        "nccl": "verify-nccl-x",
        "grpo-smoke": "verify-grpo-smoke-a",
    }


def test_a_skipped_smoke_is_shown_as_skipped_and_fails_nothing() -> None:
    """The smoke that found a training run on the RayCluster: its Job completed, its row says
    SKIP with the run's id, its verdict line says why, and `make verify` exits 0."""
    message = (
        "grpo-smoke gate skipped on 1 GPU: ray_job_holding_gpus grpo-run-0001 id (= none) - Ray"
        " job grpo-run-0001 is RUNNING on the RayCluster\n"
        "RESULT grpo-smoke ray_job_holding_gpus grpo-run-0001 = none id SKIP 1 GPU\n"
    )
    jobs = {"grpo-smoke": "verify-grpo-smoke-1"}
    reports = report(jobs, [job("verify-grpo-smoke-1", "Complete")],
                     [pod("verify-grpo-smoke-1", 0, message, "Succeeded")])  # fmt: skip
    assert exit_code(reports) == 0
    text = table(reports)
    row = next(line for line in text.splitlines() if "ray_job_holding_gpus" in line)
    assert row.split()[-1] == "SKIP"
    assert "grpo-run-0001" in row
    assert "grpo-smoke gate skipped on 1 GPU" in text
