"""Background processes of the test bed, started and stopped by their pid.

Every process is recorded in `<dir>/pids/<name>.pid` with the executable it runs; stopping
checks that the pid still runs that executable (a pid may be reused), sends SIGTERM, waits,
then SIGKILL. Logs go to `<dir>/logs/<name>.log`.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Recorded:
    """What a pid file says."""

    name: str
    pid: int
    executable: str


class Processes:
    """The pid and log files of one test bed component (the local cluster)."""

    def __init__(self, root: Path) -> None:
        self.pids = root / "pids"
        self.logs = root / "logs"

    def start(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> int:
        """Start `argv` detached from this process; record and return its pid."""
        self.pids.mkdir(parents=True, exist_ok=True)
        self.logs.mkdir(parents=True, exist_ok=True)
        log = (self.logs / f"{name}.log").open("ab")
        proc = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,  # outlives `make`; stopped by pid, never by luck
        )
        log.close()
        record = {"pid": proc.pid, "executable": str(Path(argv[0]).resolve())}
        (self.pids / f"{name}.pid").write_text(json.dumps(record), encoding="utf-8")
        return proc.pid

    def recorded(self) -> list[Recorded]:
        """Every recorded process, alive or not."""
        found = []
        for path in sorted(self.pids.glob("*.pid")) if self.pids.exists() else []:
            data = json.loads(path.read_text(encoding="utf-8"))
            found.append(Recorded(path.stem, int(data["pid"]), str(data["executable"])))
        return found

    def alive(self, name: str) -> bool:
        """Whether the recorded process `name` still runs its executable."""
        return any(r.name == name and _runs(r) for r in self.recorded())

    def stop(self, name: str, timeout: float = 15) -> str:
        """Stop one recorded process; say what happened."""
        path = self.pids / f"{name}.pid"
        record = next((r for r in self.recorded() if r.name == name), None)
        if record is None:
            return f"{name}: not running"
        if not _runs(record):
            path.unlink()
            return f"{name}: was not running (pid {record.pid} gone)"
        with contextlib.suppress(ProcessLookupError):
            os.killpg(record.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and _runs(record):
            time.sleep(0.2)
        how = "stopped"
        if _runs(record):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(record.pid, signal.SIGKILL)
            how = "killed"
        _reap(record.pid)
        path.unlink()
        return f"{name}: {how} (pid {record.pid})"

    def stop_all(self, order: list[str]) -> list[str]:
        """Stop the named processes in `order`, then any other recorded one."""
        names = order + [r.name for r in self.recorded() if r.name not in order]
        return [self.stop(name) for name in names if (self.pids / f"{name}.pid").exists()]


def _runs(record: Recorded) -> bool:
    """The pid exists, is not a zombie, and runs the recorded executable."""
    proc = Path(f"/proc/{record.pid}")
    try:
        status = (proc / "stat").read_text().split(") ", 1)[1]
        if status.startswith("Z"):
            return False
        return os.readlink(proc / "exe").removesuffix(" (deleted)") == record.executable
    except (FileNotFoundError, ProcessLookupError, PermissionError, IndexError):
        return False


def _reap(pid: int) -> None:
    """Collect the exit status when the process is our child (started by this interpreter)."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)
