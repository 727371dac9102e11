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
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from ray.job_submission import JobStatus, JobSubmissionClient

from planning.ray import GIB_RESOURCE
from tests.harness import by_name
from tests.ray_one_node import (
    CLEAN_ENV,
    FAKE_HF_TOKEN,
    RayNode,
    b200_smoke_fixture,
    needs_nemo_rl_configs,
    ray_node_fixture,
    run_gate,
    smoke_env_of,
)
from tests.verify.test_smoke_gate_script import smoke_module

pytestmark = needs_nemo_rl_configs


b200_smoke = b200_smoke_fixture()
ray_node = ray_node_fixture("127.102.0.2")


def test_the_smoke_gate_passes_on_a_real_ray_head_with_gpu_and_gib(
    ray_node: RayNode, b200_smoke: Any, tmp_path: Path
) -> None:
    url, data = ray_node.url, ray_node.data
    env = smoke_env_of(b200_smoke)
    assert json.loads(env["ENTRYPOINT_RESOURCES"]) == {GIB_RESOURCE: 1}
    assert shlex.split(env["ENTRYPOINT"])[2].startswith(CLEAN_ENV)
    proc, message = run_gate(ray_node, b200_smoke, tmp_path)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr
    assert message.startswith("grpo-smoke gate passed on 1 GPU: job_status SUCCEEDED")
    assert f"Ray 2.55.1 answers at {url}" in proc.stdout
    assert "NeMo RL stand-in" in proc.stdout  # the job's log tail is in the pod's log
    # One submission, of exactly the rendered entrypoint, under the Job's own id.
    job = JobSubmissionClient(url, headers=ray_node.headers()).get_job_info(
        f"{env['SUBMISSION_PREFIX']}-6f1d2c3b"
    )
    assert job.entrypoint == env["ENTRYPOINT"]
    assert job.metadata == {"nemo-rl-gke/gate": "grpo-smoke"}
    (workers,) = [json.loads(p.read_text()) for p in data.glob("nemo-rl/runs/*/logs/*.json")]
    (worker,) = workers
    assert worker["gpu_ids"]
    assert worker["cuda_visible_devices"] == worker["gpu_ids"][0]
    assert worker["nccl"]["NCCL_NET"] == "gIB"
    assert worker["gib_plugin_present"] is True
    assert worker["model_cached"] is True  # downloaded once by the driver, before the workers
    # The driver's own output stays with the run, on the shared volume.
    (driver_log,) = data.glob("nemo-rl/runs/*/logs/driver.log")
    assert "NeMo RL stand-in" in driver_log.read_text()

    # NeMo RL copies the driver's environment into every actor's runtime env, which the State
    # API serves: the dashboard wants its token, and the run's token is in none of them.
    actors = f"{url}/api/v0/actors?detail=1"
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(actors, timeout=30)  # noqa: S310 - the local head
    assert refused.value.code == 401
    request = urllib.request.Request(actors, headers=ray_node.headers())  # noqa: S310
    with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310
        listing = answer.read().decode()
    assert "_Worker" in listing
    assert "serialized_runtime_env" in listing
    assert FAKE_HF_TOKEN not in listing
    assert ray_node.token not in listing
    # Nor in any file Ray wrote (its runtime-env agent logs every runtime env it creates),
    # which the log sidecar would ship, nor in anything of the run on the shared volume.
    assert not files_holding(ray_node, ray_node.token)


def files_holding(node: RayNode, secret: str) -> list[str]:
    """The files of the node's Ray sessions and of the shared volume that hold `secret`."""
    files = [p for p in [*node.ray_tmp.rglob("*"), *node.data.rglob("*")] if p.is_file()]
    assert any(p.name.startswith("runtime_env_agent") for p in files)
    return [str(p) for p in files if secret.encode() in p.read_bytes()]


def test_the_smoke_gate_without_the_dashboard_s_token_is_refused_at_once(
    ray_node: RayNode, b200_smoke: Any, tmp_path: Path
) -> None:
    """A gate with no token or a wrong one fails on its first request (Ray answers 401 and 403),
    naming the refusal, instead of waiting out its deadline."""
    (tmp_path / "wrong").write_text("not-the-token", encoding="utf-8")
    for token_file, code in (("", 401), (str(tmp_path / "wrong"), 403)):
        started = time.monotonic()
        proc, message = run_gate(
            ray_node, b200_smoke, tmp_path / "gate", DASHBOARD_TOKEN_FILE=token_file
        )
        assert proc.returncode == 1
        assert time.monotonic() - started < 30
        first = message.splitlines()[0]
        assert f"refused the gate: HTTP {code}" in first, first


def test_the_smoke_does_not_run_beside_a_run_that_holds_the_gpus(
    ray_node: RayNode, b200_smoke: Any, tmp_path: Path
) -> None:
    """A job that is not a gate's (the RayJob's run, submitted by KubeRay) runs on the head: the
    smoke is skipped at once, naming it, instead of waiting for a GPU until NeMo RL gives up
    and the gate fails `pulumi up`."""
    client = JobSubmissionClient(ray_node.url, headers=ray_node.headers())
    run = client.submit_job(entrypoint="sleep 120", submission_id="grpo-run-0001")
    try:
        deadline = time.monotonic() + 60
        while client.get_job_status(run) != JobStatus.RUNNING:
            assert time.monotonic() < deadline
            time.sleep(0.5)
        proc, message = run_gate(ray_node, b200_smoke, tmp_path, GATE_RUN_ID="5e1f0000-uid")
        assert proc.returncode == 0, proc.stdout[-3000:]
        first = message.splitlines()[0]
        assert first.startswith("grpo-smoke gate skipped on 1 GPU: ray_job_holding_gpus"), first
        assert "Ray job grpo-run-0001 is RUNNING" in first
        assert "RESULT grpo-smoke ray_job_holding_gpus grpo-run-0001 = none id SKIP" in message
        # Nothing was submitted for the smoke.
        env = smoke_env_of(b200_smoke)
        smoke = f"{env['SUBMISSION_PREFIX']}-5e1f0000"
        assert smoke not in [j.submission_id for j in client.list_jobs()]
    finally:
        client.stop_job(run)
        deadline = time.monotonic() + 60
        while client.get_job_status(run) not in (JobStatus.STOPPED, JobStatus.FAILED):
            assert time.monotonic() < deadline
            time.sleep(0.5)


def one_node(env: dict[str, str]) -> dict[str, str]:
    """The job NCCL gate's rendered environment for the one node here (the stack has two):
    one node's ranks in the entrypoint and in the thresholds."""
    measures = [
        [metric, op, {"16": "8", "2": "1"}.get(value, value) if "ranks" in metric or
         metric == "nodes_spanned" else value, unit]
        for metric, op, value, unit in json.loads(env["MEASURES"])
    ]  # fmt: skip
    assert "export NODES=2 GPUS_PER_NODE=8" in env["ENTRYPOINT"]
    return {
        "ENTRYPOINT": env["ENTRYPOINT"].replace("export NODES=2 ", "export NODES=1 "),
        "MEASURES": json.dumps(measures),
        "GATE_SCOPE": "1 node x 8 GPUs",
    }


def test_the_job_nccl_gate_forms_one_group_over_every_gpu_with_gib(
    ray_node: RayNode, b200_smoke: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rendered entrypoint (the driver's setup, the driver written from the command line)
    places one actor per GPU in NeMo RL's layout under real Ray; the ranks form one group over
    real sockets (the torch stand-in: no NCCL here) and report gIB, NCCL's version line and the
    scenario's bus bandwidth, which the gate judges."""
    env = smoke_env_of(b200_smoke, "ray-job-nccl-job")
    assert env["GATE_NAME"] == "job-nccl"
    assert json.loads(env["ENTRYPOINT_RESOURCES"]) == {GIB_RESOURCE: 1}
    proc, message = run_gate(ray_node, b200_smoke, tmp_path, "ray-job-nccl-job", **one_node(env))
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr
    first, *results = message.splitlines()
    assert first.startswith("job-nccl gate passed on 1 node x 8 GPUs: job_status SUCCEEDED")
    measured = {r.split()[2]: r.split()[3] for r in results}
    assert measured["ranks_formed"] == "8"
    assert measured["ranks_on_gib"] == "8"
    assert measured["ranks_with_nccl_version"] == "8"
    assert measured["ranks_with_gdrdma"] == "8"
    assert measured["wrong_values"] == "0"
    # The scenario's fabric (344.46 GB/s) less the stand-in's 20 us a call, at 8 GiB.
    assert float(measured["all_gather_busbw"]) == pytest.approx(344.46, rel=0.002)
    # Its 8 actors got the driver's environment, without the dashboard's token.
    assert not files_holding(ray_node, ray_node.token)
    # The gate's other way to the driver's log (where the job API's agent has no line of it):
    # Ray's log API for the file on the driver's node, through the same token.
    submission = f"{env['SUBMISSION_PREFIX']}-6f1d2c3b"
    job = JobSubmissionClient(ray_node.url, headers=ray_node.headers()).get_job_info(submission)
    token_file = tmp_path / "token"
    token_file.write_text(ray_node.token)
    monkeypatch.setenv("DASHBOARD_TOKEN_FILE", str(token_file))
    monkeypatch.setenv("MEASURES", env["MEASURES"])
    gate = smoke_module()
    monkeypatch.setattr(gate, "call", lambda *_: {"logs": "only the job agent's lines"})
    logs = gate.driver_log(ray_node.url, submission, job.driver_node_id)
    assert gate.measurements(logs)["ranks_formed"] == "8"
    # Reported, not judged: the gIB plugin's version, in the driver's log.
    assert gate.measurements(logs)["gib_version"] == "v1.1.1"


def test_the_job_nccl_gate_fails_naming_nccl_s_warning_without_the_gib_plugin(
    ray_node: RayNode, b200_smoke: Any, tmp_path: Path
) -> None:
    """NCCL told to use gIB where its plugin is not (a node without Google's installer's
    files): the group forms, NCCL's first collective fails, and the gate says so with NCCL's
    own warning."""
    env = smoke_env_of(b200_smoke, "ray-job-nccl-job")
    overrides = one_node(env)
    script = shlex.split(overrides["ENTRYPOINT"])[2]
    missing = "export NCCL_NET_PLUGIN=/usr/local/gib/lib64/libnccl-net_absent.so"
    script = script.replace(" && uv run python ", f" && {missing} && uv run python ")
    overrides["ENTRYPOINT"] = f"bash -c {shlex.quote(script)}"
    proc, message = run_gate(
        ray_node, b200_smoke, tmp_path, "ray-job-nccl-job", GATE_RUN_ID="0000beef", **overrides
    )
    assert proc.returncode == 1, proc.stdout[-4000:]
    first = message.splitlines()[0]
    assert first.startswith("job-nccl gate FAILED on 1 node x 8 GPUs: job_status FAILED"), first
    assert "ranks_on_gib 0 ranks (needs >= 8)" in first
    assert "ranks_formed" not in first  # the group formed; NCCL's network did not
    # Why, in the verdict: the driver's error names the rank and NCCL's own warning.
    assert "RuntimeError: 8 of 8 ranks failed; rank 0: DistBackendError:" in first, first
    assert first.endswith("NCCL WARN Failed to initialize any NET plugin"), first


def test_a_run_killed_during_a_save_resumes_from_its_last_complete_checkpoint(
    ray_node: RayNode, b200_smoke: Any, tmp_path: Path
) -> None:
    """The job's own entrypoint (on this one node), 25 steps, saving every 10: the first attempt
    dies while it saves step 20 (the workers wrote, the folder is still `tmp_step_20`). The next
    attempt of the same run finds the same checkpoint folder, resumes from `step_10`, never
    from the half-written save, and ends with NeMo RL's layout (the stand-in's)."""
    job = by_name(b200_smoke)["ray-job"].inputs
    folder = Path(str(job["metadata"]["annotations"]["nemo-rl-gke/checkpoint-dir"]))
    checkpoints = ray_node.data / folder.relative_to("/data")
    script = shlex.split(job["spec"]["entrypoint"])[2]
    assert " cluster.num_nodes=2 " in script
    assert " grpo.max_num_steps=10 " in script
    script = script.replace(" cluster.num_nodes=2 ", " cluster.num_nodes=1 ")
    script = script.replace(" grpo.max_num_steps=10 ", " grpo.max_num_steps=25 ")
    dying = script.replace(
        "set -o pipefail && ", "export NEMO_RL_STANDIN_EXIT_DURING_SAVE=20 && set -o pipefail && "
    )
    first, _ = run_gate(
        ray_node, b200_smoke, tmp_path / "a", ENTRYPOINT=f"bash -c {shlex.quote(dying)}",
        GATE_RUN_ID="00000001", GATE_SCOPE="1 node",
    )  # fmt: skip
    assert first.returncode == 1, first.stdout[-3000:]
    assert sorted(p.name for p in checkpoints.iterdir()) == ["step_10", "tmp_step_20"]
    again, _message = run_gate(
        ray_node, b200_smoke, tmp_path / "b", ENTRYPOINT=f"bash -c {shlex.quote(script)}",
        GATE_RUN_ID="00000002", GATE_SCOPE="1 node",
    )  # fmt: skip
    assert again.returncode == 0, again.stdout[-3000:]
    log = (checkpoints.parent / "logs" / "driver.log").read_text()
    assert "resuming from the checkpoint of step 10" in log
    assert "step 11/25" in log
    assert "step 10/25" in log.split("resuming", 1)[0]
    # A save that died is written again, never resumed from.
    assert sorted(p.name for p in checkpoints.iterdir()) == ["step_10", "step_20", "step_25"]
    info = json.loads((checkpoints / "step_20" / "training_info.json").read_text())
    assert info["step"] == 20
    # The driver's hook (workload/sitecustomize.py): of the 8 ranks, rank 0 alone wrote the
    # tokenizer (NeMo RL v0.7.0 has every rank write it; test_sitecustomize.py shows both).
    for step in ("step_20", "step_25"):
        writers = (checkpoints / step / "policy" / "tokenizer" / "writers").read_text()
        # step_20 was written twice: by the attempt that died in its save, then again.
        assert {w.split(" ", 1)[1] for w in writers.splitlines()} == {"rank 0"}, writers
