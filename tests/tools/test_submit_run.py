"""Another run through the queue (planning.queue_submit, tools/submit_run.py): the stack's
queued-run manifest under a new name, its workers' maintenance window from the run's length.
The real API server, Kueue and scheduler honouring it are in tests/engine."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from planning.kube import SCHEDULED_MAINTENANCE_LABEL
from planning.queue_submit import CLEAR_UNTIL_ANNOTATION, SubmissionError, submission
from planning.ray import SAVE_BY_MARGIN_SECONDS, SAVE_BY_VARIABLE
from preflight.cli import Result
from testbed.nemo_rl_standin.config_rules import apply_overrides, load_config
from tests.harness import REPO, run_stack, stack_data, variant
from tests.planning.test_ray_nemo_rl_configs import CONFIGS
from tests.planning.test_ray_nemo_rl_configs import pytestmark as needs_nemo_rl_configs
from tests.program.test_ray_schemas import crd_validator

NOW = 1_800_000_000


def manifest(result: Result) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(result.run.exports["grpoQueuedRunManifest"].value)
    return found


def terms(job: dict[str, Any]) -> list[Any]:
    pod = job["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"]["spec"]
    found: list[Any] = pod["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    return found


def test_a_run_of_known_length_also_takes_nodes_whose_maintenance_comes_after_it(
    b200: Result,
) -> None:
    template = manifest(b200)
    before = json.dumps(template, sort_keys=True)
    job = submission(template, "run-2", now=NOW, hours=48)
    crd_validator("rayjobs").validate(job)
    assert json.dumps(template, sort_keys=True) == before  # the published one is untouched
    assert job["metadata"]["name"] == "run-2"
    until = NOW + 48 * 3600
    assert job["metadata"]["annotations"][CLEAR_UNTIL_ANNOTATION] == str(until)
    # ORed terms: no maintenance scheduled, or maintenance that starts after the run.
    assert terms(job) == [
        {"matchExpressions": [{"key": SCHEDULED_MAINTENANCE_LABEL, "operator": "DoesNotExist"}]},
        {
            "matchExpressions": [
                {"key": SCHEDULED_MAINTENANCE_LABEL, "operator": "Gt", "values": [str(until)]}
            ]
        },
    ]
    # Its own run folder, everywhere the published run names its own: checkpoints, logs, the
    # driver's overrides, Ray's log copies and their Cloud Logging label.
    annotations = template["metadata"]["annotations"]
    old_dir = annotations["nemo-rl-gke/log-dir"].removesuffix("/logs")
    new_dir = old_dir.rsplit("/", 1)[0] + "/run-2"
    text = json.dumps(job)
    assert old_dir not in text
    assert job["metadata"]["annotations"]["nemo-rl-gke/checkpoint-dir"].startswith(new_dir + "/")
    assert f"logger.log_dir={new_dir}/logs" in job["spec"]["entrypoint"]
    assert job["metadata"]["annotations"]["nemo-rl-gke/run"] == "run-2"
    for group in [
        job["spec"]["rayClusterSpec"]["headGroupSpec"],
        *job["spec"]["rayClusterSpec"]["workerGroupSpecs"],
    ]:
        (shipper,) = group["template"]["spec"]["initContainers"]
        env = {e["name"]: e.get("value") for e in shipper["env"]}
        assert (env["RAY_LOGS_RUN"], env["RAY_LOGS_COPY_DIR"]) == ("run-2", f"{new_dir}/logs/ray")
    # The driver is told when the window ends (it has NeMo RL save before then).
    script = shlex.split(job["spec"]["entrypoint"])[2]
    assert script.startswith(f"export {SAVE_BY_VARIABLE}={until} && ")
    job["spec"]["entrypoint"] = "bash -c " + shlex.quote(script.split(" && ", 1)[1])
    # Everything else is the published run's.
    job["metadata"]["name"] = template["metadata"]["name"]
    del job["metadata"]["annotations"][CLEAR_UNTIL_ANNOTATION]
    job["metadata"]["annotations"]["nemo-rl-gke/run"] = annotations["nemo-rl-gke/run"]
    pod = job["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"]["spec"]
    pod["affinity"] = template["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"]["spec"][
        "affinity"
    ]
    restored = json.dumps(job, sort_keys=True).replace(new_dir, old_dir)
    restored = restored.replace('"value": "run-2"', f'"value": "{annotations["nemo-rl-gke/run"]}"')
    assert restored == before


def test_without_a_length_the_workers_keep_off_every_node_with_maintenance(b200: Result) -> None:
    job = submission(manifest(b200), "run-2", now=NOW, hours=None)
    assert terms(job) == [
        {"matchExpressions": [{"key": SCHEDULED_MAINTENANCE_LABEL, "operator": "DoesNotExist"}]}
    ]
    assert CLEAR_UNTIL_ANNOTATION not in job["metadata"].get("annotations", {})
    assert submission(manifest(b200), "run-3", now=NOW, hours=0.5)["metadata"]["annotations"][
        CLEAR_UNTIL_ANNOTATION
    ] == str(NOW + 1800)


def test_a_stack_that_lets_workers_on_maintenance_nodes_gets_no_window(tmp_path: Path) -> None:
    ray = {**stack_data("b200")["config"].get("nemo-rl-gke:ray", {}), "avoidMaintenance": False}
    result = run_stack("b200", tmp_path, variant("b200", {"nemo-rl-gke:ray": ray}))
    job = submission(manifest(result), "run-2", now=NOW, hours=48)
    pod = job["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"]["spec"]
    assert "affinity" not in pod


@pytest.mark.parametrize(
    ("name", "hours", "argument"),
    [
        ("Run-2", 1, "--name"),
        ("run-", 1, "--name"),
        ("r" * 48, 1, "--name"),
        # A `$` anchor lets a trailing newline through; the name is matched whole.
        ("run-2\n", 1, "--name"),
        ("run-2\r", 1, "--name"),
        ("run-2", 0, "--hours"),
        ("run-2", -3, "--hours"),
        ("run-2", 24 * 30 + 1, "--hours"),
    ],
)
def test_a_bad_name_or_length_is_refused_naming_it(
    b200: Result, name: str, hours: float, argument: str
) -> None:
    with pytest.raises(SubmissionError, match=f"^{argument} "):
        submission(manifest(b200), name, now=NOW, hours=hours)


def test_the_command_prints_the_submission_and_refuses_in_one_line(
    b200: Result, tmp_path: Path
) -> None:
    """The command with a stand-in `pulumi` that answers `stack output` with b200's outputs (the
    real CLI and kubectl run it in tests/engine)."""
    outputs = {"grpoQueuedRunManifest": b200.run.exports["grpoQueuedRunManifest"].value}
    answers = tmp_path / "outputs.json"
    answers.write_text(json.dumps(outputs))
    pulumi = tmp_path / "pulumi"
    pulumi.write_text(f"#!/bin/sh\necho 'stand-in pulumi' >&2\ncat {answers}\n")
    pulumi.chmod(0o755)

    def submit(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "tools.submit_run", "--stack", "b200", "--pulumi", str(pulumi),
             *args],
            cwd=REPO, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip

    started = int(time.time())
    printed = submit("--name", "run-2", "--hours", "12", "--print")
    assert printed.returncode == 0, printed.stderr
    job = json.loads(printed.stdout)
    assert job["metadata"]["name"] == "run-2"
    until = int(job["metadata"]["annotations"][CLEAR_UNTIL_ANNOTATION])
    assert started + 12 * 3600 <= until <= int(time.time()) + 12 * 3600
    bad = submit("--name", "Run 2", "--print")
    assert bad.returncode == 2
    assert bad.stderr.strip().startswith("submit_run: --name 'Run 2':")
    assert len(bad.stderr.strip().splitlines()) == 1
    answers.write_text("{}")
    off = submit("--name", "run-2", "--print")
    assert off.returncode == 2
    assert "publishes no queued run" in off.stderr


def driver_calls(job: dict[str, Any], tmp_path: Path) -> tuple[int, str, list[str]]:
    """The submitted driver script, run with the image's tools stood in for (the run's
    environment as its worker pod has it): its status, stderr and the `uv` calls it made."""
    from tests.planning.test_ray_training_env import bash, job_driver_env, pod_env

    group = job["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]
    container = next(c for c in group["template"]["spec"]["containers"] if c["name"] != "ray-logs")
    script = shlex.split(job["spec"]["entrypoint"])[2]
    (tmp_path / "tokens").mkdir(exist_ok=True)
    (tmp_path / "tokens" / "HF_TOKEN").write_text("hf_from_the_secret")
    proc, _, calls = bash(script, job_driver_env(pod_env(container)), tmp_path, "driver")
    return proc.returncode, proc.stderr, calls


@needs_nemo_rl_configs
def test_a_run_of_known_length_saves_and_stops_before_its_window_ends(
    b200: Result, tmp_path: Path
) -> None:
    """NeMo RL's one-time save (`checkpointing.checkpoint_must_save_by`, from its training
    loop's start) set to the window's end less the start-up margin, when the driver starts."""
    now = int(time.time())
    job = submission(manifest(b200), "run-2", now=now, hours=48)
    status, stderr, calls = driver_calls(job, tmp_path)
    assert status == 0, stderr
    (train,) = [c for c in calls if "run_grpo.py" in c]
    (save_by,) = [w for w in shlex.split(train) if w.startswith("checkpointing.checkpoint_must")]
    days, hours, minutes, seconds = (int(p) for p in save_by.split("=")[1].split(":"))
    left = ((days * 24 + hours) * 60 + minutes) * 60 + seconds
    expected = 48 * 3600 - SAVE_BY_MARGIN_SECONDS - (int(time.time()) - now)
    assert expected - 5 <= left <= expected + 5
    # The key is one NeMo RL v0.7.0's configs have (its own parser takes the override).
    cfg = apply_overrides(load_config(CONFIGS / "grpo_math_8B.yaml"), [save_by])
    assert str(cfg.checkpointing.checkpoint_must_save_by) == save_by.split("=")[1]
    # Without a length nothing changes: NeMo RL's default (null, never) stays.
    unbounded = submission(manifest(b200), "run-3", now=now, hours=None)
    status, stderr, calls = driver_calls(unbounded, tmp_path)
    assert status == 0, stderr
    assert "checkpoint_must_save_by" not in " ".join(calls)


def test_a_run_that_starts_too_late_in_its_window_stops_naming_it(
    b200: Result, tmp_path: Path
) -> None:
    """Queued for most of its window: starting would cross the maintenance it was to avoid."""
    job = submission(manifest(b200), "run-2", now=int(time.time()) - 3600, hours=1.25)
    status, stderr, calls = driver_calls(job, tmp_path)
    assert status == 1
    assert "maintenance-free window (NEMO_RL_GKE_CLEAR_UNTIL) ends within 30 minutes" in stderr
    assert not [c for c in calls if "run_grpo.py" in c]
