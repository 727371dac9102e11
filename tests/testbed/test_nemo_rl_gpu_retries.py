"""The NeMo RL stand-in's wait for the cluster's GPUs against the real RayVirtualCluster's.

The recording (tests/testbed/data) is `testbed.nemo_rl_standin.gpu_retries` run against NeMo RL
v0.7.0's own `nemo_rl/distributed/virtual_cluster.py` on a real one-node Ray."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from testbed.nemo_rl_standin import gpu_retries
from testbed.nemo_rl_standin.run_grpo import ResourceInsufficientError, wait_for_gpus

RECORDING = Path(__file__).parent / "data" / "nemo_rl_v0.7.0_gpu_retries.json"


@pytest.mark.parametrize("case", sorted(gpu_retries.CASES))
def test_the_standin_waits_for_gpus_as_nemo_rl_does(
    case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    recorded = json.loads(RECORDING.read_text())
    assert (recorded["gpus"], recorded["retries"]) == (gpu_retries.GPUS, gpu_retries.RETRIES)
    real = recorded["cases"][case]
    sleeps: list[float] = []
    checks: list[int] = []

    def have() -> int:
        checks.append(gpu_retries.GPUS)
        return gpu_retries.GPUS

    error = None
    try:
        wait_for_gpus(gpu_retries.CASES[case], have, gpu_retries.RETRIES, sleeps.append)
    except ResourceInsufficientError as raised:
        error = type(raised).__name__
    failed = [line for line in capsys.readouterr().out.splitlines() if " GPUs; check " in line]
    assert sleeps == real["sleeps"]
    assert len(failed) == real["failed_checks"]
    # Each of NeMo RL's attempts reads the cluster's resources once; a passing one ends them.
    assert len(checks) == real["failed_checks"] + (0 if real["error"] else 1)
    assert error == real["error"]


def test_the_standin_starts_once_the_gpus_have_come() -> None:
    """GPUs that join between two checks (pods that start late): the next check passes."""
    counts = iter([0, 8, 16])
    sleeps: list[float] = []
    wait_for_gpus(16, lambda: next(counts), 6, sleeps.append)
    assert sleeps == [1, 2]
