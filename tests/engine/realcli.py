"""Drive the real Pulumi CLI built by `make engine`, in a throw-away copy of the project.

Each workspace is a copy of the tracked files (so `pulumi config set` never touches the
committed stack files) with `.venv` linked to this checkout's environment, a fresh file
backend and a passphrase. Commands run with exactly the environment `.tools/engine/env` sets.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from testbed.engine import BIN, HOME, engine_environ

REPO = Path(__file__).resolve().parents[2]
PASSPHRASE = "engine-test-passphrase"  # noqa: S105 - a test bed's throw-away passphrase
POLICY_ADVISORY_ON_UNKNOWN = re.compile(r"can't run policy '([a-z0-9-]+)'", re.I)


def engine_available() -> str | None:
    """Why the real engine cannot be used here, or None when it can."""
    for needed in (BIN / "pulumi", BIN / "pulumi-language-python", HOME / "plugins"):
        if not needed.exists():
            return f"the real engine is not built ({needed} is missing): run `make engine`"
    return None


def tracked_files() -> list[str]:
    """The repository's tracked files (what a fresh clone has)."""
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        check=True,
        capture_output=True,
    ).stdout.decode()
    return [f for f in out.split("\0") if f]


def run_in_own_group(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    input: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run `argv` with a mark in its environment, and when it has ended stop, by pid, every
    process that still carries the mark. The CLI starts its plugins in process groups of
    their own and, when it stops early (a missing required key ends `pulumi preview` before
    the program), leaves its language host running; nothing a test starts may outlive it."""
    mark = f"{RUN_MARK}={uuid.uuid4().hex}"
    marked = {**env, RUN_MARK: mark.split("=", 1)[1]}
    with subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=marked,
        stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    ) as proc:
        try:
            stdout, stderr = proc.communicate(input, timeout=timeout)
        finally:
            stop_marked(mark)
    return subprocess.CompletedProcess(list(argv), proc.returncode, stdout, stderr)


RUN_MARK = "NEMO_RL_GKE_ENGINE_TEST_RUN"
"""The environment variable that marks the processes of one CLI run (plugins inherit it)."""


def marked_processes(mark: str) -> list[int]:
    """Live processes whose environment holds `mark` (`NAME=value`)."""
    needle = mark.encode() + b"\0"
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and (environ.startswith(needle) or b"\0" + needle in environ):
            found.append(int(entry.name))
    return found


def stop_marked(mark: str, grace: float = 5) -> None:
    """SIGTERM every process of the run by pid; SIGKILL what is left after `grace` seconds."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        pids = marked_processes(mark)
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + grace
        while marked_processes(mark) and time.monotonic() < deadline:
            time.sleep(0.1)


def processes_in(folder: Path) -> list[int]:
    """Live processes whose working directory is `folder` or inside it."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cwd = Path(os.readlink(entry / "cwd"))
        except OSError:
            continue
        if cwd == folder or folder in cwd.parents:
            found.append(int(entry.name))
    return found


@dataclass
class Workspace:
    """A project copy with its own state backend."""

    root: Path
    backend: Path
    extra_env: dict[str, str] = field(default_factory=dict)
    _runs: int = 0

    def env(self) -> dict[str, str]:
        """The engine environment plus this workspace's backend and passphrase."""
        env = engine_environ()
        env["PULUMI_BACKEND_URL"] = self.backend.as_uri()
        env["PULUMI_CONFIG_PASSPHRASE"] = PASSPHRASE
        env.pop("PULUMI_ACCESS_TOKEN", None)
        env.update(self.extra_env)
        return env

    def pulumi(
        self, *args: str, check: bool = True, timeout: float = 600, input: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run `pulumi ARGS` in the workspace; raise with its output when `check` and it fails."""
        proc = run_in_own_group(
            [str(BIN / "pulumi"), *args, "--non-interactive"],
            cwd=self.root,
            env=self.env(),
            timeout=timeout,
            input=input,
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"pulumi {' '.join(args)} exited {proc.returncode}\n"
                f"--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
            )
        return proc

    def bash(
        self, script: str, *, check: bool = True, timeout: float = 900
    ) -> subprocess.CompletedProcess[str]:
        """Run a bash script in the workspace with the engine environment."""
        proc = run_in_own_group(
            ["bash", "-euo", "pipefail", "-c", script],
            cwd=self.root,
            env=self.env(),
            timeout=timeout,
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"script exited {proc.returncode}\n{script}\n--- stdout\n{proc.stdout}\n"
                f"--- stderr\n{proc.stderr}"
            )
        return proc

    def write_stack(self, stack: str, config: Mapping[str, Any]) -> Path:
        """Write Pulumi.<stack>.yaml in the workspace."""
        path = self.root / f"Pulumi.{stack}.yaml"
        path.write_text(yaml.safe_dump({"config": dict(config)}, sort_keys=False))
        return path

    def init(self, stack: str) -> None:
        """`pulumi stack init` on the workspace's fresh backend."""
        self.pulumi("stack", "init", stack)

    def policy_args(self, stack: str) -> list[str]:
        """`--policy-pack policies --policy-pack-config policies/config/<stack>.json`."""
        args = ["--policy-pack", "policies"]
        if (self.root / "policies" / "config" / f"{stack}.json").exists():
            args += ["--policy-pack-config", f"policies/config/{stack}.json"]
        return args

    def events(self, *args: str, timeout: float = 1800) -> Events:
        """Run a pulumi command with an engine event log (`--event-log`, behind
        PULUMI_DEBUG_COMMANDS) and return what the engine reported."""
        self._runs += 1
        log = self.root.parent / f"events-{self._runs}.jsonl"
        self.extra_env["PULUMI_DEBUG_COMMANDS"] = "true"
        try:
            proc = self.pulumi(*args, "--event-log", str(log), check=False, timeout=timeout)
        finally:
            self.extra_env.pop("PULUMI_DEBUG_COMMANDS")
        lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
        return Events.parse(proc, lines)

    def preview(self, stack: str, *extra: str) -> Events:
        """`pulumi preview` of a stack with the pack and its policy config."""
        return self.events("preview", "-s", stack, *self.policy_args(stack), *extra)

    def up(self, stack: str, *extra: str) -> Events:
        """`pulumi up --yes` of a stack with the pack and its policy config."""
        return self.events("up", "-s", stack, "--yes", *self.policy_args(stack), *extra)

    def state_resources(self, stack: str) -> list[dict[str, Any]]:
        """Resources in the stack's state (`pulumi stack export`)."""
        proc = self.pulumi("stack", "export", "-s", stack)
        deployment = json.loads(proc.stdout).get("deployment", {})
        return list(deployment.get("resources") or [])


def copy_project(root: Path, *, tools: bool = False) -> Path:
    """The project's files (what a fresh clone has, with uncommitted edits) copied into `root`,
    using the checkout's .venv (and, with `tools`, its .tools: the built engine, the local
    cluster, the state), so that a test may change the copy and never the checkout."""
    for name in tracked_files():
        source = REPO / name
        if not source.is_file():
            continue
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
    (root / ".venv").symlink_to(REPO / ".venv")
    if tools:
        (REPO / ".tools").mkdir(exist_ok=True)
        (root / ".tools").symlink_to(REPO / ".tools")
    return root


def make_workspace(tmp: Path) -> Workspace:
    """Copy the project into `tmp/project` with a backend in `tmp/state`."""
    root = copy_project(tmp / "project")
    backend = tmp / "state"
    backend.mkdir()
    return Workspace(root=root, backend=backend)


@dataclass
class Step:
    """One planned step of a preview."""

    op: str
    urn: str

    @property
    def type(self) -> str:
        """Resource type (the last type in a URN with parents)."""
        return self.urn.split("::")[2].rsplit("$", 1)[-1]

    @property
    def name(self) -> str:
        """Logical name."""
        return self.urn.split("::", 3)[3]


@dataclass
class PolicyResult:
    """One policy diagnostic from the real engine (a `policyEvent`)."""

    policy: str
    level: str
    urn: str
    message: str

    @property
    def resource(self) -> str | None:
        """Logical name of the resource it is about (None for the stack)."""
        if not self.urn or self.urn.split("::")[2].endswith("pulumi:pulumi:Stack"):
            return None
        return self.urn.split("::", 3)[3]


@dataclass
class Events:
    """The engine events of one command (its `--event-log`)."""

    returncode: int
    steps: list[Step]
    policies: list[PolicyResult]
    diagnostics: list[dict[str, Any]]
    result: str
    stdout: str
    stderr: str

    @classmethod
    def parse(cls, proc: subprocess.CompletedProcess[str], lines: Sequence[str]) -> Events:
        """Read the engine events of a command from its event log lines."""
        steps: list[Step] = []
        policies: list[PolicyResult] = []
        diagnostics: list[dict[str, Any]] = []
        result = ""
        for line in lines:
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            if not isinstance(event, dict):
                continue
            if "resourcePreEvent" in event:
                meta = event["resourcePreEvent"]["metadata"]
                if event["resourcePreEvent"].get("planning") or not any(
                    s.urn == meta["urn"] and s.op == meta["op"] for s in steps
                ):
                    steps.append(Step(meta["op"], meta["urn"]))
            elif "policyEvent" in event:
                pe = event["policyEvent"]
                policies.append(
                    PolicyResult(
                        policy=pe.get("policyName", ""),
                        level=pe.get("enforcementLevel", ""),
                        urn=pe.get("resourceUrn", ""),
                        message=pe.get("message", ""),
                    )
                )
            elif "diagnosticEvent" in event:
                diagnostics.append(event["diagnosticEvent"])
            elif "summaryEvent" in event:
                result = str(event["summaryEvent"].get("result", ""))
        return cls(
            returncode=proc.returncode,
            steps=steps,
            policies=policies,
            diagnostics=diagnostics,
            result=result,
            stdout=proc.stdout,
            stderr=proc.stderr,
        )

    def creates(self) -> list[Step]:
        """Resources the command would create (the stack itself excluded)."""
        return [s for s in self.steps if s.op == "create" and s.type != "pulumi:pulumi:Stack"]

    def errors(self) -> list[str]:
        """Error diagnostics, as the CLI printed them."""
        return [str(d.get("message", "")) for d in self.diagnostics if d.get("severity") == "error"]

    def unjudged(self) -> list[PolicyResult]:
        """Policies that could not run because a value was unknown."""
        return [p for p in self.policies if "during preview" in p.message]

    def text(self) -> str:
        """Everything printed, for assertion messages."""
        messages = "\n".join(str(d.get("message", "")) for d in self.diagnostics)
        return f"{messages}\n--- stderr\n{self.stderr}"


def resource_counts(steps: Sequence[Step]) -> dict[tuple[str, str], int]:
    """(type, name) -> how many times it appears."""
    counts: dict[tuple[str, str], int] = {}
    for step in steps:
        key = (step.type, step.name)
        counts[key] = counts.get(key, 0) + 1
    return counts


def require_engine() -> bool:
    """CI sets NEMO_RL_GKE_REQUIRE_ENGINE=1: a missing engine is then a failure, not a skip."""
    return os.environ.get("NEMO_RL_GKE_REQUIRE_ENGINE") == "1"
