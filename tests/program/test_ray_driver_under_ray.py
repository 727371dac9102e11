"""The rendered GRPO driver script, judged by real Ray 2.55.1 on one node, in seconds.

The smoke gate submits the b200 stack's GRPO smoke (its entrypoint and entrypoint resources as
rendered) to a real Ray head started by the worker container's own setup (tests/ray_one_node.py).
The NeMo RL stand-in at /opt/nemo-rl does with Ray what NeMo RL does and fails when its worker
gets no GPU or no gIB environment, so the next defect in the driver's environment fails here,
not half an hour into the engine tests. The failure cases (the driver's environment as it was,
a deadline, a reused submission id) and the clusters KubeRay builds are in tests/engine.
About 16 s alone (a Ray head starts in about 7 s, the job imports Ray again); it adds about 11 s
to `make test` on 2 cores (65 s without it, 74 to 79 s with it).
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from ray.job_submission import JobSubmissionClient

from planning.ray import GIB_RESOURCE
from tests.ray_one_node import (
    CLEAN_ENV,
    b200_smoke_fixture,
    needs_nemo_rl_configs,
    ray_node_fixture,
    run_gate,
    smoke_env_of,
)

pytestmark = needs_nemo_rl_configs


b200_smoke = b200_smoke_fixture()
ray_node = ray_node_fixture("127.102.0.2")


def test_the_smoke_gate_passes_on_a_real_ray_head_with_gpu_and_gib(
    ray_node: tuple[str, Path], b200_smoke: Any, tmp_path: Path
) -> None:
    url, data = ray_node
    env = smoke_env_of(b200_smoke)
    assert json.loads(env["ENTRYPOINT_RESOURCES"]) == {GIB_RESOURCE: 1}
    assert shlex.split(env["ENTRYPOINT"])[2].startswith(CLEAN_ENV)
    proc, message = run_gate(url, b200_smoke, tmp_path)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr
    assert message.startswith("grpo-smoke gate passed on 1 GPU: job_status SUCCEEDED")
    assert f"Ray 2.55.1 answers at {url}" in proc.stdout
    assert "NeMo RL stand-in" in proc.stdout  # the job's log tail is in the pod's log
    # One submission, of exactly the rendered entrypoint, under the Job's own id.
    job = JobSubmissionClient(url).get_job_info(f"{env['SUBMISSION_PREFIX']}-6f1d2c3b")
    assert job.entrypoint == env["ENTRYPOINT"]
    assert job.metadata == {"nemo-rl-gke/gate": "grpo-smoke"}
    (workers,) = [json.loads(p.read_text()) for p in data.glob("nemo-rl/runs/*/logs/*.json")]
    (worker,) = workers
    assert worker["gpu_ids"]
    assert worker["cuda_visible_devices"] == worker["gpu_ids"][0]
    assert worker["nccl"]["NCCL_NET"] == "gIB"
    assert worker["gib_plugin_present"] is True
    assert worker["model_cached"] is True  # downloaded once by the driver, before the workers
