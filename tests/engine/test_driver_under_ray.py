"""The GRPO driver's failure cases under real Ray 2.55.1 on one node, through the smoke gate.

The same one-node head as the fast check in `make test` (tests/ray_one_node.py,
tests/program/test_ray_driver_under_ray.py): the driver's environment as it was before the fix
fails, with the driver's own error in the gate's verdict; a run past its deadline is stopped;
Ray refuses a submission id it has seen. The engine tests run the passing case on the clusters
KubeRay builds (tests/engine/test_local_cluster.py). These need no engine, only Ray (about 30 s
on 2 cores): they run first among the engine tests and, with the fast check, in `make ray-test`.
"""

from __future__ import annotations

import shlex
import time
from pathlib import Path
from typing import Any

import pytest
from ray.job_submission import JobStatus, JobSubmissionClient

from tests.ray_one_node import (
    CLEAN_ENV,
    RayNode,
    b200_smoke_fixture,
    needs_nemo_rl_configs,
    ray_node_fixture,
    run_gate,
    smoke_env_of,
)

pytestmark = needs_nemo_rl_configs


b200_smoke = b200_smoke_fixture()
ray_node = ray_node_fixture("127.102.0.1")


@pytest.mark.parametrize(
    ("clean_up", "error"),
    [
        # As before the fix: Ray's RAY_worker_niceness in NeMo RL's runtime env and the job's.
        ("", "ValueError: Failed to merge the Job's runtime env"),
        # Past that, CUDA_VISIBLE_DEVICES="" copied into every GPU actor: Ray's GPU-id lookup.
        ("unset RAY_worker_niceness && ", "IndexError: list index out of range"),
    ],
)
def test_the_environment_ray_gives_a_placed_driver_fails_the_smoke_with_its_error(
    ray_node: RayNode, b200_smoke: Any, tmp_path: Path, clean_up: str, error: str
) -> None:
    """What Ray's job manager gives a driver with entrypoint resources, forwarded by NeMo RL to
    `ray.init` and to every actor, is refused by Ray itself: the run dies in its first seconds,
    and the gate's verdict carries the driver's own error."""
    script = shlex.split(smoke_env_of(b200_smoke)["ENTRYPOINT"])[2]
    before = f"bash -c {shlex.quote(clean_up + script.removeprefix(CLEAN_ENV))}"
    proc, message = run_gate(ray_node, b200_smoke, tmp_path, ENTRYPOINT=before,
                             GATE_RUN_ID=f"{len(clean_up):08x}-uid")  # fmt: skip
    assert proc.returncode == 1, proc.stdout[-4000:]
    first = message.splitlines()[0]
    assert first.startswith("grpo-smoke gate FAILED on 1 GPU: job_status FAILED name"), first
    assert "Job entrypoint command failed with exit code 1:" in first, first
    assert error in first, first


def test_a_run_that_outlives_the_deadline_is_stopped(
    ray_node: RayNode, b200_smoke: Any, tmp_path: Path
) -> None:
    url = ray_node.url
    proc, message = run_gate(ray_node, b200_smoke, tmp_path, ENTRYPOINT="sleep 600",
                             DEADLINE_SECONDS="4", GATE_RUN_ID="0000dead-uid")  # fmt: skip
    assert proc.returncode == 1
    assert "job_status TIMEOUT" in message.splitlines()[0]
    client = JobSubmissionClient(url, headers=ray_node.headers())
    submission = f"{smoke_env_of(b200_smoke)['SUBMISSION_PREFIX']}-0000dead"
    deadline = time.monotonic() + 30
    while client.get_job_status(submission) != JobStatus.STOPPED:  # the GPUs are given back
        assert time.monotonic() < deadline
        time.sleep(0.5)


def test_ray_refuses_a_submission_id_it_has_seen_and_a_new_job_submits_anew(
    ray_node: RayNode, b200_smoke: Any, tmp_path: Path
) -> None:
    first, _ = run_gate(ray_node, b200_smoke, tmp_path / "a", ENTRYPOINT="true",
                        GATE_RUN_ID="0000000a-uid")  # fmt: skip
    again, message = run_gate(ray_node, b200_smoke, tmp_path / "b", ENTRYPOINT="true",
                              GATE_RUN_ID="0000000a-uid")  # fmt: skip
    replaced, _ = run_gate(ray_node, b200_smoke, tmp_path / "c", ENTRYPOINT="true",
                           GATE_RUN_ID="0000000c-uid")  # fmt: skip
    assert (first.returncode, again.returncode, replaced.returncode) == (0, 1, 0)
    # Real Ray answers a seen id with HTTP 500 and its traceback (not 400).
    assert "Ray refused the submission: HTTP 500" in message.splitlines()[0]
    assert "already exists" in message.splitlines()[0]
