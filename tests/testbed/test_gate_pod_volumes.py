"""The test bed's gate pods project Secret volumes as the kubelet does (testbed.gate_pods).

The smoke gate reads the Ray dashboard's token from a Secret volume; under kwok no kubelet
mounts it, so the test bed writes the files and points the container's paths at them. The
engine tests run it against the Secret the real KubeRay operator generates.
"""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path
from typing import Any

from testbed.gate_pods import GatePods

SPEC: dict[str, Any] = {
    "volumes": [
        {"name": "gates", "configMap": {"name": "verify-grpo-smoke"}},
        {
            "name": "dashboard-token",
            "secret": {"secretName": "nemo-rl", "items": [{"key": "auth_token", "path": "token"}]},
        },
        {"name": "all-keys", "secret": {"secretName": "tokens", "optional": True}},
    ]
}
CONTAINER = {
    "volumeMounts": [
        {"name": "gates", "mountPath": "/gates"},
        {"name": "dashboard-token", "mountPath": "/var/run/ray-dashboard"},
        {"name": "all-keys", "mountPath": "/var/run/tokens"},
    ]
}


def pods(tmp_path: Path, secrets: dict[str, dict[str, str]]) -> GatePods:
    """GatePods over an API server that holds `secrets` (name -> data, plain)."""

    def kubectl(*args: str) -> subprocess.CompletedProcess[str]:
        assert args[:2] == ("get", "secret"), args
        data = secrets.get(args[2])
        if data is None:
            return subprocess.CompletedProcess(args, 1, "", "NotFound")
        encoded = {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}
        return subprocess.CompletedProcess(args, 0, json.dumps({"data": encoded}), "")

    return GatePods(tmp_path, kubectl, say=lambda _: None)


def test_a_secret_volume_holds_the_keys_its_items_name_at_their_paths(tmp_path: Path) -> None:
    secrets = {
        "nemo-rl": {"auth_token": "t0ken", "other": "never projected"},
        "tokens": {"HF_TOKEN": "hf_x", "WANDB_API_KEY": "w"},
    }
    found = pods(tmp_path, secrets)._secret_volumes(SPEC, CONTAINER, "nemo-rl", tmp_path / "p")
    assert found is not None
    token = found["/var/run/ray-dashboard"]
    assert sorted(p.name for p in token.iterdir()) == ["token"]
    assert (token / "token").read_text() == "t0ken"
    every = found["/var/run/tokens"]
    assert sorted(p.name for p in every.iterdir()) == ["HF_TOKEN", "WANDB_API_KEY"]
    assert "/gates" not in found  # a ConfigMap is not a Secret


def test_a_missing_secret_holds_the_pod_back_unless_it_is_optional(tmp_path: Path) -> None:
    gate_pods = pods(tmp_path, {"nemo-rl": {"auth_token": "t0ken"}})
    found = gate_pods._secret_volumes(SPEC, CONTAINER, "nemo-rl", tmp_path / "a")
    assert found is not None
    assert list(found["/var/run/tokens"].iterdir()) == []  # optional: an empty folder
    assert pods(tmp_path, {})._secret_volumes(SPEC, CONTAINER, "nemo-rl", tmp_path / "b") is None
