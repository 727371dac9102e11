"""Ship a Ray pod's own log files: to Cloud Logging through the container's output, and to the
shared volume.

Ray writes its processes' logs (raylet, GCS, dashboard, every worker's and actor's stdout and
stderr, the job driver's) as files under its session folder, `/tmp/ray/session_latest/logs`, an
emptyDir of the pod: GKE's logging agent collects container output only, and the files go with
the pod. This runs beside Ray as a native sidecar of the pod (it starts before Ray and stops
after it) and, every few seconds and once more when it is told to stop:

- prints each new line as one JSON object, which GKE's agent turns into a structured entry:
  `severity` (read from Ray's own line formats), `message`, and the labels a user filters on
  (`ray_log`: the file; `run`: the run; `ray_job_id`, `ray_actor`, `ray_task` from the marker
  lines Ray writes into a worker's files; `submission_id` of a job driver's file). Ray's
  core-worker debug logs (`python-core-*`) stay off Cloud Logging and are copied like the rest;
  its state dumps (`debug_state*`, rewritten in place) are neither sent nor copied;
- appends the same bytes to `<copy dir>/<pod>/<session>/<file>` on the shared volume, so a
  pod that is gone leaves its logs in the run's folder, at most one interval behind.

Files are followed by inode: a file Ray rotates (`raylet.out` -> `raylet.out.1`) is not shipped
twice, and the new `raylet.out` continues the same copy. The read positions are saved after
every round in a folder of the pod (an emptyDir), so a restarted sidecar goes on where it was
instead of sending and appending every file again.

Secrets never leave: in every line, sent or copied, the value of a secret-like name (`..._TOKEN`,
`..._KEY`, `SECRET`, `PASSWORD`, `CREDENTIALS`, as `"NAME": "value"`, `'NAME': 'value'` or
`NAME=value`), a bearer credential and a Hugging Face token are replaced by `[redacted]`. Ray's
runtime-env agent logs every runtime env with its environment variables, which NeMo RL fills
with the driver's whole environment. Standard library only; it needs nothing of the pod but
its folders.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

LABELS_KEY = "logging.googleapis.com/labels"
"""The field GKE's logging agent turns into the entry's labels (Cloud Logging's special fields)."""
MAX_MESSAGE = 64 * 1024
"""Characters of one line kept in an entry (Cloud Logging refuses entries over 256 KB)."""
READ_CHUNK = 1024 * 1024
"""At most this much of one file per round, so the sidecar's memory stays small."""
FINAL_ROUNDS = 64
"""Rounds of the last shipping at most (64 MiB of one file's backlog)."""
NOT_TO_CLOUD = re.compile(r"^(python-core-|debug_state)")
"""Ray's core-worker debug logs and its state dumps: copied, not sent to Cloud Logging."""
NOT_SHIPPED = re.compile(r"^debug_state")
"""Rewritten in place every few seconds (not a log): neither sent nor copied."""
MARKERS = {":job_id:": "ray_job_id", ":actor_name:": "ray_actor", ":task_name:": "ray_task"}
"""Lines Ray writes into a worker's stdout / stderr file when the worker starts serving a job,
an actor or a task (ray_constants LOG_PREFIX_*, what Ray's log monitor reads): they become the
labels of the lines after them, and are not entries themselves."""
DRIVER_FILE = re.compile(r"^job-driver-(.+)\.log$")
"""`job-driver-<submission id>.log`: a submitted job's driver output."""
PYTHON_LEVEL = re.compile(r"^\S+ \S+\s+(DEBUG|INFO|WARNING|ERROR|CRITICAL)\b")
"""Ray's Python logging format: `2026-12-07 01:02:03,123\tINFO file.py:12 -- message`."""
NATIVE_LEVEL = re.compile(r"^\[\S+ \S+ ([DIWEF]) \d+ \d+\]")
"""Ray's C++ logging format: `[2026-12-07 01:02:03,123 I 12 34] file.cc:56: message`."""
NATIVE_SEVERITY = {"D": "DEBUG", "I": "INFO", "W": "WARNING", "E": "ERROR", "F": "CRITICAL"}
REDACTED = "[redacted]"
ENV_SECRET = (
    r"[A-Z0-9_]*(?:TOKEN|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|SECRET|PASSWORD|PASSWD|CREDENTIALS?)"  # noqa: S105 - a pattern of names
    r"[A-Z0-9_]*"
)
"""An environment variable whose value is a secret (RAY_AUTH_TOKEN, HF_TOKEN, WANDB_API_KEY,
AWS_SECRET_ACCESS_KEY, ...; RAY_AUTH_TOKEN_PATH too: a path lost from a log costs nothing)."""
KEY_SECRET = r"[a-z0-9_]*(?:token|password|secret|api_?key)"  # noqa: S105 - a pattern
"""A lower-case key that ends in a secret's name (`"token": ...`, not `"max_tokens": ...`)."""
QUOTE = r"""\\*["']"""
"""A quote, also escaped inside a JSON string (`\\"NAME\\": ...`)."""
SECRETS = (
    # "NAME": "value", 'NAME': 'value', "key": "value".
    re.compile(rf"""({QUOTE}(?:{ENV_SECRET}|{KEY_SECRET}){QUOTE}\s*[:=]\s*{QUOTE})[^"'\\]+"""),
    # NAME=value (a shell line, an environment listing).
    re.compile(rf"""(\b{ENV_SECRET}=)[^\s"',;&]+"""),
    # Authorization: Bearer value.
    re.compile(r"(?i)(\bbearer\s+)[A-Za-z0-9._~+/=-]{8,}"),
    # A Hugging Face user access token anywhere.
    re.compile(r"()\bhf_[A-Za-z0-9]{30,}\b"),
)
"""Where a secret's value stands in a line: what to keep before it (group 1)."""


def redact(line: str) -> str:
    """The line with every secret's value replaced by REDACTED."""
    for pattern in SECRETS:
        line = pattern.sub(lambda m: m.group(1) + REDACTED, line)
    return line


def severity(line: str) -> str | None:
    """The severity a line starts, in Cloud Logging's words; None where Ray's formats do not
    say (a record's continuation lines, plain print output)."""
    found = PYTHON_LEVEL.match(line)
    if found:
        return found.group(1)
    native = NATIVE_LEVEL.match(line)
    if native:
        return NATIVE_SEVERITY[native.group(1)]
    if line.startswith("Traceback (most recent call last)"):
        return "ERROR"
    return None


def file_labels(name: str, run: str) -> dict[str, str]:
    """The labels every entry of one file starts with."""
    labels = {"ray_log": name}
    if run:
        labels["run"] = run
    driver = DRIVER_FILE.match(name)
    if driver:
        labels["submission_id"] = driver.group(1)
    return labels


def marker(line: str) -> tuple[str, str] | None:
    """(label, value) of one of Ray's marker lines, else None."""
    for prefix, label in MARKERS.items():
        if line.startswith(prefix):
            return label, line[len(prefix) :].strip()
    return None


@dataclass
class Followed:
    """One file being shipped, known by its inode."""

    name: str
    """The name it had when first seen: its copy's name, kept across Ray's rotation."""
    offset: int = 0
    partial: bytes = b""
    """The end of the last read that was not a whole line yet."""
    context: dict[str, str] = field(default_factory=dict)
    """What Ray's marker lines said so far: the job, actor or task the next lines are from."""
    severity: str = "DEFAULT"
    """The severity of the record being read: its continuation lines (a multi-line record, a
    traceback) have it too."""

    def saved(self) -> dict[str, Any]:
        """What a restarted sidecar needs: the position of the last whole line read."""
        return {
            "name": self.name,
            "offset": self.offset - len(self.partial),
            "context": self.context,
            "severity": self.severity,
        }

    @classmethod
    def restored(cls, saved: dict[str, Any]) -> Followed:
        """A file's state as saved (its unfinished line is read again)."""
        return cls(
            str(saved["name"]),
            int(saved["offset"]),
            context={str(k): str(v) for k, v in dict(saved.get("context", {})).items()},
            severity=str(saved.get("severity", "DEFAULT")),
        )


@dataclass
class Shipper:
    """Follows one Ray temp folder's current session."""

    ray_dir: Path
    copy_dir: Path | None
    to_cloud: bool
    run: str
    out: TextIO = field(default=sys.stdout)
    followed: dict[tuple[str, int], Followed] = field(default_factory=dict)
    behind: bool = False
    """The last round left unread bytes in some file (it read a whole chunk)."""
    copy_failed: set[Path] = field(default_factory=set)
    """Copies that could not be written (said once each)."""
    state_file: Path | None = None
    """Where the read positions are kept across a restart of the sidecar (None: not kept)."""

    def __post_init__(self) -> None:
        self.followed.update(self.load())

    def load(self) -> dict[tuple[str, int], Followed]:
        """The positions a previous run of the sidecar saved (none if unreadable)."""
        if self.state_file is None:
            return {}
        try:
            saved = json.loads(self.state_file.read_text(encoding="utf-8"))
            return {
                (str(item["session"]), int(item["inode"])): Followed.restored(item)
                for item in saved
            }
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return {}

    def save(self) -> None:
        """Keep the positions (written aside, then renamed: a sidecar killed mid-write leaves
        the last whole state)."""
        if self.state_file is None:
            return
        items = [
            {"session": session, "inode": inode, **state.saved()}
            for (session, inode), state in self.followed.items()
        ]
        aside = self.state_file.with_suffix(".tmp")
        try:
            self.state_file.parent.mkdir(parents=True, exist_ok=True)
            aside.write_text(json.dumps(items), encoding="utf-8")
            aside.replace(self.state_file)
        except OSError as error:
            entry = {"severity": "WARNING", "message": f"cannot keep read positions: {error}"}
            self.out.write(json.dumps(entry) + "\n")

    def session_logs(self) -> tuple[str, Path] | None:
        """(session name, its logs folder), or None before Ray has started."""
        latest = self.ray_dir / "session_latest"
        try:
            session = latest.resolve(strict=True)
        except OSError:
            return None
        logs = session / "logs"
        return (session.name, logs) if logs.is_dir() else None

    def round(self, *, final: bool = False) -> int:
        """Ship what is new; `final` also ships unfinished last lines. Returns bytes shipped."""
        found = self.session_logs()
        if found is None:
            return 0
        session, logs = found
        shipped = 0
        self.behind = False
        for path in sorted(logs.iterdir()):
            if NOT_SHIPPED.match(path.name):
                continue
            try:
                stat = path.stat()
            except OSError:
                continue
            if not path.is_file():
                continue
            key = (session, stat.st_ino)
            state = self.followed.setdefault(key, Followed(path.name))
            if stat.st_size < state.offset:
                state.offset, state.partial = 0, b""  # truncated in place: start again
            read = self.ship(session, path, state, final=final)
            self.behind = self.behind or read == READ_CHUNK
            shipped += read
        if shipped:
            self.save()
        return shipped

    def ship(self, session: str, path: Path, state: Followed, *, final: bool) -> int:
        """Send and copy the new bytes of one file."""
        try:
            with path.open("rb") as handle:
                handle.seek(state.offset)
                data = handle.read(READ_CHUNK)
        except OSError:
            return 0
        if not data:
            if final and state.partial:
                tail = redact(state.partial.decode("utf-8", errors="replace"))
                if self.copy_dir is not None:
                    self.copy(self.copy_dir / session / state.name, tail.encode())
                self.emit(state, tail)
                state.partial = b""
            return 0
        state.offset += len(data)
        text = state.partial + data
        lines = text.split(b"\n")
        state.partial = lines.pop()
        last = b""
        if final and state.partial and len(data) < READ_CHUNK:
            last, state.partial = state.partial, b""
        # Whole lines only, each with its secrets redacted; an unfinished last line waits for
        # its end (or for the sidecar's stop).
        cleaned = [redact(line.decode("utf-8", errors="replace")) for line in [*lines, last]]
        if self.copy_dir is not None and (lines or last):
            copied = "\n".join(cleaned[:-1]) + ("\n" if lines else "") + cleaned[-1]
            self.copy(self.copy_dir / session / state.name, copied.encode())
        for line in cleaned[: len(lines)] + ([cleaned[-1]] if last else []):
            self.emit(state, line)
        return len(data)

    def copy(self, target: Path, data: bytes) -> None:
        """Append to the copy; a folder it may not write in (or a full volume) is said once per
        file, and the lines still go to Cloud Logging: the sidecar never stops over it (a
        restart would send every line again)."""
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with target.open("ab") as copy:
                copy.write(data)
        except OSError as error:
            if target not in self.copy_failed:
                self.copy_failed.add(target)
                entry = {"severity": "ERROR", "message": f"cannot copy to {target}: {error}"}
                self.out.write(json.dumps(entry) + "\n")

    def emit(self, state: Followed, line: str) -> None:
        """One structured entry on the container's output (GKE's agent sends it on)."""
        message = line.rstrip("\r")
        found = marker(message)
        if found is not None:
            label, value = found
            if label == "ray_job_id":
                state.context.clear()  # a new job: its actor or task is not known yet
            state.context[label] = value
            state.severity = "DEFAULT"
            return
        if not self.to_cloud or NOT_TO_CLOUD.match(state.name) or not message.strip():
            return
        state.severity = severity(message) or state.severity
        entry: dict[str, Any] = {
            "severity": state.severity,
            "message": message[:MAX_MESSAGE],
            LABELS_KEY: {**file_labels(state.name, self.run), **state.context},
        }
        self.out.write(json.dumps(entry, ensure_ascii=False) + "\n")


def settings(env: dict[str, str]) -> tuple[Path, Path | None, bool, str, float]:
    """(Ray's temp folder, the pod's copy folder or None, send to Cloud Logging, run, interval)
    from the container's environment (RAY_LOGS_STATE_DIR is read by main)."""
    ray_dir = Path(env.get("RAY_LOGS_RAY_DIR", "/tmp/ray"))  # noqa: S108 - Ray's temp folder
    copy_root = env.get("RAY_LOGS_COPY_DIR", "")
    pod = env.get("POD_NAME") or env.get("HOSTNAME", "pod")
    copy_dir = Path(copy_root) / pod if copy_root else None
    return (
        ray_dir,
        copy_dir,
        env.get("RAY_LOGS_CLOUD", "1") == "1",
        env.get("RAY_LOGS_RUN", ""),
        float(env.get("RAY_LOGS_INTERVAL_SECONDS", "5")),
    )


def main() -> int:
    """Ship every interval until SIGTERM, then ship what is left once more."""
    ray_dir, copy_dir, to_cloud, run, interval = settings(dict(os.environ))
    state_dir = os.environ.get("RAY_LOGS_STATE_DIR", "")
    state_file = Path(state_dir) / "positions.json" if state_dir else None
    shipper = Shipper(ray_dir, copy_dir, to_cloud, run, state_file=state_file)
    stopping = False

    def stop(_signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(
        json.dumps(
            {
                "severity": "INFO",
                "message": f"shipping Ray's logs from {ray_dir}/session_latest/logs"
                + (" to Cloud Logging" if to_cloud else "")
                + (f" and to {copy_dir}" if copy_dir is not None else ""),
            }
        ),
        flush=True,
    )
    while not stopping:
        shipper.round()
        sys.stdout.flush()
        # A backlog is read a chunk per file per round, without waiting in between.
        deadline = time.monotonic() + (0 if shipper.behind else interval)
        while not stopping and time.monotonic() < deadline:
            time.sleep(0.2)
    # Ray has stopped (a native sidecar is stopped after the pod's containers): what is left,
    # a bounded number of chunks so that a process still writing cannot hold the pod.
    for _ in range(FINAL_ROUNDS):
        shipper.round(final=True)
        if not shipper.behind:
            break
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
