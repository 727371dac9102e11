"""The reporter's reading of a check: the gate scripts' real results (run here with the test
bed's stand-in tools), turned into node labels and a taint. Its calls to a real API server,
RBAC and the admission policy are in tests/engine/test_local_cluster.py."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from planning.health import metric_label, report_script_path, result_label, taint_key, value_label
from testbed.gate_standins import Scenario
from tests.verify.harness import run_gate
from tests.verify.test_gate_scripts import b200
from verify.results import parse_message


def reporter() -> ModuleType:
    """verify/gates/health_report.py as the reporter container runs it (registered as a
    module first: its dataclasses look themselves up there)."""
    if "health_report" in sys.modules:
        return sys.modules["health_report"]
    spec = importlib.util.spec_from_file_location("health_report", report_script_path())
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["health_report"] = module
    spec.loader.exec_module(module)
    return module


def pod_results(tmp: Path, gate: str, index: int) -> str:
    (pod,) = (tmp / "pods").glob(f"verify-{gate}-*-{index}")
    results = pod / "gate-results"
    return results.read_text(encoding="utf-8") if results.exists() else ""


NODE: dict[str, Any] = {
    "metadata": {"name": "gpu-0", "resourceVersion": "42", "labels": {"a": "b"}},
    "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]},
}


def test_a_slow_nccl_pair_fails_with_its_metric_and_value_and_the_peer_reports_nothing(
    tmp_path: Path,
) -> None:
    report = reporter()
    runs = run_gate(
        b200()["nccl"], tmp_path, Scenario(busbw_8g={"all_gather": 250.0, "all_reduce": 200.0})
    )
    verdict = report.verdict_of(
        report.parse_results(pod_results(tmp_path, "nccl", 0)),
        runs[0].returncode,
        "all_gather_avg_busbw",
    )
    assert verdict.passed is False
    assert (verdict.metric, verdict.value) == ("all_gather_busbw_8GiB", "250.00")
    assert "needs >= 292.8" in verdict.message
    peer = report.parse_results(pod_results(tmp_path, "nccl", 1))
    assert report.verdict_of(peer, runs[1].returncode, "all_gather_avg_busbw") is None


def test_a_healthy_node_passes_with_the_checks_headline(tmp_path: Path) -> None:
    report = reporter()
    runs = run_gate(b200()["gpu-health"], tmp_path)
    verdict = report.verdict_of(
        report.parse_results(pod_results(tmp_path, "gpu-health", 0)), runs[0].returncode, "gpus"
    )
    assert verdict.passed is True
    assert (verdict.metric, verdict.value) == ("gpus", "8")


def test_a_node_with_ecc_errors_fails_the_gpu_check(tmp_path: Path) -> None:
    report = reporter()
    runs = run_gate(b200(nodes=1)["gpu-health"], tmp_path, Scenario(ecc_errors=[0, 3]))
    verdict = report.verdict_of(
        report.parse_results(pod_results(tmp_path, "gpu-health", 0)), runs[0].returncode, "gpus"
    )
    assert verdict.passed is False
    assert verdict.metric == "gpus_with_uncorrected_ecc"


def test_a_check_that_died_without_results_fails() -> None:
    report = reporter()
    verdict = report.verdict_of([], 137, "gpus")
    assert (verdict.passed, verdict.metric, verdict.value) == (False, "exit_status", "137")


def test_a_failure_labels_and_taints_keeping_the_nodes_other_taints() -> None:
    report = reporter()
    verdict = report.Verdict(False, "all_gather_busbw_8GiB", "250.00", "failed")
    patch = report.node_patch(NODE, "nccl", verdict, 1_800_000_000)
    assert patch["metadata"]["resourceVersion"] == "42"
    labels = patch["metadata"]["labels"]
    assert labels[result_label("nccl")] == "fail"
    assert labels[metric_label("nccl")] == "all_gather_busbw_8GiB"
    assert labels[value_label("nccl")] == "250.00"
    assert patch["spec"]["taints"] == [
        NODE["spec"]["taints"][0],
        {"key": taint_key("nccl"), "value": "failed", "effect": "NoSchedule"},
    ]
    # Failing again does not add a second taint of the same key.
    again = {**NODE, "spec": {"taints": patch["spec"]["taints"]}}
    assert len(report.node_patch(again, "nccl", verdict, 1)["spec"]["taints"]) == 2


def test_a_pass_never_clears_a_taint() -> None:
    report = reporter()
    patch = report.node_patch(NODE, "rdma", report.Verdict(True, "rdma_devices", "8", "passed"), 1)
    assert patch["metadata"]["labels"][result_label("rdma")] == "pass"
    assert "spec" not in patch


@pytest.mark.parametrize(
    ("raw", "label"),
    [
        ("250.00", "250.00"),
        ("none", "none"),
        ("", "none"),
        ("-x y/z-", "x_y_z"),
        ("a" * 80, "a" * 63),
    ],
)
def test_values_become_valid_label_values(raw: str, label: str) -> None:
    assert reporter().label_value(raw) == label


@pytest.mark.parametrize("gate", ["gpu-health", "rdma", "nccl"])
def test_the_reporter_reads_results_as_make_verify_does(gate: str, tmp_path: Path) -> None:
    """The reporter ships as one standard-library file, so it keeps its own copy of the RESULT
    parser (verify/results.py is make verify's): both read every line a real gate wrote alike."""
    report = reporter()
    run_gate(b200()[gate], tmp_path)
    text = pod_results(tmp_path, gate, 0)
    theirs = [
        (m.metric, m.value, m.op, m.threshold, m.unit, m.verdict) for m in parse_message(text)
    ]
    ours = [
        (r.metric, r.value, r.op, r.threshold, r.unit, r.verdict)
        for r in report.parse_results(text)
    ]
    assert ours == theirs
    assert len(ours) >= 1
