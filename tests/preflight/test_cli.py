"""The preflight command: exit codes, JSON shape, config errors, secrets never printed."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from preflight.cli import main
from pulumi_offline.config_values import SECRET_PLACEHOLDER
from tests.harness import REPO, variant, write_stack


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_dev_passes_and_writes_json(tmp_path: Path) -> None:
    report = tmp_path / "dev.json"
    code, out, _ = run_cli("--stack", "dev", "--json", str(report))
    assert code == 0
    assert "preflight dev: PASS" in out
    assert "nemo:network:PrimaryNetwork" in out
    data = json.loads(report.read_text())
    assert set(data) == {
        "stack",
        "project",
        "mode",
        "resources",
        "outputs",
        "policies",
        "violations",
        "summary",
        "orgPolicies",
    }
    assert data["stack"] == "dev"
    assert data["project"] == "nemo-rl-gke"
    resource = data["resources"][0]
    assert set(resource) == {
        "urn",
        "type",
        "name",
        "custom",
        "parent",
        "dependencies",
        "propertyDependencies",
        "protect",
        "deleteBeforeReplace",
        "ignoreChanges",
        "provider",
        "inputs",
    }
    assert {p["name"] for p in data["policies"]} >= {"gpu-quota", "firewall-no-world-ingress"}
    assert data["violations"] == []
    subnet = next(r for r in data["resources"] if r["name"] == "primary-sub")
    assert "ipCidrRange" in subnet["inputs"], "inputs are in wire form (camelCase)"
    assert any(d.endswith("::primary-net") for d in subnet["dependencies"])


def test_invalid_stack_exits_2_with_one_line_and_registers_nothing(tmp_path: Path) -> None:
    config = variant(
        "b200", {"nemo-rl-gke:gpu": {"type": "b200", "nodes": 2, "capacity": "reservation"}}
    )
    path = write_stack(tmp_path, "broken", config)
    code, out, err = run_cli("--stack-file", str(path))
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "nemo-rl-gke:gpu.reservation" in lines[0]
    assert "Fix:" in lines[0]
    assert "Traceback" not in err


def test_invalid_stack_registers_no_resource(tmp_path: Path) -> None:
    from preflight.mock_run import run_program
    from pulumi_offline.stackfiles import read_project, read_stack
    from stack_config import InvalidStackConfig

    config = variant("dev", {"nemo-rl-gke:zone": "europe-west4-a"})
    path = write_stack(tmp_path, "dev", config)
    project = read_project(REPO)
    values = read_stack(project, path)
    registered: list[Any] = []
    import preflight.recorder as recorder

    original = recorder.RecordingMonitor.RegisterResource

    def spy(self: recorder.RecordingMonitor, request: Any) -> Any:
        registered.append(request.type)
        return original(self, request)

    recorder.RecordingMonitor.RegisterResource = spy  # type: ignore[method-assign]
    try:
        with pytest.raises(InvalidStackConfig, match="nemo-rl-gke:zone"):
            run_program(REPO / "__main__.py", project.name, values)
    finally:
        recorder.RecordingMonitor.RegisterResource = original  # type: ignore[method-assign]
    assert [t for t in registered if t != "pulumi:pulumi:Stack"] == []


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["--stack", "nope"], "no stack file"),
        (["--stack-file", "settings.yaml"], "Pulumi.<stack>.yaml"),
        (["--bogus"], ""),
    ],
)
def test_usage_errors_exit_2(argv: list[str], fragment: str) -> None:
    code, _, err = run_cli(*argv)
    assert code == 2
    assert fragment in err


def test_bad_policy_config_exits_2(tmp_path: Path) -> None:
    cfg = tmp_path / "p.json"
    cfg.write_text(json.dumps({"gpu-quota": {"quotas": {"NVIDIA_B200_GPUS": -1}}}))
    code, _, err = run_cli("--stack", "dev", "--policy-config", str(cfg))
    assert code == 2
    assert "gpu-quota.quotas.NVIDIA_B200_GPUS" in err
    cfg.write_text(json.dumps({"gpu-quota": "strict"}))
    code, _, err = run_cli("--stack", "dev", "--policy-config", str(cfg))
    assert code == 2
    assert "'strict' is not one of" in err


def test_policy_config_is_read_like_the_cli(tmp_path: Path) -> None:
    # resource/analyzer/config.go: a name that is no policy and a property no schema declares
    # pass silently through the CLI (the schema has no additionalProperties: false); preflight
    # accepts them too, and warns, because they are typos that do nothing.
    cfg = tmp_path / "p.json"
    config = dev_policy_config(**{"no-such-policy": "mandatory"})
    config["gpu-quota"] = {**config["gpu-quota"], "quota": 4}
    cfg.write_text(json.dumps(config))
    code, _, err = run_cli("--stack", "dev", "--policy-config", str(cfg))
    assert code == 0
    assert "'no-such-policy', which is no policy of the pack" in err
    assert "gpu-quota sets quota, which its schema does not declare" in err
    # A version-2 file nests the policies; an empty file is no config at all.
    cfg.write_text(json.dumps({"version": 2, "policies": dev_policy_config()}))
    assert run_cli("--stack", "dev", "--policy-config", str(cfg))[0] == 0
    cfg.write_text(json.dumps({"version": 3, "policies": {}}))
    assert run_cli("--stack", "dev", "--policy-config", str(cfg))[0] == 2


def test_secure_values_never_reach_output(tmp_path: Path) -> None:
    config = variant("dev", {"nemo-rl-gke:hfToken": {"secure": "v1:ciphertext"}})
    path = write_stack(tmp_path, "dev", config)
    report = tmp_path / "out.json"
    code, out, err = run_cli("--stack-file", str(path), "--json", str(report))
    assert code == 0
    for text in (out, err, report.read_text()):
        assert SECRET_PLACEHOLDER not in text


def test_plaintext_token_in_a_stack_file_exits_2_naming_the_key(tmp_path: Path) -> None:
    config = variant("dev", {"nemo-rl-gke:hfToken": "hf_plaintext_token_1234"})
    path = write_stack(tmp_path, "dev", config)
    code, out, err = run_cli("--stack-file", str(path))
    assert code == 2
    assert err.count("\n") == 1, err  # one line
    assert "nemo-rl-gke:hfToken" in err
    assert "pulumi config set --secret" in err
    assert "hf_plaintext_token_1234" not in out + err


def test_module_entry_point_runs_as_a_process() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "preflight", "--stack", "dev", "--quiet"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("preflight dev: PASS")


def dev_policy_config(**changes: Any) -> dict[str, Any]:
    """The committed dev policy config with some policies' settings replaced."""
    config: dict[str, Any] = json.loads((REPO / "policies" / "config" / "dev.json").read_text())
    config.update(changes)
    return config


def test_mandatory_violation_exits_1(tmp_path: Path) -> None:
    cfg = tmp_path / "tight.json"
    tight = {"quotas": {"PREEMPTIBLE_NVIDIA_L4_GPUS": 1}}
    cfg.write_text(json.dumps(dev_policy_config(**{"gpu-quota": tight})))
    report = tmp_path / "r.json"
    code, out, _ = run_cli("--stack", "dev", "--policy-config", str(cfg), "--json", str(report))
    assert code == 1
    assert "preflight dev: FAIL" in out
    violations = json.loads(report.read_text())["violations"]
    assert [v["policy"] for v in violations] == ["gpu-quota"]
    assert violations[0]["enforcementLevel"] == "mandatory"
    assert "can scale to 2 PREEMPTIBLE_NVIDIA_L4_GPUS" in violations[0]["message"]
    assert violations[0]["urn"].endswith("::gpu-pool")


def test_advisory_only_still_exits_0(tmp_path: Path) -> None:
    cfg = tmp_path / "advisory.json"
    advisory = {"enforcementLevel": "advisory", "quotas": {"PREEMPTIBLE_NVIDIA_L4_GPUS": 1}}
    cfg.write_text(json.dumps(dev_policy_config(**{"gpu-quota": advisory})))
    code, out, _ = run_cli("--stack", "dev", "--policy-config", str(cfg))
    assert code == 0
    assert "[advisory] gpu-quota" in out


def test_a_1000_node_b200_plans_and_only_the_quota_policies_object(tmp_path: Path) -> None:
    gpu = {**variant("b200", {})["nemo-rl-gke:gpu"], "nodes": 1000}
    path = write_stack(tmp_path, "b200", variant("b200", {"nemo-rl-gke:gpu": gpu}))
    code, out, _ = run_cli("--stack-file", str(path), "--quiet")
    assert code == 1  # planned: the address plan holds 1000 nodes; the quotas do not
    assert "preflight b200: FAIL" in out


def test_a_1000_node_b200_on_tutorial_sized_subnets_exits_2_naming_the_range(
    tmp_path: Path,
) -> None:
    gpu = {**variant("b200", {})["nemo-rl-gke:gpu"], "nodes": 1000}
    network = {**variant("b200", {})["nemo-rl-gke:network"], "gvnicCidr": "192.168.0.0/24"}
    config = variant("b200", {"nemo-rl-gke:gpu": gpu, "nemo-rl-gke:network": network})
    code, _, err = run_cli("--stack-file", str(write_stack(tmp_path, "b200", config)))
    assert code == 2
    assert "nemo-rl-gke:network.gvnicCidr: 192.168.0.0/24 holds 252 GPU nodes" in err
    assert "use a /22 or larger" in err


@pytest.mark.parametrize(
    "environment",
    ["environment:\n  - team/gke-prod\n", "environment:\n  imports:\n    - team/gke-prod\n"],
)
def test_a_file_that_imports_esc_environments_is_never_passed_silently(
    tmp_path: Path, environment: str
) -> None:
    from tests.harness import REPO

    committed = (REPO / "Pulumi.dev.yaml").read_text()
    (tmp_path / "Pulumi.dev.yaml").write_text(environment + committed)
    code, _, err = run_cli("--stack-file", str(tmp_path / "Pulumi.dev.yaml"), "--quiet")
    assert code == 0, err
    assert "imports Pulumi ESC environment(s) team/gke-prod" in err
    assert "judged the file's own values only" in err
    # A required key only the environment might set: the refusal says so, in its one line.
    without_zone = "".join(
        line for line in committed.splitlines(keepends=True) if "nemo-rl-gke:zone" not in line
    )
    (tmp_path / "Pulumi.dev.yaml").write_text(environment + without_zone)
    code, _, err = run_cli("--stack-file", str(tmp_path / "Pulumi.dev.yaml"), "--quiet")
    assert code == 2
    (refusal,) = [line for line in err.splitlines() if "missing configuration value" in line]
    assert "if one sets it, `pulumi preview` will find it" in refusal
    # Without an environment no note is printed.
    (tmp_path / "Pulumi.dev.yaml").write_text(committed)
    assert "ESC" not in run_cli("--stack-file", str(tmp_path / "Pulumi.dev.yaml"), "--quiet")[2]


@pytest.mark.parametrize(
    ("old", "new", "named", "meant", "character"),
    [
        # A required top-level key: the CLI would stop on the key it left unset.
        ("nemo-rl-gke:zone", "nemo-rl-gke:z\u043ene", "nemo-rl-gke:z\\u043ene", "zone", "U+043E"),
        # A required field of a structured key.
        ("    type: l4", "    typ\u0435: l4", "nemo-rl-gke:gpu.typ\\u0435", "type", "U+0435"),
        # A zero-width space hidden in an optional key.
        (
            "    capacity: spot",
            "    capa\u200bcity: spot",
            "gpu.capa\\u200bcity",
            "capacity",
            "U+200B",
        ),
    ],
)
def test_a_look_alike_key_is_named_as_written_first(
    tmp_path: Path, old: str, new: str, named: str, meant: str, character: str
) -> None:
    from tests.harness import REPO

    text = (REPO / "Pulumi.dev.yaml").read_text()
    assert old in text
    (tmp_path / "Pulumi.dev.yaml").write_text(text.replace(old, new, 1))
    code, _, err = run_cli("--stack-file", str(tmp_path / "Pulumi.dev.yaml"), "--quiet")
    assert code == 2
    first = err.splitlines()[0]
    assert named in first, first
    assert f"is not {meant!r}" in first or f"is not nemo-rl-gke:{meant}" in first, first
    assert character in first, first
    assert f"retype the key as {meant}" in first, first
