"""`pulumi preview` under the real engine: every stack plans, unsafe plans are blocked.

Real: the Pulumi CLI, the pulumi-kubernetes provider, the Python SDK, the policy pack as the
language host starts it. Stand-ins: the language host's gRPC front end and the GCP provider
(see docs/testbed.md). Each test starts from a new stack on a fresh file backend,
so every computed value is unknown, as in a user's first preview.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from preflight.cli import preflight
from stack_config import InvalidStackConfig
from testbed.gcp_standin.invokes import DEFAULT_FIXTURES
from tests.engine.realcli import Events, Workspace, processes_in
from tests.harness import REPO, STACKS, stack_data
from tests.unsafe_variants import VARIANTS, Variant


def preflight_of(workspace: Workspace, stack: str) -> set[tuple[str, str, str | None]]:
    """Preflight's policy results for the workspace's program and stack file, its reads of the
    reservation answered from the description the GCP stand-in answers from."""
    result = preflight(
        workspace.root / f"Pulumi.{stack}.yaml",
        project_dir=workspace.root,
        policy_config=workspace.root / "policies" / "config" / f"{stack}.json",
        reservations=DEFAULT_FIXTURES,
    )
    return {
        (v.policy, v.enforcement_level, v.urn.split("::", 3)[3] if v.urn else None)
        for v in result.violations
    }


def real_results(events: Events) -> set[tuple[str, str, str | None]]:
    return {(p.policy, p.level, p.resource) for p in events.policies}


@pytest.mark.parametrize("stack", STACKS)
def test_committed_stacks_preview_with_the_policy_pack(workspace: Workspace, stack: str) -> None:
    lock = (workspace.root / "uv.lock").read_bytes()
    workspace.init(stack)
    events = workspace.preview(stack)
    assert events.returncode == 0, events.text()
    # The uv toolchain ran `uv sync --inexact` before the program and the pack; frozen, it
    # left the lock alone.
    assert (workspace.root / "uv.lock").read_bytes() == lock
    assert events.policies == [], [f"{p.policy}: {p.message}" for p in events.policies]
    # The plan is the one preflight reports: same types and names, nothing more.
    result = preflight(REPO / f"Pulumi.{stack}.yaml", project_dir=REPO)
    planned = sorted(
        (s.type, s.name) for s in events.creates() if not s.type.startswith("pulumi:providers:")
    )
    recorded = sorted(
        (r.type, r.name) for r in result.run.records if not r.type.startswith("pulumi:providers:")
    )
    assert planned == recorded
    providers = {
        (s.type, s.name) for s in events.creates() if s.type.startswith("pulumi:providers:")
    }
    # The explicit Kubernetes provider, the engine's default gcp provider at the SDK's version,
    # and the built-in one behind `readStackOutputs` (the program reads its last outputs).
    assert providers == {
        ("pulumi:providers:kubernetes", "gke-k8s"),
        ("pulumi:providers:gcp", "default_10_2_0"),
        ("pulumi:providers:pulumi", "default"),
    }


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_unsafe_variants_are_blocked_on_a_fresh_stack(
    workspace: Workspace, variant: Variant
) -> None:
    workspace.write_stack(variant.base, variant.stack_config())
    main = workspace.root / "__main__.py"
    main.write_text(variant.main_py(main.read_text(encoding="utf-8")), encoding="utf-8")
    workspace.init(variant.base)
    events = workspace.preview(variant.base)
    assert events.returncode != 0, "the preview should have failed"
    if variant.reservation_stops_it:
        # The program read the reservation (the stand-in's description: 2 VMs) and stopped
        # before registering anything; preflight given the same description stops the same.
        (line,) = [
            m.strip()
            for m in (str(d.get("message", "")) for d in events.diagnostics)
            if "invalid stack config" in m
        ]
        assert line.startswith("invalid stack config: nemo-rl-gke:gpu.reservation: ")
        assert "holds 2 VMs in the reservation, but the pool can grow to 3" in line
        # The plugins the preview started end quietly (the stand-in stops its server inside
        # its event loop when the engine interrupts it).
        assert "Traceback" not in events.text()
        # Only the default gcp provider, which the reads went through, was planned.
        assert [s.type for s in events.creates()] == ["pulumi:providers:gcp"]
        with pytest.raises(InvalidStackConfig, match="holds 2 VMs"):
            preflight_of(workspace, variant.base)
        return
    assert events.unjudged() == [], [p.message for p in events.unjudged()]
    blocking = {p.policy for p in events.policies if p.level == "mandatory"}
    assert variant.policy in blocking, events.text()
    # Preflight judges the same plan the same way.
    assert preflight_of(workspace, variant.base) == real_results(events)


def test_a_missing_required_key_stops_the_cli_before_the_program(workspace: Workspace) -> None:
    config = dict(stack_data("b200")["config"])
    del config["nemo-rl-gke:gpu"]
    workspace.write_stack("b200", config)
    workspace.init("b200")
    events = workspace.preview("b200")
    assert events.returncode != 0
    assert "missing configuration value 'gpu'" in events.stderr + events.text()
    assert events.creates() == []
    # The CLI stops before the program and leaves its language host behind; the workspace
    # stops it with the CLI's process group.
    assert processes_in(workspace.root) == [], "a process of the preview outlived it"


def test_an_invalid_stack_fails_with_one_line_and_plans_nothing(workspace: Workspace) -> None:
    config = dict(stack_data("b200")["config"])
    config["nemo-rl-gke:zone"] = "europe-west4-a"
    workspace.write_stack("b200", config)
    workspace.init("b200")
    events = workspace.preview("b200")
    assert events.returncode != 0
    (line,) = [
        m.strip()
        for m in (d.get("message", "") for d in events.diagnostics)
        if "invalid stack config" in m
    ]
    assert line.startswith("invalid stack config: nemo-rl-gke:zone: zone europe-west4-a is not in")
    assert "\n" not in line
    assert "Traceback" not in events.text()
    assert events.creates() == []


def test_a_plaintext_token_is_refused(workspace: Workspace) -> None:
    workspace.init("dev")
    # The CLI itself balks at a secret-looking value without --secret ...
    refused = workspace.pulumi(
        "config", "set", "nemo-rl-gke:hfToken", "hf_plaintext_123", "-s", "dev", check=False
    )
    assert refused.returncode != 0
    assert "looks like a secret" in refused.stderr
    # ... but --plaintext (or editing the stack file) puts the token in git; the program stops.
    workspace.pulumi(
        "config", "set", "--plaintext", "nemo-rl-gke:hfToken", "hf_plaintext_123", "-s", "dev"
    )
    assert "hf_plaintext_123" in (workspace.root / "Pulumi.dev.yaml").read_text()
    events = workspace.preview("dev")
    assert events.returncode != 0
    assert any(
        "nemo-rl-gke:hfToken: is set in plain text" in m
        for m in events.errors() + [str(d.get("message", "")) for d in events.diagnostics]
    ), events.text()
    assert "hf_plaintext_123" not in events.text()
    assert events.creates() == []
    # The same token set as a secret is accepted and never shown.
    workspace.pulumi(
        "config", "set", "--secret", "nemo-rl-gke:hfToken", "hf_plaintext_123", "-s", "dev"
    )
    events = workspace.preview("dev")
    assert events.returncode == 0, events.text()
    assert "hf_plaintext_123" not in events.stdout + events.stderr


def test_a_pack_module_that_shadows_the_standard_library_stops_the_preview(
    workspace: Workspace,
) -> None:
    (workspace.root / "policies" / "types.py").write_text('"""Resource types."""\n')
    workspace.init("dev")
    events = workspace.preview("dev")
    assert events.returncode != 0
    assert events.policies == []
    # Preflight refuses the same pack.
    from preflight.mock_run import ProgramError

    with pytest.raises(ProgramError, match="shadows the standard library"):
        preflight(workspace.root / "Pulumi.dev.yaml", project_dir=workspace.root)


def test_up_without_its_preview_creates_what_a_stack_policy_rejects(workspace: Workspace) -> None:
    """Why the workflow's `up` job previews first: `pulumi up --skip-preview` (what
    pulumi/actions' `up` runs) evaluates stack policies only after every step, so resources a
    stack policy rejects are created; `pulumi up` with its preview stops before any change."""
    variant = next(v for v in VARIANTS if v.name == "firewall-on-roce")
    workspace.write_stack(variant.base, variant.stack_config())
    main = workspace.root / "__main__.py"
    main.write_text(variant.main_py(main.read_text(encoding="utf-8")), encoding="utf-8")
    # Nothing listens here: the Kubernetes half fails at once instead of dialing anywhere.
    workspace.extra_env["NEMO_RL_GKE_STANDIN_ENDPOINT"] = "127.0.0.1:9"

    workspace.init(variant.base)
    guarded = workspace.up(variant.base)
    assert guarded.returncode != 0
    assert variant.policy in {p.policy for p in guarded.policies if p.level == "mandatory"}
    assert [r for r in workspace.state_resources(variant.base) if r.get("custom")] == []

    workspace.pulumi("stack", "init", "skipped")
    workspace.write_stack("skipped", variant.stack_config())
    config_dir = workspace.root / "policies" / "config"
    (config_dir / "skipped.json").write_text((config_dir / f"{variant.base}.json").read_text())
    unguarded = workspace.up("skipped", "--skip-preview")
    assert unguarded.returncode != 0
    created = {r["urn"].split("::", 3)[3] for r in workspace.state_resources("skipped")}
    assert "roce-ssh" in created  # the rule the policy forbids now exists


def test_a_pool_pin_below_what_gke_runs_stops_the_real_preview(
    workspace: Workspace, tmp_path: Path
) -> None:
    """The pool-version read through the real engine: the GCP stand-in answers getCluster from
    a description whose GPU pool runs a newer patch than gpu.version pins (GKE moved it). The
    preview stops before anything is planned, naming the key and the running version. About
    20 s."""
    described = json.loads(DEFAULT_FIXTURES.read_text(encoding="utf-8"))
    running = "1.35.9-gke.1100000"
    described["clusters"] = [
        {
            "name": "nemo-rl-b200",
            "location": "us-central1",
            "project": "my-gcp-project-prod",
            "version": running,
            "pools": [
                {"name": "system", "nodes": 1, "zones": ["us-central1-b"], "version": running},
                {"name": "gpu-b200", "nodes": 2, "zones": ["us-central1-b"], "version": running},
            ],
        }
    ]
    description = tmp_path / "reservations.json"
    description.write_text(json.dumps(described), encoding="utf-8")
    workspace.extra_env["NEMO_RL_GKE_STANDIN_RESERVATIONS"] = str(description)
    config = dict(stack_data("b200")["config"])
    config["nemo-rl-gke:gpu"] = {**config["nemo-rl-gke:gpu"], "version": "1.35.8-gke.1036000"}
    workspace.write_stack("b200", config)
    workspace.init("b200")
    events = workspace.preview("b200")
    assert events.returncode != 0
    (line,) = [
        m.strip()
        for m in (d.get("message", "") for d in events.diagnostics)
        if "invalid stack config" in m
    ]
    assert line.startswith(
        f"invalid stack config: nemo-rl-gke:gpu.version: 1.35.8-gke.1036000 is below {running},"
        " which the pool runs now"
    ), line
    # Only the provider the read needed; no resource is planned.
    assert [s.urn for s in events.creates() if "::pulumi:providers:" not in s.urn] == []
