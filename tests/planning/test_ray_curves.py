"""grpoCurvesCommand's server, run as the command runs it in the Ray head, by the real
TensorBoard (2.20.0, the version NeMo RL v0.7.0's lock pins): called twice for two runs, the
second call's TensorBoard is the one that answers on the port, over the second run's folder,
and the first is gone. Before, each call started another server that could not bind, and the
port-forward showed the first run. About 15 s (two TensorBoard starts)."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from planning.ray import (
    NEMO_RL_DIR,
    TENSORBOARD_LOG,
    TENSORBOARD_PID,
    TENSORBOARD_PORT,
    curves_board_script,
)
from testbed.host_ports import free_port

BIN = Path(sys.executable).parent


@pytest.fixture
def head(tmp_path: Path) -> Iterator[tuple[str, int, Path]]:
    """The board script localised to this machine (paths of the head container under
    tmp_path, a free port), with `uv run` as the image's venv runs it; every server it started
    is stopped by the process group in its PID file."""
    port = free_port()
    pid_file = tmp_path / "tensorboard.pid"
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "uv").write_text(f'#!/bin/sh\nshift\nexec "{BIN}/$@"\n', encoding="utf-8")
    (tools / "uv").chmod(0o755)
    script = (
        curves_board_script()
        .replace(TENSORBOARD_PID, str(pid_file))
        .replace(TENSORBOARD_LOG, str(tmp_path / "tensorboard.log"))
        .replace(f"--port {TENSORBOARD_PORT}", f"--port {port}")
        .replace(f"127.0.0.1:{TENSORBOARD_PORT}", f"127.0.0.1:{port}")
        .replace(f"cd {NEMO_RL_DIR}", f"cd {tmp_path}")
    )
    yield script, port, pid_file
    if pid_file.exists():
        with contextlib.suppress(ProcessLookupError):
            os.killpg(int(pid_file.read_text()), signal.SIGKILL)


def call(script: str, logdir: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """`kubectl exec ... -- bash -c SCRIPT curves "$RUN_LOGS"` as the head runs it."""
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin"}
    return subprocess.run(
        ["bash", "-c", script, "curves", str(logdir)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def served_logdir(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/data/logdir", timeout=10) as answer:
        return str(json.loads(answer.read())["logdir"])


def alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_second_call_serves_the_run_it_names_and_stops_the_first(
    head: tuple[str, int, Path], tmp_path: Path
) -> None:
    script, port, pid_file = head
    first_run, second_run = tmp_path / "runs" / "a" / "logs", tmp_path / "runs" / "b" / "logs"
    for folder in (first_run, second_run):
        (folder / "exp_001" / "tensorboard").mkdir(parents=True)
    started = call(script, first_run, tmp_path)
    assert started.returncode == 0, started.stderr
    first = int(pid_file.read_text())
    assert served_logdir(port) == str(first_run)
    again = call(script, second_run, tmp_path)
    assert again.returncode == 0, again.stderr
    assert served_logdir(port) == str(second_run)
    deadline = time.monotonic() + 10
    while alive(first) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(first), "the first run's TensorBoard still runs"


def test_a_server_that_cannot_start_fails_the_command_with_its_log(
    head: tuple[str, int, Path], tmp_path: Path
) -> None:
    """Something else holds the port: the command says TensorBoard's own words, exit 1."""
    script, port, _ = head
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port))
        taken.listen()
        failed = call(script, tmp_path, tmp_path)
    assert failed.returncode == 1
    assert "TensorBoard could not bind to port" in failed.stderr, failed.stderr[-2000:]


def test_the_command_takes_the_run_s_folder() -> None:
    assert shlex.split(curves_board_script())[-1] == "1"
