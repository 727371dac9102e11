"""workload/ray_logs.py, the Ray pods' log sidecar: on Ray's own formats (a session folder as
Ray 2.55 lays it out), then on a real Ray session, then as a process told to stop."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from testbed.host_ports import free_port
from testbed.ray_pods import processes_naming
from tests.harness import REPO
from workload.ray_logs import LABELS_KEY, READ_CHUNK, Shipper, redact

SCRIPT = REPO / "workload" / "ray_logs.py"


def session(ray_dir: Path, name: str = "session_2026-12-07_01-00-00_000001_1") -> Path:
    """An empty session's logs folder, `session_latest` pointing at it, as Ray makes them."""
    logs = ray_dir / name / "logs"
    logs.mkdir(parents=True)
    latest = ray_dir / "session_latest"
    if latest.is_symlink():
        latest.unlink()
    latest.symlink_to(ray_dir / name)
    return logs


def entries(out: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


def shipper(
    tmp_path: Path, *, cloud: bool = True, run: str = "grpo-1"
) -> tuple[Shipper, io.StringIO]:
    out = io.StringIO()
    return Shipper(tmp_path / "ray", tmp_path / "copy", cloud, run, out=out), out


def test_each_line_goes_out_with_its_severity_and_labels_and_the_bytes_are_copied(
    tmp_path: Path,
) -> None:
    logs = session(tmp_path / "ray")
    files = {
        "raylet.out": "[2026-12-07 01:00:01,100 I 10 10] (raylet) main.cc:279: Setting cluster ID\n"
        "[2026-12-07 01:00:02,100 W 10 10] (raylet) node_manager.cc:1: slow\n"
        "GcsNodeManager:\n- RegisterNode request count: 0\n",
        "dashboard.log": "2026-12-07 01:00:01,934\tERROR head.py:1 -- failed to start\n",
        # A pooled worker's files (job id ffffffff in the name): Ray's marker lines say which
        # job, task or actor the lines after them come from.
        "worker-cf4d-ffffffff-10.out": ":job_id:01000000\n:task_name:f\nhello from task\n"
        ":job_id:02000000\n:actor_name:_Worker\nreporting GPUs\n",
        "worker-cf4d-ffffffff-10.err": ":job_id:01000000\n:task_name:f\n"
        "Traceback (most recent call last):\n  File 'x.py', line 1\nValueError: no\n",
        "job-driver-raysubmit_abc.log": "done: 2 workers\n",
        "python-core-worker-cf4d_10.log": "[2026-12-07 01:00:01,100 D 10 10] core_worker.cc:1\n",
        "debug_state.txt": "rewritten in place\n",
    }
    for name, text in files.items():
        (logs / name).write_text(text)
    ship, out = shipper(tmp_path)
    ship.round()
    found = entries(out)
    by_file: dict[str, list[dict[str, Any]]] = {}
    for entry in found:
        by_file.setdefault(entry[LABELS_KEY]["ray_log"], []).append(entry)
    # The native format's level letter; a multi-line record's lines keep its severity.
    assert [e["severity"] for e in by_file["raylet.out"]] == [
        "INFO",
        "WARNING",
        "WARNING",
        "WARNING",
    ]
    assert by_file["dashboard.log"][0]["severity"] == "ERROR"
    task, actor = by_file["worker-cf4d-ffffffff-10.out"]
    assert task["message"] == "hello from task"
    assert task[LABELS_KEY] == {
        "ray_log": "worker-cf4d-ffffffff-10.out",
        "run": "grpo-1",
        "ray_job_id": "01000000",
        "ray_task": "f",
    }
    # A new job forgets the last one's task.
    assert actor[LABELS_KEY]["ray_job_id"] == "02000000"
    assert actor[LABELS_KEY]["ray_actor"] == "_Worker"
    assert "ray_task" not in actor[LABELS_KEY]
    assert [e["severity"] for e in by_file["worker-cf4d-ffffffff-10.err"]] == ["ERROR"] * 3
    (driver,) = by_file["job-driver-raysubmit_abc.log"]
    assert driver[LABELS_KEY]["submission_id"] == "raysubmit_abc"
    # Core-worker debug logs are copied, not sent; state dumps neither.
    assert "python-core-worker-cf4d_10.log" not in by_file
    assert "debug_state.txt" not in by_file
    assert not any(e["message"].startswith(":") for e in found)
    copied = tmp_path / "copy" / "session_2026-12-07_01-00-00_000001_1"
    assert {p.name for p in copied.iterdir()} == set(files) - {"debug_state.txt"}
    for name in set(files) - {"debug_state.txt"}:
        assert (copied / name).read_text() == files[name]


def test_only_new_bytes_go_out_and_a_rotated_file_is_not_shipped_twice(tmp_path: Path) -> None:
    logs = session(tmp_path / "ray")
    raylet = logs / "raylet.out"
    raylet.write_text("one\ntwo-unfinished")
    ship, out = shipper(tmp_path)
    ship.round()
    assert [e["message"] for e in entries(out)] == ["one"]
    with raylet.open("a") as handle:
        handle.write(" now\nthree\n")
    ship.round()
    assert [e["message"] for e in entries(out)] == ["one", "two-unfinished now", "three"]
    # Ray rotates: the file moves to raylet.out.1 and a new raylet.out starts.
    raylet.rename(logs / "raylet.out.1")
    raylet.write_text("four\n")
    ship.round()
    assert [e["message"] for e in entries(out)] == ["one", "two-unfinished now", "three", "four"]
    copied = tmp_path / "copy" / "session_2026-12-07_01-00-00_000001_1"
    assert (copied / "raylet.out").read_text() == "one\ntwo-unfinished now\nthree\nfour\n"
    assert not (copied / "raylet.out.1").exists()
    # Truncated in place: read again from its start.
    raylet.write_text("5\n")
    ship.round()
    assert entries(out)[-1]["message"] == "5"


def test_a_new_session_gets_a_copy_folder_of_its_own_and_off_cloud_prints_nothing(
    tmp_path: Path,
) -> None:
    ship, out = shipper(tmp_path, cloud=False)
    assert ship.round() == 0  # before Ray has started: nothing, no error
    first = session(tmp_path / "ray", "session_a")
    (first / "raylet.out").write_text("a\n")
    ship.round()
    second = session(tmp_path / "ray", "session_b")  # the Ray container restarted
    (second / "raylet.out").write_text("b\n")
    ship.round()
    assert out.getvalue() == ""
    assert (tmp_path / "copy" / "session_a" / "raylet.out").read_text() == "a\n"
    assert (tmp_path / "copy" / "session_b" / "raylet.out").read_text() == "b\n"


def test_a_backlog_is_read_a_chunk_at_a_time(tmp_path: Path) -> None:
    logs = session(tmp_path / "ray")
    line = "x" * 1023 + "\n"
    (logs / "raylet.out").write_text(line * (READ_CHUNK // 1024 + 10))
    ship, out = shipper(tmp_path)
    first = (ship.round(), ship.behind)
    second = (ship.round(), ship.behind)
    assert first == (READ_CHUNK, True)
    assert second == (10 * 1024, False)
    assert len(entries(out)) == READ_CHUNK // 1024 + 10


REAL_RAY = textwrap.dedent(
    """
    import sys, ray
    ray.init(num_cpus=1, include_dashboard=False, _temp_dir=sys.argv[1])

    @ray.remote
    def task():
        print("from a task")

    @ray.remote
    class Worker:
        def hello(self):
            print("from an actor", file=sys.stderr)

    ray.get(task.remote())
    ray.get(Worker.remote().hello.remote())
    ray.shutdown()
    """
)


def test_real_ray_files_carry_the_job_the_task_and_the_actor(tmp_path: Path) -> None:
    """Ray itself writes the session folder, the worker files and their marker lines."""
    pytest.importorskip("ray")
    ray_dir = Path("/tmp") / f"rl{os.getpid()}"  # short: Ray's socket paths live under it
    try:
        subprocess.run(
            [sys.executable, "-c", REAL_RAY, str(ray_dir)],
            check=True,
            capture_output=True,
            timeout=180,
            cwd=tmp_path,
            # As the NeMo RL image sets it: under `uv run` (make test) Ray would otherwise ship
            # the working folder to its workers and start them through uv.
            env={
                **os.environ,
                "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0",
                "RAY_USAGE_STATS_ENABLED": "0",
            },
        )
        out = io.StringIO()
        ship = Shipper(ray_dir, tmp_path / "copy", True, "grpo-1", out=out)
        while ship.round(final=True):
            pass
    finally:
        subprocess.run(["rm", "-rf", str(ray_dir)], check=False)
    found = entries(out)
    (task,) = [e for e in found if e["message"] == "from a task"]
    (actor,) = [e for e in found if e["message"] == "from an actor"]
    assert task[LABELS_KEY]["ray_task"] == "task"
    assert task[LABELS_KEY]["ray_log"].startswith("worker-")
    assert task[LABELS_KEY]["ray_log"].endswith(".out")
    assert actor[LABELS_KEY]["ray_actor"] == "Worker"
    assert actor[LABELS_KEY]["ray_log"].endswith(".err")
    assert task[LABELS_KEY]["ray_job_id"] == actor[LABELS_KEY]["ray_job_id"] != "ffffffff"
    logs = {e[LABELS_KEY]["ray_log"] for e in found}
    assert {"raylet.out", "gcs_server.out"} <= logs
    assert not [name for name in logs if name.startswith("python-core-")]
    infos = [e for e in found if e[LABELS_KEY]["ray_log"] == "raylet.out"]
    assert {e["severity"] for e in infos} >= {"INFO"}
    assert "DEFAULT" not in {e["severity"] for e in infos[:5]}


def test_the_sidecar_ships_the_last_unfinished_line_when_it_is_stopped(tmp_path: Path) -> None:
    logs = session(tmp_path / "ray")
    (logs / "raylet.out").write_text("first\n")
    env = {
        **os.environ,
        "RAY_LOGS_RAY_DIR": str(tmp_path / "ray"),
        "RAY_LOGS_COPY_DIR": str(tmp_path / "copy"),
        "POD_NAME": "nemo-rl-gpu-workers-abcde",
        "RAY_LOGS_RUN": "grpo-1",
        "RAY_LOGS_INTERVAL_SECONDS": "60",
    }
    proc = subprocess.Popen(
        [sys.executable, str(SCRIPT)], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        copy = tmp_path / "copy" / "nemo-rl-gpu-workers-abcde"
        deadline = time.monotonic() + 30
        while not list(copy.glob("*/raylet.out")) and time.monotonic() < deadline:
            time.sleep(0.1)
        # Written after the first round; the next one is a minute away: only the stop ships it.
        with (logs / "raylet.out").open("a") as handle:
            handle.write("last words, no newline")
        proc.send_signal(signal.SIGTERM)
        stdout, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0
    lines = [json.loads(line) for line in stdout.splitlines()]
    assert "shipping Ray's logs" in lines[0]["message"]
    assert [e["message"] for e in lines[1:]] == ["first", "last words, no newline"]
    (copied,) = copy.glob("*/raylet.out")
    assert copied.read_text() == "first\nlast words, no newline"


def test_a_copy_it_cannot_write_is_said_once_and_the_lines_still_go_out(tmp_path: Path) -> None:
    logs = session(tmp_path / "ray")
    (logs / "raylet.out").write_text("one\n")
    blocked = tmp_path / "copy"
    blocked.write_text("a file where the copy folder should be")
    ship, out = shipper(tmp_path)
    ship.round()
    with (logs / "raylet.out").open("a") as handle:
        handle.write("two\n")
    ship.round()
    found = entries(out)
    errors = [e for e in found if e["severity"] == "ERROR"]
    assert len(errors) == 1
    assert errors[0]["message"].startswith(f"cannot copy to {blocked}/")
    assert [e["message"] for e in found if e["severity"] != "ERROR"] == ["one", "two"]


@pytest.mark.parametrize(
    ("line", "kept"),
    [
        # Ray 2.55.1's runtime-env agent (runtime_env_agent.py:378), as it wrote it here.
        (
            'INFO runtime_env_agent.py:378 -- Creating runtime env: {"env_vars": {"HOME":'
            ' "/root", "HF_TOKEN": "hf_s3cr3t", "RAY_AUTH_TOKEN": "s3cr3t"}}',
            'INFO runtime_env_agent.py:378 -- Creating runtime env: {"env_vars": {"HOME":'
            ' "/root", "HF_TOKEN": "[redacted]", "RAY_AUTH_TOKEN": "[redacted]"}}',
        ),
        # The serialized runtime env inside a JSON string (the State API's and Ray's protos).
        (
            '"serialized_runtime_env": "{\\"env_vars\\": {\\"WANDB_API_KEY\\": \\"s3cr3t\\"}}"',
            '"serialized_runtime_env": "{\\"env_vars\\": {\\"WANDB_API_KEY\\": \\"[redacted]\\"}}"',
        ),
        (
            "export HF_TOKEN=s3cr3t && run max_new_tokens=512",
            "export HF_TOKEN=[redacted] && run max_new_tokens=512",
        ),
        ("{'token': 's3cr3t', 'max_tokens': '5'}", "{'token': '[redacted]', 'max_tokens': '5'}"),
        ("Authorization: Bearer s3cr3ts3cr3t", "Authorization: Bearer [redacted]"),
        ("login with hf_" + "A" * 34 + " now", "login with [redacted] now"),
        ("step 3/10 loss 0.42 tokens 51234", "step 3/10 loss 0.42 tokens 51234"),
    ],
)
def test_a_secret_s_value_never_leaves_a_line(line: str, kept: str) -> None:
    assert redact(line) == kept


CARELESS_DRIVER = textwrap.dedent(
    """
    import os, sys, ray
    # What NeMo RL does with the driver's environment (virtual_cluster.py): every variable goes
    # into the runtime env, here with the secrets a careless driver would still hold.
    ray.init(address="auto", runtime_env={"env_vars": dict(os.environ)})

    @ray.remote
    class Worker:
        def hello(self):
            print("worker sees HF_TOKEN=" + os.environ["HF_TOKEN"])
            return 1

    assert ray.get(Worker.remote().hello.remote()) == 1
    """
)


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _stop_group(head: subprocess.Popen[bytes], ray_dir: Path) -> None:
    """End the head's process group by pid (SIGTERM, then SIGKILL), then any Ray process of
    this session Ray put in a session of its own (its command line names the session's
    folder)."""
    for sig, wait in ((signal.SIGTERM, 20.0), (signal.SIGKILL, 10.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(head.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            head.wait(timeout=wait)
            break
    for pid in processes_naming(f"{ray_dir}/"):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def test_no_secret_of_a_real_ray_session_is_shipped_or_copied(tmp_path: Path) -> None:
    """Real Ray 2.55.1 in token mode (as KubeRay 1.7 starts it) and a driver that forwards
    the dashboard's token, an HF token and a W&B key into a runtime env: Ray's own files hold
    them (runtime_env_agent.log, the worker's print); the sidecar sends and copies every line
    of the session, none of those values."""
    pytest.importorskip("ray")
    ray_dir = Path("/tmp") / f"rs{os.getpid()}"  # short: Ray's socket paths live under it
    secrets_ = {
        "RAY_AUTH_TOKEN": "raytok" + os.urandom(12).hex(),
        "HF_TOKEN": "hf_" + os.urandom(17).hex(),
        "WANDB_API_KEY": os.urandom(20).hex(),
    }
    env = {
        **os.environ,
        **secrets_,
        "RAY_AUTH_MODE": "token",
        "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0",
        "RAY_USAGE_STATS_ENABLED": "0",
    }
    port = free_port()
    env["RAY_ADDRESS"] = f"127.0.0.1:{port}"
    # Started blocking in a session of its own and stopped by that group (never `ray stop`,
    # which ends every Ray process on the machine, other tests' and the test bed's included).
    head = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "ray"),
            "start",
            "--head",
            "--block",
            f"--port={port}",
            "--node-ip-address=127.0.0.1",
            # Workers on ports the kernel picks: Ray's default block overlaps the test bed's.
            "--min-worker-port=0",
            "--max-worker-port=0",
            "--num-cpus=1",
            "--include-dashboard=false",
            f"--temp-dir={ray_dir}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=tmp_path,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not _listening(port):
            assert head.poll() is None, "ray start --head ended"
            assert time.monotonic() < deadline, "Ray's GCS never listened"
            time.sleep(0.5)
        driver = subprocess.run(
            [sys.executable, "-c", CARELESS_DRIVER],
            capture_output=True,
            text=True,
            timeout=180,
            env=env,
            cwd=tmp_path,
        )
        assert driver.returncode == 0, driver.stderr[-2000:]
        written = [p for p in ray_dir.rglob("*") if p.is_file() and not p.is_symlink()]
        leaky = {p.name for p in written if secrets_["RAY_AUTH_TOKEN"].encode() in p.read_bytes()}
        assert "runtime_env_agent.log" in leaky  # Ray writes it: the sidecar must not ship it
        out = io.StringIO()
        ship = Shipper(ray_dir, tmp_path / "copy", True, "grpo-1", out=out)
        while ship.round(final=True):
            pass
    finally:
        _stop_group(head, ray_dir)
        shutil.rmtree(ray_dir, ignore_errors=True)
    shipped = out.getvalue()
    copied = [p.read_text(errors="replace") for p in (tmp_path / "copy").rglob("*") if p.is_file()]
    assert "Creating runtime env" in shipped
    assert any("Creating runtime env" in c for c in copied)
    assert "worker sees HF_TOKEN=[redacted]" in shipped
    for name, value in secrets_.items():
        assert value not in shipped, name
        assert not [c for c in copied if value in c], name


def test_a_restarted_sidecar_goes_on_where_it_stopped(tmp_path: Path) -> None:
    """Killed between rounds (OOM, a node-pressure restart), the sidecar starts again in the
    same pod: its positions are in the pod's emptyDir, so nothing is sent or copied twice."""
    logs = session(tmp_path / "ray")
    (logs / "raylet.out").write_text("one\ntwo\nthree, unfinished")
    state = tmp_path / "state" / "positions.json"
    first = io.StringIO()
    Shipper(
        tmp_path / "ray", tmp_path / "copy", True, "grpo-1", out=first, state_file=state
    ).round()
    with (logs / "raylet.out").open("a") as handle:
        handle.write(" now finished\nfour\n")
    second = io.StringIO()
    Shipper(
        tmp_path / "ray", tmp_path / "copy", True, "grpo-1", out=second, state_file=state
    ).round()
    assert [e["message"] for e in entries(first)] == ["one", "two"]
    assert [e["message"] for e in entries(second)] == ["three, unfinished now finished", "four"]
    (copied,) = (tmp_path / "copy").glob("*/raylet.out")
    assert copied.read_text() == (logs / "raylet.out").read_text()
    # Without the saved positions (a sidecar of the earlier kind) everything goes again.
    again = io.StringIO()
    Shipper(tmp_path / "ray", tmp_path / "copy2", True, "grpo-1", out=again).round()
    assert len(entries(again)) == 4
