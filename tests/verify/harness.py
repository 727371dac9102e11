"""Run the gate scripts of gates/ here, as a Job's pods would, with the test bed's stand-ins."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from planning.verify import GATES_DIR, SMOKE_SCRIPT, GatePlan
from testbed.gate_standins import Scenario, install, local_setup


@dataclass(frozen=True)
class PodRun:
    """One pod's run of a gate."""

    returncode: int
    stdout: str
    stderr: str
    message: str
    """What the container left in its termination message."""


def pod_env(plan: GatePlan, tools: dict[str, str], tmp: Path, index: int) -> dict[str, str]:
    """The environment the component gives the pod, plus where the stand-ins are."""
    pod = f"{plan.job_name}-{index}"
    env = {
        **plan.env,
        **tools,
        "GATES_DIR": str(GATES_DIR),
        "GATE_NAME": plan.gate,
        "GATE_JOB": plan.job_name,
        "GATE_DOMAIN": f"{plan.job_name}.nemo-rl.svc.cluster.local",
        "GATE_DATA": str(tmp / "data" / ".nemo-rl-gke" / "verify"),
        "GATE_RUN_ID": "0d5f1c9e-uid",
        "JOB_COMPLETION_INDEX": str(index),
        "NODE_NAME": f"gpu-node-{index}",
        "GATE_TMP": str(tmp / "pods" / pod),
        "GATE_STANDIN_PODS": str(tmp / "pods"),
        "TERMINATION_LOG": str(tmp / "pods" / pod / "termination-log"),
        "PEER_WAIT_SECONDS": "0.1",
        "PEER_WAIT_TRIES": "100",
    }
    if "GPU_SETUP" in env:
        env["GPU_SETUP"] = local_setup(env["GPU_SETUP"], tools)
    (tmp / "pods" / pod).mkdir(parents=True, exist_ok=True)
    return env


def run_gate(
    plan: GatePlan, tmp: Path, scenario: Scenario | None = None, *, real_fio: bool = False
) -> list[PodRun]:
    """Every pod of the gate at once (they wait for one another, as on the cluster)."""
    tools = install(tmp / "standins", scenario or Scenario(), real_fio=real_fio)
    procs = []
    for index in range(plan.nodes):
        env = pod_env(plan, tools, tmp, index)
        procs.append(
            (
                env,
                subprocess.Popen(
                    [plan.interpreter, str(GATES_DIR / plan.script)],
                    env=env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                ),
            )
        )
    runs = []
    for env, proc in procs:
        out, err = proc.communicate(timeout=120)
        log = Path(env["TERMINATION_LOG"])
        message = log.read_text(encoding="utf-8") if log.exists() else ""
        runs.append(PodRun(proc.returncode, out, err, message))
    return runs


def run_smoke_script(
    env: dict[str, str], tmp: Path, timeout: float
) -> tuple[subprocess.CompletedProcess[str], str]:
    """verify/gates/grpo_smoke.py as the smoke Job's container runs it, with `env` (its pod's
    environment and the run's answers) plus this host's PATH and a termination log under `tmp`;
    how it ended, and the termination message it left."""
    tmp.mkdir(parents=True, exist_ok=True)
    log = tmp / "termination-log"
    proc = subprocess.run(
        [sys.executable, str(GATES_DIR / SMOKE_SCRIPT)],
        env={**env, "TERMINATION_LOG": str(log), "PATH": os.environ["PATH"]},
        capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip
    return proc, log.read_text(encoding="utf-8") if log.exists() else ""
