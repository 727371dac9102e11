"""Keys that would do nothing are refused, naming them: the project's own rule, everywhere."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from planning.versions import VERSIONS
from stack_config import load_stack_config
from tests.stack_config.test_stack import error_for, values

DEV_GPU = {"type": "l4", "autoscaling": {"min": 0, "max": 2}, "capacity": "spot"}


@pytest.mark.parametrize(
    ("changes", "key", "text"),
    [
        ({"kueue": {"enabled": False, "gpuQuota": 16}}, "kueue.gpuQuota", "kueue.enabled false"),
        ({"kueue": {"enabled": False, "topology": "block"}}, "kueue.topology", "would do nothing"),
        (
            {"gpu": DEV_GPU, "kueue": {"flavorLabels": {"a": "b"}}},
            "kueue.flavorLabels",
            "defaults to off without RDMA",
        ),
        (
            {"verify": {"grpoSmoke": {"timeoutMinutes": 1}}},
            "verify.grpoSmoke.timeoutMinutes",
            "stops its Ray job 60 s before the deadline",
        ),
        (
            {"verify": {"jobNccl": {"timeoutMinutes": 1}}},
            "verify.jobNccl.timeoutMinutes",
            "leaves the gate no time",
        ),
    ],
)
def test_a_key_that_does_nothing_is_refused(changes: dict[str, Any], key: str, text: str) -> None:
    err = error_for(values(**changes))
    assert err.key == f"nemo-rl-gke:{key}", str(err)
    assert text in str(err)
    assert err.fix


def test_the_same_keys_where_they_do_something_are_accepted() -> None:
    load_stack_config(values(kueue={"enabled": True, "gpuQuota": 16, "topology": "block"}), "b200")
    load_stack_config(values(verify={"grpoSmoke": {"timeoutMinutes": 2}}), "b200")
    load_stack_config(values(kueue={"enabled": False}), "b200")


def test_a_chart_the_managed_operator_never_installs_is_refused(tmp_path: Path) -> None:
    chart = tmp_path / "kuberay-operator"
    chart.mkdir()
    version = VERSIONS.kuberay_chart.value
    (chart / "Chart.yaml").write_text(f"name: kuberay-operator\nversion: {version}\n")
    load_stack_config(values(ray={"chartPath": str(chart)}), "b200")  # helm: it is used
    err = error_for(values(ray={"operator": "gke-addon", "chartPath": str(chart)}))
    assert err.key == "nemo-rl-gke:ray.chartPath", str(err)
    assert "installs no Helm release" in str(err)


@pytest.mark.parametrize(
    ("changes", "key", "text"),
    [
        ({"verify": {"enabled": False, "nccl": {"timeoutMinutes": 30}}}, "verify.nccl", "false"),
        (
            {"gpu": DEV_GPU, "verify": {"gpuHealth": {"timeoutMinutes": 5}}},
            "verify.gpuHealth",
            "defaults to off",
        ),
        (
            {"gpu": DEV_GPU, "verify": {"enabled": True, "rdma": {"timeoutMinutes": 5}}},
            "verify.rdma",
            "runs only on GPUs with RDMA NICs",
        ),
        (
            {"gpu": DEV_GPU, "verify": {"enabled": True, "jobNccl": {"enabled": True}}},
            "verify.jobNccl",
            "not on g2-standard-16",
        ),
    ],
)
def test_settings_of_a_gate_that_never_runs_are_refused(
    changes: dict[str, Any], key: str, text: str
) -> None:
    err = error_for(values(**changes))
    assert err.key == f"nemo-rl-gke:{key}", str(err)
    assert text in str(err)


def test_turning_off_a_gate_that_never_runs_is_harmless() -> None:
    load_stack_config(
        values(gpu=DEV_GPU, verify={"enabled": True, "rdma": {"enabled": False}}), "b200"
    )
