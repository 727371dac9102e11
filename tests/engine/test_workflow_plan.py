"""The deploy workflow's plan path with the real CLI, job for job (.github/workflows/preview.yml).

GitHub checks out anew for every job, so here each pull request's preview and each merge's up
run in a fresh copy of the committed files, against one state backend (a file:// folder
standing in for gs://) with the workflow's own secrets set-up (a passphrase, no committed
salt, the workflow's environment), the policy pack and its config, and the local control
plane. The preview is the command pulumi/actions runs for the step's inputs; the merge runs the
up job's own `run:` scripts, read from the workflow. Three cases on b200: the first deploy; an
update with a create, an in-place update and a replacement; a plan made stale by another
merge, which stops before any change. On the workflow before it, the first two fail (the merge
cannot decrypt the plan; the first deploy stops half-way with "violates plan").

About 4 minutes on 2 cores (a first deploy and three updates of b200, five previews, the
local control plane started for the module).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from testbed import local_cluster
from testbed.engine import BIN, engine_environ
from testbed.ray_pods import POD_NETWORK_ENV
from tests.engine.realcli import copy_project, run_in_own_group
from tests.harness import REPO

STACK = "b200"
PASSPHRASE = "ci-passphrase"  # noqa: S105 - the test's stand-in for the repository secret
WORKFLOW = REPO / ".github" / "workflows" / "preview.yml"
PLAN = f"plan-{STACK}.json"


def workflow_jobs() -> dict[str, Any]:
    jobs: dict[str, Any] = yaml.safe_load(WORKFLOW.read_text())["jobs"]
    return jobs


def literal_env(env: dict[str, Any]) -> dict[str, str]:
    """A job's or step's environment without what GitHub fills in (`${{ ... }}`)."""
    return {k: str(v) for k, v in env.items() if "${{" not in str(v)}


class Repo:
    """The committed files (what main holds), the state backend, the artifacts."""

    def __init__(self, root: Path, cluster: Path) -> None:
        self.root = root
        self.cluster = cluster
        self.committed = copy_project(root / "main", tools=True)
        self.backend = root / "state"
        self.backend.mkdir()
        self.artifacts = root / "artifacts"
        self.artifacts.mkdir()
        self.checkouts = 0
        stack_file = self.committed / f"Pulumi.{STACK}.yaml"
        data = yaml.safe_load(stack_file.read_text())
        # Committed as a user of the test bed would: the local charts (no Helm registry here).
        config = data["config"]
        config.setdefault("nemo-rl-gke:ray", {})["chartPath"] = str(local_cluster.kuberay_chart())
        if local_cluster.stack_config(STACK).queue_enabled:
            config.setdefault("nemo-rl-gke:kueue", {})["chartPath"] = str(
                local_cluster.kueue_chart()
            )
        stack_file.write_text(yaml.safe_dump(data, sort_keys=False))

    def checkout(self) -> Path:
        """A fresh copy of the committed files (a job's `actions/checkout`)."""
        self.checkouts += 1
        target = self.root / f"checkout-{self.checkouts}"
        shutil.copytree(self.committed, target, symlinks=True)
        return target

    def env(self, job: str) -> dict[str, str]:
        """The engine, the local cluster and the job's own environment from the workflow."""
        env = local_cluster.local_environ(engine_environ(), root=self.cluster)
        env.pop("PULUMI_ACCESS_TOKEN", None)
        env.update(literal_env(workflow_jobs()[job].get("env", {})))
        env["PULUMI_CONFIG_PASSPHRASE"] = PASSPHRASE
        env["PULUMI_BACKEND_URL"] = self.backend.as_uri()
        env["NEMO_RL_GKE_STANDIN_CLOUD"] = str(self.root / "cloud")
        return env

    def pull_request(
        self, name: str, edits: dict[str, str], secrets: dict[str, str] | None = None
    ) -> tuple[Path, str]:
        """A pull request from main as it is now: the change made with `pulumi config set` in
        the preview job's fresh checkout, then pulumi/actions' preview with the step's inputs
        (`upsert`: select or create the stack; `plan`: --save-plan). (Its plan, kept as the
        run's artifact; its stack file.)"""
        work = self.checkout()
        env = self.env("preview")
        (step,) = [s for s in workflow_jobs()["preview"]["steps"] if is_preview(s)]
        given = step["with"]
        assert given["upsert"] is True
        must(cli(work, env, "stack", "select", "--create", STACK))
        for key, value in edits.items():
            must(cli(work, env, "config", "set", "--path", key, value, "-s", STACK))
        for key, value in (secrets or {}).items():
            must(cli(work, env, "config", "set", "--secret", key, value, "-s", STACK))
        changed = (work / f"Pulumi.{STACK}.yaml").read_text()
        plan = given["plan"].replace("${{ matrix.stack }}", STACK)
        configs = given["policyPackConfigs"].replace("${{ matrix.stack }}", STACK)
        args = ["preview", "--stack", STACK, "--suppress-outputs", "--save-plan", plan]
        args += ["--policy-pack", given["policyPacks"], "--policy-pack-config", configs]
        must(cli(work, env, *args))
        artifact = self.artifacts / name
        artifact.mkdir()
        shutil.copy2(work / plan, artifact / PLAN)
        return artifact / PLAN, changed

    def merge(self, edits: dict[str, str]) -> None:
        """A pull request's change merged into a main that moved (applied again on main as it
        is now, as a merge of two branches that touched different keys leaves both)."""
        work = self.checkout()
        env = self.env("preview")
        for key, value in edits.items():
            must(cli(work, env, "config", "set", "--path", key, value, "-s", STACK))
        shutil.copy2(work / f"Pulumi.{STACK}.yaml", self.committed / f"Pulumi.{STACK}.yaml")

    def merge_file(self, stack_file: str) -> None:
        """A pull request merged into a main that did not move: its stack file."""
        (self.committed / f"Pulumi.{STACK}.yaml").write_text(stack_file)

    def merge_up(self, plan: Path) -> tuple[subprocess.CompletedProcess[str], str]:
        """The up job in a fresh checkout, from the downloaded artifact on: its own `run:`
        scripts (the plan check, then `pulumi up`), as GitHub runs them. (What it printed,
        the job summary.)"""
        work = self.checkout()
        shutil.copy2(plan, work / PLAN)
        output, summary = work.parent / f"{work.name}.output", work.parent / f"{work.name}.md"
        output.touch()
        env = {
            **self.env("up"),
            "GITHUB_OUTPUT": str(output),
            "GITHUB_STEP_SUMMARY": str(summary),
            "STACK": STACK,
        }
        steps = workflow_jobs()["up"]["steps"]
        (check,) = [s for s in steps if s.get("id") == "plan"]
        must(github_run(work, {**env, **literal_env(check.get("env", {}))}, check["run"]))
        outputs = dict(line.split("=", 1) for line in output.read_text().splitlines())
        (up,) = [s for s in steps if "pulumi up " in str(s.get("run", ""))]
        step_env = {**literal_env(up["env"]), "WITH_PLAN": outputs["with-plan"]}
        done = github_run(work, {**env, **step_env}, up["run"])
        return done, summary.read_text() if summary.exists() else ""


def is_preview(step: dict[str, Any]) -> bool:
    return str(step.get("uses", "")).startswith("pulumi/actions@") and bool(
        step.get("with", {}).get("command")
    )


def cli(work: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """The real CLI in a checkout."""
    return run_in_own_group(
        [str(BIN / "pulumi"), *args, "--non-interactive"], cwd=work, env=env, timeout=1500
    )


def github_run(work: Path, env: dict[str, str], script: str) -> subprocess.CompletedProcess[str]:
    """A `run:` script as GitHub's runner runs it on Linux (`bash -e {0}`, pipefail)."""
    return run_in_own_group(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
        cwd=work,
        env=env,
        timeout=1500,
    )


def must(proc: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert proc.returncode == 0, f"{proc.args}\n{proc.stdout[-5000:]}\n{proc.stderr[-3000:]}"
    return proc


def changes(stdout: str) -> dict[str, int]:
    """The update's summary (`Resources:`): created, updated, replaced, ... counts."""
    found = re.findall(r"^\s+[-+~]*\s*(\d+) (created|updated|replaced|deleted)", stdout, re.M)
    return {kind: int(count) for count, kind in found}


def state(repo: Repo) -> list[dict[str, Any]]:
    work = repo.checkout()
    exported = must(cli(work, repo.env("up"), "stack", "export", "-s", STACK)).stdout
    resources: list[dict[str, Any]] = json.loads(exported)["deployment"]["resources"]
    return resources


def system_pool(resources: list[dict[str, Any]]) -> dict[str, Any]:
    (pool,) = [r for r in resources if r["urn"].endswith("::system-pool")]
    found: dict[str, Any] = pool["inputs"]["autoscaling"]
    return found


@pytest.fixture(scope="module")
def repo(engine: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Repo]:
    """A local control plane shaped like b200 of the module's own (its folder and pod network
    apart from the checkout's, so that other modules' clusters may run beside it); stopped
    after, by pid."""
    root = tmp_path_factory.mktemp("workflow")
    made = copy_project(root / "cluster-make", tools=True)
    cluster = root / "cluster"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PULUMI_")}
    env[local_cluster.CLUSTER_ENV] = str(cluster)
    env[POD_NETWORK_ENV] = "127.102"
    started = subprocess.run(
        ["make", "local-cluster", f"STACK={STACK}"], cwd=made, env=env, capture_output=True,
        text=True, check=False, timeout=1500,
    )  # fmt: skip
    try:
        assert started.returncode == 0, started.stdout[-4000:] + started.stderr[-2000:]
        yield Repo(root, cluster)
    finally:
        subprocess.run(
            ["make", "local-cluster-down"], cwd=made, env=env, capture_output=True, check=False,
            timeout=600,
        )  # fmt: skip


def test_the_merge_applies_what_the_pull_request_reviewed_first_deploy_included(
    repo: Repo,
) -> None:
    # (a) The first deploy: the Kubernetes provider's kubeconfig is unknown at preview, so the
    # merge applies without --plan, says so in its summary, and completes.
    first, stack_file = repo.pull_request("first", {})
    repo.merge_file(stack_file)
    done, summary = repo.merge_up(first)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    assert summary.startswith("without-plan: the configuration of provider gke-k8s")
    assert changes(done.stdout)["created"] > 100
    # Pulumi waits for the GPU pool as long as its nodes take one at a time (60 min at least).
    (pool,) = [r for r in state(repo) if r["urn"].endswith("::gpu-pool")]
    assert pool["customTimeouts"] == {"create": 3600, "update": 3600, "delete": 3600}, pool.get(
        "customTimeouts"
    )

    # (b) An update with a create (the token Secret), in-place updates (the system pool's
    # minimum, Lustre's capacity) and a replacement (the storage gate's Job, which runs again
    # on the larger volume: tests/day2.py): the plan is complete, applied with --plan, in a
    # checkout that never saw the preview's salt, its secret config included.
    edits = {
        "nemo-rl-gke:cluster.systemPool.min": "2",
        "nemo-rl-gke:lustre.capacityGib": "36000",
    }
    update, stack_file = repo.pull_request(
        "update", edits, secrets={"nemo-rl-gke:hfToken": "hf_reviewed_token"}
    )
    repo.merge_file(stack_file)
    done, summary = repo.merge_up(update)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    assert summary.startswith("with-plan: ")
    counts = changes(done.stdout)
    assert counts.get("created", 0) >= 1, counts
    assert counts.get("updated", 0) >= 1, counts
    assert counts.get("replaced", 0) >= 1, counts
    assert system_pool(state(repo))["totalMinNodeCount"] == 2

    # (c) A stale plan: two pull requests reviewed on the same main; the second merges first.
    # The first one's up stops in its own preview, before any change.
    stale, _ = repo.pull_request("stale", {"nemo-rl-gke:cluster.systemPool.min": "3"})
    other, stack_file = repo.pull_request("other", {"nemo-rl-gke:cluster.systemPool.max": "5"})
    repo.merge_file(stack_file)
    must(repo.merge_up(other)[0])
    repo.merge({"nemo-rl-gke:cluster.systemPool.min": "3"})
    before = state(repo)
    done, summary = repo.merge_up(stale)
    assert done.returncode != 0
    assert "violates plan" in done.stdout + done.stderr
    assert summary.startswith("with-plan: ")
    after = state(repo)
    assert system_pool(after) == system_pool(before)
    assert system_pool(after)["totalMinNodeCount"] == 2
