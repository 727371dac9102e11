"""Who reaches the Ray dashboard, as the program emits it (mock runtime): KubeRay's token mode
on the RayCluster, a NetworkPolicy that admits port 8265 only from the operator and the smoke
gate, and the smoke gate's token from KubeRay's Secret.

The token's enforcement by real Ray is in tests/program/test_ray_driver_under_ray.py (one real
head with the environment KubeRay gives its pods); KubeRay's Secret, the gate that reads it and
a refused request without it are in tests/engine/test_local_cluster.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from planning.ray import OPERATOR_POD_LABELS, RAY_POD_SELECTOR
from planning.verify import RAY_GATE_LABEL
from preflight.cli import Result
from testbed.shared import shared_dir
from tests.harness import by_name, run_stack, variant
from tests.program.test_ray_schemas import plain
from tests.program.test_verify_smoke import b200_smoke as b200_smoke


def ingress(result: Result) -> dict[str, Any]:
    policy: dict[str, Any] = plain(by_name(result)["ray-ingress"].inputs)
    return policy


def test_the_raycluster_asks_kuberay_for_token_auth(b200: Result) -> None:
    spec = by_name(b200)["ray-cluster"].inputs["spec"]
    assert spec["authOptions"] == {"mode": "token"}
    # KubeRay refuses token mode below Ray 2.52.0 (rayVersion must say so).
    major, minor, *_ = (int(part) for part in spec["rayVersion"].split("."))
    assert (major, minor) >= (2, 52)


def test_port_8265_admits_only_the_operator_and_the_ray_job_gates(b200: Result) -> None:
    policy = ingress(b200)
    spec = policy["spec"]
    # Over Ray's pods only: the gates' own pods in the namespace keep talking among themselves.
    assert spec["podSelector"] == RAY_POD_SELECTOR
    among, dashboard = spec["ingress"]
    assert among == {"from": [{"podSelector": RAY_POD_SELECTOR}]}
    assert dashboard["ports"] == [{"port": 8265, "protocol": "TCP"}]
    operator, gate = dashboard["from"]
    assert operator == {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kuberay-system"}},
        "podSelector": {"matchLabels": {"app.kubernetes.io/name": "kuberay-operator"}},
    }
    # The pods of the smoke and the job NCCL gate (test_job_nccl_gate.py: both carry it).
    assert gate == {"podSelector": {"matchLabels": {RAY_GATE_LABEL: "true"}}}
    operator_ns = by_name(b200)["kuberay-namespace"].inputs["metadata"]["name"]
    assert operator_ns == "kuberay-system"


def test_the_operator_label_is_the_one_the_kuberay_chart_puts_on_its_pod() -> None:
    chart = shared_dir() / "charts" / "kuberay-operator-1.7.0"
    if not chart.exists():
        pytest.skip(f"the KubeRay chart is not at {chart} (set NEMO_RL_GKE_SHARED)")
    values = yaml.safe_load((chart / "values.yaml").read_text(encoding="utf-8"))
    deployment = (chart / "templates" / "deployment.yaml").read_text(encoding="utf-8")
    assert 'app.kubernetes.io/name: {{ include "kuberay-operator.name" . }}' in deployment
    assert {"app.kubernetes.io/name": values["nameOverride"]} == OPERATOR_POD_LABELS


def test_with_gke_s_operator_the_dashboard_port_stays_open_to_the_cluster(
    tmp_path: Path,
) -> None:
    """Google does not say where its add-on's operator runs: no `from` to name it by; the token
    still guards the dashboard."""
    result = run_stack(
        "dev", tmp_path, variant("dev", {"nemo-rl-gke:ray": {"operator": "gke-addon"}})
    )
    _, dashboard = ingress(result)["spec"]["ingress"]
    assert dashboard == {"ports": [{"port": 8265, "protocol": "TCP"}]}
    assert by_name(result)["ray-cluster"].inputs["spec"]["authOptions"] == {"mode": "token"}


def test_the_smoke_gate_reads_only_the_token_of_kuberay_s_secret(
    b200_smoke: Result,
) -> None:
    records = by_name(b200_smoke)
    cluster = records["ray-cluster"].inputs["metadata"]["name"]
    pod = plain(records["ray-smoke-job"].inputs)["spec"]["template"]["spec"]
    (volume,) = [v for v in pod["volumes"] if v["name"] == "dashboard-token"]
    assert volume["secret"]["secretName"] == cluster  # KubeRay names it after the cluster
    (item,) = volume["secret"]["items"]
    assert item["key"] == "auth_token"
    (container,) = pod["containers"]
    (mount,) = [m for m in container["volumeMounts"] if m["name"] == "dashboard-token"]
    assert mount["readOnly"] is True
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["DASHBOARD_TOKEN_FILE"] == f"{mount['mountPath']}/{item['path']}"
    # Nothing else of a Secret reaches the gate's environment.
    assert not [e for e in container["env"] if "secretKeyRef" in e.get("valueFrom", {})]
