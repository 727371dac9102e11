"""`python -m testbed.engine_stack up|down STACK`: a real `pulumi up` / destroy, local cluster.

`up` builds what is missing, starts the local control plane with nodes shaped like the stack,
creates (or selects) the stack in `.tools/engine/state`, points `nemo-rl-gke:ray.chartPath` and
`nemo-rl-gke:kueue.chartPath` at the local KubeRay and Kueue charts and runs `pulumi up --yes`
with the policy pack, in this repository, as a user would. Afterwards, with
`source .tools/engine/env` and PULUMI_BACKEND_URL=file://$PWD/.tools/engine/state, any
`pulumi ... -s STACK` works on it.

`down` destroys it the README's way: a protected stack first gets `protect: false` and an
`up` (which lifts GKE deletion protection and Lustre's PREVENT), then `pulumi destroy`. The
stack is removed from the backend and its stack file restored to what it was before `up`
(which had added the passphrase salt and ray.chartPath).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

from testbed import local_cluster
from testbed.engine import BIN, ENGINE, STATE, engine_environ, install

REPO = Path(__file__).resolve().parent.parent
BACKUPS = ENGINE / "stack-files"
DEFAULT_PASSPHRASE = "nemo-rl-gke-engine-test-bed"  # noqa: S105 - a local test bed's passphrase


def environ() -> dict[str, str]:
    """Engine + local cluster environment, state in .tools/engine/state."""
    env = local_cluster.local_environ(engine_environ())
    STATE.mkdir(parents=True, exist_ok=True)
    env["PULUMI_BACKEND_URL"] = STATE.as_uri()
    env.setdefault("PULUMI_CONFIG_PASSPHRASE", DEFAULT_PASSPHRASE)
    # What the GCP stand-in keeps between its processes (the Lustre instances a private
    # services connection still serves: testbed/gcp_standin/producers.py).
    env.setdefault("NEMO_RL_GKE_STANDIN_CLOUD", str(ENGINE / "cloud"))
    env.pop("PULUMI_ACCESS_TOKEN", None)
    return env


def pulumi(env: dict[str, str], *args: str, check: bool = True) -> int:
    """Run the real CLI in the repository, its output passed through."""
    print(f"+ pulumi {' '.join(args)}", flush=True)
    code = subprocess.run(
        [str(BIN / "pulumi"), *args, "--non-interactive"], cwd=REPO, env=env, check=False
    ).returncode
    if check and code != 0:
        raise SystemExit(f"pulumi {args[0]} failed (exit {code})")
    return code


def _stack_exists(env: dict[str, str], stack: str) -> bool:
    proc = subprocess.run(
        [str(BIN / "pulumi"), "stack", "ls", "--json"],
        cwd=REPO, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    return proc.returncode == 0 and f'"name": "{stack}"' in proc.stdout


def up(stack: str) -> int:
    """Build, start the cluster, select the stack, point it at the local chart, `pulumi up`."""
    install()
    local_cluster.up(stack)
    env = environ()
    stack_file = REPO / f"Pulumi.{stack}.yaml"
    BACKUPS.mkdir(parents=True, exist_ok=True)
    backup = BACKUPS / stack_file.name
    if not backup.exists():
        shutil.copy2(stack_file, backup)
    if not _stack_exists(env, stack):
        pulumi(env, "stack", "init", stack)
    # Only where the stack installs the chart: a chart path it would not use is refused.
    cfg = local_cluster.stack_config(stack)
    if cfg.ray.operator == "helm":
        chart = local_cluster.kuberay_chart()
        pulumi(env, "config", "set", "--path", "nemo-rl-gke:ray.chartPath", str(chart), "-s", stack)
    if cfg.queue_enabled:
        kueue = local_cluster.kueue_chart()
        pulumi(
            env, "config", "set", "--path", "nemo-rl-gke:kueue.chartPath", str(kueue), "-s", stack
        )
    policy = ["--policy-pack", "policies"]
    if (REPO / "policies" / "config" / f"{stack}.json").exists():
        policy += ["--policy-pack-config", f"policies/config/{stack}.json"]
    code = pulumi(env, "up", "--yes", "-s", stack, *policy, check=False)
    kubeconfig = local_cluster.KUBECONFIG
    shown = kubeconfig.relative_to(REPO) if kubeconfig.is_relative_to(REPO) else kubeconfig
    print(
        f"engine-up {stack}: {'done' if code == 0 else f'pulumi up failed (exit {code})'};"
        f" state in {STATE.relative_to(REPO)}, kubeconfig {shown}",
        flush=True,
    )
    return code


def down(stack: str) -> int:
    """The README's teardown, then forget the stack and restore its stack file."""
    env = environ()
    stack_file = REPO / f"Pulumi.{stack}.yaml"
    backup = BACKUPS / stack_file.name
    if _stack_exists(env, stack):
        protected = subprocess.run(
            [str(BIN / "pulumi"), "config", "get", "nemo-rl-gke:protect", "-s", stack],
            cwd=REPO, env=env, capture_output=True, text=True, check=False,
        ).stdout.strip()  # fmt: skip
        if protected != "false":
            pulumi(env, "config", "set", "nemo-rl-gke:protect", "false", "-s", stack)
            pulumi(env, "up", "--yes", "-s", stack)
        pulumi(env, "destroy", "--yes", "-s", stack)
        pulumi(env, "stack", "rm", "--yes", stack)
    else:
        print(f"engine-down {stack}: no such stack in {STATE.relative_to(REPO)}", flush=True)
    if backup.exists():
        shutil.move(backup, stack_file)
        print(f"engine-down {stack}: restored {stack_file.name}", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(prog="python -m testbed.engine_stack", description=__doc__)
    parser.add_argument("action", choices=["up", "down"])
    parser.add_argument("stack")
    args = parser.parse_args(argv)
    os.chdir(REPO)
    return up(args.stack) if args.action == "up" else down(args.stack)


if __name__ == "__main__":
    sys.exit(main())
