"""ray.chartPath: the KubeRay release from a local chart (air-gapped installs, the test bed)."""

from __future__ import annotations

import os
import shutil
import tarfile
from pathlib import Path

import pytest

from planning.versions import VERSIONS
from stack_config.errors import InvalidStackConfig
from tests.harness import REPO, by_name, run_stack, variant

SHARED = Path(os.environ.get("NEMO_RL_GKE_SHARED", str(REPO.parent / "shared")))
CHART = SHARED / "charts" / f"kuberay-operator-{VERSIONS.kuberay_chart.value}"
needs_chart = pytest.mark.skipif(
    not CHART.exists() and os.environ.get("NEMO_RL_GKE_REQUIRE_SHARED") != "1",
    reason=f"the shared KubeRay chart is not at {CHART} (set NEMO_RL_GKE_SHARED)",
)


def ray_with(chart: str) -> dict[str, object]:
    return {"nemo-rl-gke:ray": {"chartPath": chart}}


@needs_chart
@pytest.mark.parametrize("packed", [False, True])
def test_a_local_chart_replaces_the_repository(tmp_path: Path, packed: bool) -> None:
    chart = str(CHART)
    if packed:
        chart = str(tmp_path / "kuberay-operator.tgz")
        with tarfile.open(chart, "w:gz") as archive:
            archive.add(CHART, arcname="kuberay-operator")
    result = run_stack("dev", tmp_path, variant("dev", ray_with(chart)))
    release = by_name(result)["kuberay-release"].inputs
    assert release["chart"] == chart
    assert "repositoryOpts" not in release
    assert release["version"] == VERSIONS.kuberay_chart.value


def test_the_default_is_the_public_repository() -> None:
    release = by_name(run_stack("dev"))["kuberay-release"].inputs
    assert release["chart"] == "kuberay-operator"
    assert release["repositoryOpts"]["repo"] == VERSIONS.kuberay_helm_repo.value


@needs_chart
def test_a_chart_of_another_version_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "kuberay-operator"
    shutil.copytree(CHART, other)
    chart_yaml = other / "Chart.yaml"
    chart_yaml.write_text(
        chart_yaml.read_text().replace(f"version: {VERSIONS.kuberay_chart.value}", "version: 9.9.9")
    )
    with pytest.raises(
        InvalidStackConfig, match=r"nemo-rl-gke:ray\.chartPath: the chart at .* is version 9\.9\.9"
    ):
        run_stack("dev", tmp_path, variant("dev", ray_with(str(other))))


def test_a_path_without_a_chart_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidStackConfig, match="is not a Helm chart"):
        run_stack("dev", tmp_path, variant("dev", ray_with(str(tmp_path))))
