"""Stack files under the real Pulumi CLI: preflight reads them as the CLI reads them, refuses
what the CLI refuses, and an invalid stack stops the real `pulumi preview` with the loader's one
line, never a traceback, never a secret.

`pulumi config --json` prints every value exactly as the engine hands it to the program
(sdk/go/common/resource/config: the decrypted string, objects as Go's JSON), so the first test
compares it, file by file, with `pulumi_offline.stackfiles.read_stack`.
"""

from __future__ import annotations

import json

import pytest

from pulumi_offline.stackfiles import StackFileError, read_project, read_stack
from tests.engine.realcli import Workspace
from tests.harness import stack_data

HEAD = "config:\n  nemo-rl-gke:zone: us-central1-b\n  nemo-rl-gke:gpu: {type: l4, nodes: 1}\n"
ACCEPTED = {
    "yaml-1.1-words": "  nemo-rl-gke:labels: {a: yes, b: on, c: No, d: TRUE}\n"
    "  nemo-rl-gke:name: on\n",
    "numbers": "  nemo-rl-gke:verify: {n: 0x2, a: 010, b: 09, c: 1_000, d: 1.0, e: 1e21,"
    " f: 1.5e-7, g: -0, h: 18446744073709551615, i: .5, j: -9223372036854775809}\n",
    "top-level-scalars": "  nemo-rl-gke:name: 010\n  gcp:project: 1.50\n  gcp:region: ~\n"
    "  gcp:zone: 18446744073709551615\n",
    "timestamps": "  nemo-rl-gke:cluster: {maintenance: {windowStart: 2026-01-03T04:00:00Z,"
    " windowEnd: 2026-1-3 12:00:00, exclusionStart: 2026-01-01}}\n",
    "bare-and-old-keys": "  protect: false\n  nemo-rl-gke:config:labels: {team: rl}\n",
    "merge-keys": "  nemo-rl-gke:bucket: &b {enabled: true, softDeleteDays: 3}\n"
    "  nemo-rl-gke:lustre:\n    <<: *b\n    enabled: false\n",
    "not-a-secret": "  nemo-rl-gke:labels: {team: {secure: 5}}\n",
    "tags-and-strings": "  nemo-rl-gke:name: !!str 5\n  nemo-rl-gke:labels:\n    a: !custom x\n"
    "    b: '1'\n    c: \"x\\ty\"\n    d: |\n      two\n      lines\n",
}
REFUSED = {
    # name: (stack file bytes, what the CLI says, what preflight says)
    "duplicate-key": (
        HEAD.encode() + b"  nemo-rl-gke:zone: us-central1-c\n",
        "already defined at line",
        "already defined at line",
    ),
    "alias-bomb": (
        HEAD.encode()
        + b"  nemo-rl-gke:labels:\n"
        + b"".join(
            f"    a{i}: &a{i} [".encode()
            + (", ".join([f"*a{i - 1}"] * 9).encode() if i else b"x, x, x, x, x, x, x, x, x")
            + b"]\n"
            for i in range(9)
        ),
        "excessive aliasing",
        "excessive aliasing",
    ),
    "not-utf8": (HEAD.encode() + b"  nemo-rl-gke:name: caf\xff\n", "UTF-8", "UTF-8"),
    "nan": (
        HEAD.encode() + b"  nemo-rl-gke:verify: {storage: {minFraction: .nan}}\n",
        "unsupported value: NaN",
        "unsupported value: NaN",
    ),
    "bad-key": (HEAD.encode() + b"  a:b:c:d: 1\n", "could not parse", "could not parse"),
}


def cli_values(workspace: Workspace, stack: str) -> dict[str, str]:
    proc = workspace.pulumi("config", "--json", "-s", stack)
    return {key: entry["value"] for key, entry in json.loads(proc.stdout).items()}


def test_preflight_reads_stack_files_as_the_real_cli_does(workspace: Workspace) -> None:
    workspace.init("x")
    project = read_project(workspace.root)
    path = workspace.root / "Pulumi.x.yaml"
    salt = [line for line in path.read_text().splitlines() if line.startswith("encryption")]
    for name, body in ACCEPTED.items():
        path.write_text("\n".join(salt) + "\n" + HEAD + body, encoding="utf-8")
        ours = read_stack(project, path).values
        theirs = cli_values(workspace, "x")
        for key, value in theirs.items():
            if key in ours and not key.startswith("pulumi:"):
                assert ours[key] == value, (name, key, ours[key], value)
        assert {k for k in theirs if not k.startswith("pulumi:")} <= set(ours), name
    for name, (data, cli_says, we_say) in REFUSED.items():
        path.write_bytes("\n".join(salt).encode() + b"\n" + data)
        proc = workspace.pulumi("config", "--json", "-s", "x", check=False)
        assert proc.returncode != 0, (name, proc.stdout)
        assert cli_says in proc.stderr, (name, proc.stderr)
        with pytest.raises(StackFileError, match=we_say):
            read_stack(project, path)


def message_lines(events: object) -> list[str]:
    diagnostics = getattr(events, "diagnostics", [])
    return [
        str(d.get("message", "")).strip()
        for d in diagnostics
        if "invalid stack config" in str(d.get("message", ""))
    ]


def test_secrets_and_credentials_in_the_wrong_place_stop_the_real_preview(
    workspace: Workspace,
) -> None:
    workspace.init("dev")
    # A secret where the program would use it in plain text (a label), set the CLI's way.
    workspace.pulumi(
        "config", "set", "--secret", "--path", "nemo-rl-gke:labels.team", "hush-hush-4711",
        "-s", "dev",
    )  # fmt: skip
    events = workspace.preview("dev")
    assert events.returncode != 0
    (line,) = message_lines(events)
    assert line.startswith("invalid stack config: nemo-rl-gke:labels: holds a secret")
    assert "\n" not in line
    everything = events.stdout + events.stderr + json.dumps(events.diagnostics)
    assert "hush-hush-4711" not in everything
    assert "Traceback" not in everything
    assert events.creates() == []
    workspace.pulumi("config", "rm", "nemo-rl-gke:labels", "-s", "dev")
    # The provider's credential in plain text, and a key in a look-alike namespace.
    workspace.pulumi(
        "config", "set", "--plaintext", "gcp:credentials", "plain-key-0815", "-s", "dev"
    )
    events = workspace.preview("dev")
    (line,) = message_lines(events)
    assert line.startswith("invalid stack config: gcp:credentials: is set in plain text")
    assert "plain-key-0815" not in events.stdout + events.stderr + json.dumps(events.diagnostics)
    workspace.pulumi("config", "rm", "gcp:credentials", "-s", "dev")
    workspace.pulumi("config", "set", "nemo-rl-gk\u0435:protect", "true", "-s", "dev")
    events = workspace.preview("dev")
    (line,) = message_lines(events)
    assert line.startswith("invalid stack config: nemo-rl-gk\\u0435:protect: namespace")
    assert events.creates() == []


def test_a_parked_b200_pool_plans_under_the_real_engine_without_gates(
    workspace: Workspace,
) -> None:
    config = dict(stack_data("b200")["config"])
    config["nemo-rl-gke:gpu"] = {**config["nemo-rl-gke:gpu"], "nodes": 0}
    workspace.write_stack("b200", config)
    workspace.init("b200")
    events = workspace.preview("b200")
    assert events.returncode == 0, events.stdout[-3000:] + events.stderr[-3000:]
    created = {(s.type, s.name) for s in events.creates()}
    assert ("gcp:container/nodePool:NodePool", "gpu-pool") in created
    assert not [name for kind, name in created if name.startswith("verify")], created
