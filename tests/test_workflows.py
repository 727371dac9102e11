"""The CI workflows deploy only what the policy pack has judged, on stacks they can find."""

from __future__ import annotations

from typing import Any

import yaml

from tests.harness import REPO

ACTION = "pulumi/actions@"


def _workflow(name: str) -> dict[str, Any]:
    data = yaml.safe_load((REPO / ".github" / "workflows" / name).read_text())
    assert isinstance(data, dict)
    return data


def _pulumi_steps(job: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in job["steps"] if str(s.get("uses", "")).startswith(ACTION)]


def _runs(job: dict[str, Any]) -> list[str]:
    return [" ".join(str(s.get("run", "")).split()) for s in job["steps"]]


def test_the_merge_applies_the_plan_the_pull_request_reviewed() -> None:
    """The pull request's commented preview saves its plan with the policy pack and keeps it as
    an artifact; the merge's `up` downloads that plan, asks tools.update_plan whether it can be
    applied as it is, and applies it with `--plan` (which refuses anything the plan does not
    name) unless a provider's configuration is unknown at preview, previewing first so the same
    pack judges it before any change (never `--skip-preview`, which runs stack policies after
    the fact). tests/engine/test_workflow_plan.py runs these commands with the real CLI."""
    jobs = _workflow("preview.yml")["jobs"]
    pack = '--policy-pack policies --policy-pack-config "policies/config/$STACK.json"'
    (preview,) = [s for s in _pulumi_steps(jobs["preview"]) if s["with"].get("command")]
    assert preview["with"]["command"] == "preview"
    assert preview["with"]["plan"] == "plan-${{ matrix.stack }}.json"
    assert preview["with"]["policyPacks"] == "policies"
    assert preview["with"]["policyPackConfigs"] == "policies/config/${{ matrix.stack }}.json"
    assert preview["with"]["comment-on-pr"] is True
    # One preview: the comment and the plan come from the same run.
    assert not [r for r in _runs(jobs["preview"]) if "pulumi preview" in r]
    (upload,) = [s for s in jobs["preview"]["steps"] if "upload-artifact" in str(s.get("uses"))]
    assert upload["with"]["name"] == "plan-${{ matrix.stack }}"
    assert upload["with"]["path"] == "plan-${{ matrix.stack }}.json"
    assert upload["with"]["retention-days"] <= 7
    runs = _runs(jobs["up"])
    (fetch,) = [i for i, r in enumerate(runs) if "gh run download" in r]
    assert '--name "plan-$STACK"' in runs[fetch]
    (check,) = [i for i, r in enumerate(runs) if "tools.update_plan" in r]
    assert runs[check] == 'uv run --frozen python -m tools.update_plan "plan-$STACK.json"'
    assert jobs["up"]["steps"][check]["id"] == "plan"
    (apply,) = [i for i, r in enumerate(runs) if "pulumi up " in r]
    assert fetch < check < apply
    assert jobs["up"]["steps"][apply]["env"]["WITH_PLAN"] == "${{ steps.plan.outputs.with-plan }}"
    assert 'plan=(--plan "plan-$STACK.json")' in runs[apply]
    assert pack in runs[apply]
    assert "--skip-preview" not in runs[apply]
    assert not [s for s in _pulumi_steps(jobs["up"]) if s["with"].get("command")]
    assert jobs["up"]["permissions"]["actions"] == "read"


def test_the_merge_s_fresh_checkout_opens_the_pull_request_s_plan() -> None:
    """Each job checks out anew: without the fallback to the stack's secrets manager in both,
    the merge's CLI makes a new salt and cannot decrypt the plan (measured with CLI 3.276.0:
    `decrypting secret value: cipher: message authentication failed`)."""
    for job in _workflow("preview.yml")["jobs"].values():
        assert job["env"]["PULUMI_FALLBACK_TO_STATE_SECRETS_MANAGER"] == "true"


def test_every_pulumi_step_creates_or_selects_its_stack() -> None:
    """Without `upsert: true` pulumi/actions only selects the stack, and fails when it is new."""
    for job in _workflow("preview.yml")["jobs"].values():
        for step in _pulumi_steps(job):
            if step["with"].get("command"):
                assert step["with"].get("upsert") is True, step["name"]


def test_jobs_that_run_the_program_keep_the_lock() -> None:
    """The uv toolchain syncs before the program and the pack; UV_FROZEN keeps uv.lock as is."""
    for name, job in _workflow("preview.yml")["jobs"].items():
        assert job["env"]["UV_FROZEN"] == "1", name


def test_every_pulumi_step_runs_the_cli_the_engine_tests_run() -> None:
    """pulumi/actions installs the newest CLI unless told; the workflows pin the versions
    table's, which is the release the engine test bed builds and tests with."""
    from planning.versions import VERSIONS
    from testbed.versions import TESTBED_VERSIONS

    assert TESTBED_VERSIONS.engine_pulumi_cli.value == f"v{VERSIONS.pulumi_cli.value}"
    steps = [
        step for job in _workflow("preview.yml")["jobs"].values() for step in _pulumi_steps(job)
    ]
    assert len(steps) == 2
    for step in steps:
        assert str(step["with"].get("pulumi-version")) == VERSIONS.pulumi_cli.value, step["name"]
    # pulumi/esc-action installs a CLI too (the newest, unless told).
    for job in _workflow("preview.yml")["jobs"].values():
        esc = _credential_steps(job)["esc"]
        assert str(esc["with"]["version"]) == VERSIONS.pulumi_cli.value


def test_the_workflow_and_readme_say_which_iam_the_runner_needs_for_the_dns_endpoint() -> None:
    """The runner reaches the cluster on its DNS endpoint (the stacks' default), which IAM
    guards: without container.clusters.connect `up` fails at the first Kubernetes object."""
    from stack_config import NetworkConfig

    assert NetworkConfig().control_plane_endpoint == "dns"
    workflow = (REPO / ".github" / "workflows" / "preview.yml").read_text()
    readme = (REPO / "README.md").read_text()
    assert "container.clusters.connect" in workflow
    ci = readme.split("\n## CI\n", 1)[1].split("\n## ", 1)[0]
    assert "container.clusters.connect" in ci


def _credential_steps(job: dict[str, Any]) -> dict[str, dict[str, Any]]:
    uses = {"auth-actions": "pulumi/auth-actions@", "esc": "pulumi/esc-action@"}
    uses["wif"] = "google-github-actions/auth@"
    found = {}
    for key, prefix in uses.items():
        (found[key],) = [s for s in job["steps"] if str(s.get("uses", "")).startswith(prefix)]
    return found


def test_ci_credentials_come_by_oidc_on_either_path_never_from_a_long_lived_key() -> None:
    """Two paths, chosen by whether the job's ESC environment is named: Pulumi ESC (the run's
    OIDC token traded by pulumi/auth-actions for a short-lived Pulumi Cloud token, then the ESC
    environment's gcp-login for Google) or direct Workload Identity; exactly one runs. No job
    sets PULUMI_ACCESS_TOKEN for all its steps (GitHub lets a job's `env` shadow what an
    action exports, which would hide the OIDC token); the steps that run the CLI take the
    OIDC token first, the secret otherwise. No step is given a key file."""
    jobs = _workflow("preview.yml")["jobs"]
    for name, kind in (("preview", "PREVIEW"), ("up", "DEPLOY")):
        job = jobs[name]
        steps = _credential_steps(job)
        esc = f"vars.PULUMI_ESC_{kind}_ENVIRONMENT"
        assert steps["auth-actions"]["if"] == f"{esc} != ''"
        assert steps["esc"]["if"] == f"{esc} != ''"
        assert steps["wif"]["if"] == f"{esc} == ''"
        assert steps["auth-actions"]["id"] == "pulumi-oidc"
        assert steps["esc"]["with"]["environment"] == "${{ " + esc + " }}"
        assert steps["auth-actions"]["with"]["requested-token-type"].endswith(":organization")
        # What the Google provider and gcloud (the kubeconfig's auth plugin) read.
        exported = set(steps["esc"]["with"]["export-environment-variables"].split())
        assert {"GOOGLE_OAUTH_ACCESS_TOKEN", "CLOUDSDK_AUTH_ACCESS_TOKEN"} <= exported
        order = [job["steps"].index(steps[k]) for k in ("auth-actions", "esc", "wif")]
        assert order == sorted(order)
        assert "PULUMI_ACCESS_TOKEN" not in job["env"], name
        cli = [s for s in _pulumi_steps(job) if s["with"].get("command")]
        cli += [s for s in job["steps"] if "pulumi up " in str(s.get("run", ""))]
        assert cli
        expected = (
            "${{ steps.pulumi-oidc.outputs.pulumi-access-token || secrets.PULUMI_ACCESS_TOKEN }}"
        )
        for step in cli:
            assert step["env"]["PULUMI_ACCESS_TOKEN"] == expected, step["name"]
        assert order[0] < min(job["steps"].index(s) for s in cli)
    text = (REPO / ".github" / "workflows" / "preview.yml").read_text()
    assert "credentials_json" not in text
    assert "GOOGLE_APPLICATION_CREDENTIALS" not in text
