"""The test bed's part for Kueue's controller pod: what it rewrites, and when it stops it."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from planning.catalog import profile
from planning.queue import manager_config
from testbed.kueue_host import (
    PROCESS,
    KueueHost,
    Listeners,
    Liveness,
    exclude_controller_from_kwok,
    host_configuration,
    rewired_conversion,
    rewired_webhooks,
)
from testbed.node_topology import topology_labels
from testbed.pki import ensure_webhook_certs
from testbed.processes import Processes
from testbed.shared import shared_dir


def test_service_webhooks_are_pointed_at_the_host_with_their_paths() -> None:
    configuration = {
        "webhooks": [
            {
                "name": "a",
                "clientConfig": {"service": {"name": "s", "path": "/mutate-x"}, "caBundle": "Q0E="},
            },
            {"name": "b", "clientConfig": {"url": "https://127.0.0.1:39443/validate-y"}},
            {"name": "c", "clientConfig": {"url": "https://example.test/validate-z"}},
        ]
    }
    assert rewired_webhooks(configuration, 39443) == [
        {"op": "remove", "path": "/webhooks/0/clientConfig/service"},
        {
            "op": "add",
            "path": "/webhooks/0/clientConfig/url",
            "value": "https://127.0.0.1:39443/mutate-x",
        },
    ]
    # A restarted controller listens on other ports: hooks aimed at the earlier one follow it.
    assert rewired_webhooks(configuration, 40001)[-1] == {
        "op": "replace",
        "path": "/webhooks/1/clientConfig/url",
        "value": "https://127.0.0.1:40001/validate-y",
    }
    crd = {"spec": {"conversion": {"webhook": {"clientConfig": {"service": {"path": "/convert"}}}}}}
    assert rewired_conversion(crd, 39443)[-1]["value"] == "https://127.0.0.1:39443/convert"
    assert rewired_conversion({"spec": {}}, 39443) == []
    moved = {"spec": {"conversion": {"webhook": {"clientConfig": {"url": rewired_conversion(
        crd, 39443)[-1]["value"]}}}}}  # fmt: skip
    assert rewired_conversion(moved, 39443) == []
    assert rewired_conversion(moved, 40001)[0]["value"] == "https://127.0.0.1:40001/convert"


def test_the_charts_configuration_keeps_its_integrations_and_gets_loopback_listeners(
    tmp_path: Path,
) -> None:
    config, changes = host_configuration(
        manager_config("nemo-rl"), "kueue-system", Listeners(1, 2, 3), tmp_path
    )
    assert config["integrations"]["frameworks"] == ["ray.io/rayjob", "ray.io/raycluster"]
    assert config["managedJobsNamespaceSelector"]["matchLabels"] == {
        "kubernetes.io/metadata.name": "nemo-rl"
    }
    assert config["webhook"] == {"port": 3, "host": "127.0.0.1", "certDir": str(tmp_path)}
    assert config["health"]["healthProbeBindAddress"] == "127.0.0.1:1"
    assert config["leaderElection"]["resourceNamespace"] == "kueue-system"
    # The chart's own gates kept (the stack's UnadmittedWorkloadsObservability), visibility off.
    assert config["featureGates"] == {
        "UnadmittedWorkloadsObservability": True,
        "VisibilityOnDemand": False,
    }
    assert len(changes) == 2
    yaml.safe_dump(config)


def test_kwok_leaves_only_kueues_controller_pod_to_the_agent() -> None:
    stages: list[dict[str, Any]] = [
        {"metadata": {"name": "pod-ready"}, "spec": {"selector": {"matchExpressions": []}}},
        {"metadata": {"name": "pod-complete"}, "spec": {"selector": {"matchExpressions": []}}},
    ]
    exclude_controller_from_kwok(stages)
    assert stages[0]["spec"]["selector"]["matchExpressions"] == [
        {
            "key": '.metadata.labels["app.kubernetes.io/name"]',
            "operator": "NotIn",
            "values": ["kueue"],
        }
    ]
    assert stages[1]["spec"]["selector"]["matchExpressions"] == []


def test_fake_gpu_nodes_carry_gkes_topology_labels_by_subblock() -> None:
    b200 = profile("b200")
    first, second, third = (topology_labels(b200, i, per_subblock=2) for i in range(3))
    assert (
        first["cloud.google.com/gce-topology-subblock"]
        == second["cloud.google.com/gce-topology-subblock"]
    )
    assert (
        third["cloud.google.com/gce-topology-subblock"]
        != first["cloud.google.com/gce-topology-subblock"]
    )
    assert (
        first["cloud.google.com/gce-topology-block"] == third["cloud.google.com/gce-topology-block"]
    )
    assert (
        first["cloud.google.com/gce-topology-host"] != second["cloud.google.com/gce-topology-host"]
    )
    assert topology_labels(profile("l4"), 0) == {}  # G2 nodes report no topology


def test_webhook_certificates_are_what_kueues_rotator_keeps(tmp_path: Path) -> None:
    certs = ensure_webhook_certs(tmp_path, "kueue-ca", ["kueue-webhook-service.kueue-system.svc"])
    # cert-controller parses PKCS#1 keys only, and verifies the CA under the name kueue-ca.
    assert certs.ca_key.startswith("-----BEGIN RSA PRIVATE KEY-----")
    assert certs.key.startswith("-----BEGIN RSA PRIVATE KEY-----")
    text = subprocess.run(
        ["openssl", "x509", "-noout", "-text", "-in", str(tmp_path / "tls.crt")],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert "IP Address:127.0.0.1" in text
    assert "DNS:kueue-webhook-service.kueue-system.svc" in text
    ca = subprocess.run(
        ["openssl", "x509", "-noout", "-text", "-in", str(tmp_path / "ca.crt")],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert "CA:TRUE" in ca
    assert "DNS:kueue-ca" in ca
    again = ensure_webhook_certs(tmp_path, "kueue-ca", ["x"])
    assert again == certs  # made once, reused


def test_the_controller_is_said_to_be_gone_only_once_it_is_stopped(tmp_path: Path) -> None:
    """The teardown test takes the agent's line as proof the controller went with its
    Deployment: the line must come after the process is down, not before it is signalled."""
    processes = Processes(tmp_path)
    processes.start(PROCESS, ["/bin/sleep", "60"])
    said: list[tuple[str, bool]] = []

    def no_deployment(*_args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess([], 0, stdout='{"items": []}', stderr="")

    host = KueueHost(
        tmp_path, "/bin/sleep", "https://127.0.0.1:1", tmp_path / "ca.crt", no_deployment,
        lambda message: said.append((message, processes.alive(PROCESS))),
    )  # fmt: skip
    try:
        host.step(0.0)
    finally:
        processes.stop(PROCESS)
    (gone,) = [alive for message, alive in said if "Deployment is gone" in message]
    assert gone is False, said
    assert not processes.alive(PROCESS)


def test_the_controller_is_restarted_after_its_liveness_probe_fails_in_a_row() -> None:
    """The chart's probe (/healthz, 15 s delay, every 20 s, 3 failures), kept as a kubelet keeps
    it: a controller that gave up its manager (started before its CRDs) is restarted."""
    values = shared_dir() / "charts" / "kueue-0.19.2" / "values.yaml"
    if not values.exists():
        pytest.skip(f"the shared Kueue chart is missing at {values}")
    chart = yaml.safe_load(values.read_text(encoding="utf-8"))["controllerManager"]
    probe = {"httpGet": {"path": "/healthz", "port": 8081}, **chart["livenessProbe"]}
    deployment = {"spec": {"template": {"spec": {"containers": [{"livenessProbe": probe}]}}}}
    liveness = Liveness.of(deployment, now=0.0)
    answers = iter([False, True, False, False, False])
    probed: list[float] = []
    clock = [0.0]

    def answer() -> bool:
        probed.append(clock[0])
        return next(answers)

    verdicts = []
    for now in (5.0, 20.0, 40.0, 50.0, 60.0, 80.0, 100.0):
        clock[0] = now
        verdicts.append(liveness.failed(now, answer))
    assert probed == [20.0, 40.0, 60.0, 80.0, 100.0]  # after the delay, once a period
    assert verdicts == [False] * 6 + [True]  # the third failure in a row
    no_probe: dict[str, Any] = {"spec": {"template": {"spec": {"containers": [{}]}}}}
    assert not Liveness.of(no_probe, 0.0).failed(99.0, answer)
