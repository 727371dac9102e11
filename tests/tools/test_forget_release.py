"""tools.forget_release: the release leaves the state; nothing else does, or changes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tools.forget_release import ForgetError, forget

STACK = "urn:pulumi:dev::nemo-rl-gke::"
RELEASE = f"{STACK}nemo:apps:KubeRayOperator$kubernetes:helm.sh/v3:Release::kuberay-release"
CLUSTER = f"{STACK}nemo:apps:RayWorkload$kubernetes:ray.io/v1:RayCluster::ray-cluster"
NAMESPACE = f"{STACK}nemo:apps:KubeRayOperator$kubernetes:core/v1:Namespace::kuberay-namespace"


def export() -> dict[str, Any]:
    """A stack export shaped as the real CLI writes one (version 3)."""
    return {
        "version": 3,
        "deployment": {
            "manifest": {"time": "2026-12-07T00:00:00Z"},
            "resources": [
                {"urn": NAMESPACE, "type": "kubernetes:core/v1:Namespace"},
                {"urn": RELEASE, "type": "kubernetes:helm.sh/v3:Release",
                 "dependencies": [NAMESPACE]},
                {
                    "urn": CLUSTER,
                    "type": "kubernetes:ray.io/v1:RayCluster",
                    "dependencies": [RELEASE, NAMESPACE],
                    "propertyDependencies": {"spec": [RELEASE], "metadata": [NAMESPACE]},
                    "deletedWith": RELEASE,
                    "outputs": {"metadata": {"managedFields": ["kept as it was"]}},
                },
            ],
        },
    }  # fmt: skip


def test_the_release_and_every_edge_to_it_go_and_nothing_else() -> None:
    edited, urn = forget(export(), "kuberay")
    assert urn == RELEASE
    resources = edited["deployment"]["resources"]
    assert [r["urn"] for r in resources] == [NAMESPACE, CLUSTER]
    cluster = resources[1]
    assert cluster["dependencies"] == [NAMESPACE]
    assert cluster["propertyDependencies"] == {"spec": [], "metadata": [NAMESPACE]}
    assert "deletedWith" not in cluster
    assert cluster["outputs"] == export()["deployment"]["resources"][2]["outputs"]
    assert edited["version"] == 3
    assert edited["deployment"]["manifest"] == export()["deployment"]["manifest"]


@pytest.mark.parametrize(
    ("document", "operator", "said"),
    [
        ({"version": 3}, "kuberay", "no deployment"),
        ({"deployment": {"resources": {}}}, "kuberay", "no deployment.resources"),
        (None, "kuberay", "no deployment"),
        ("export", "kueue", "operator 'kueue'"),
        ({"deployment": {"resources": []}}, "kuberay", "holds no Helm release of kuberay"),
    ],
)
def test_anything_else_is_refused_naming_it(document: Any, operator: str, said: str) -> None:
    with pytest.raises(ForgetError, match=said):
        forget(export() if document == "export" else document, operator)


def test_the_command_prints_the_edited_export_and_refuses_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_text(json.dumps(export()), encoding="utf-8")
    run = [sys.executable, "-m", "tools.forget_release"]
    done = subprocess.run([*run, str(path), "kuberay"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert RELEASE not in done.stdout
    assert done.stderr.strip() == f"forget_release: removed {RELEASE} and every dependency on it"
    path.write_text("{not json", encoding="utf-8")
    bad = subprocess.run([*run, str(path), "kuberay"], capture_output=True, text=True)
    assert bad.returncode == 2
    assert len(bad.stderr.strip().splitlines()) == 1
    assert bad.stderr.startswith(f"forget_release: {path}: cannot read a stack export")
