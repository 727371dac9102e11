"""The update that moves an operator from a Helm release to chart objects.

A stack deployed by a version that installed KubeRay as a `helm.v3.Release` exported no record
of its operators; updating it with this version would delete that release after the chart took
its objects over, and Helm would uninstall the operator. The program refuses that at preview,
naming the key, until the stack names the release as forgotten."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from planning.operators import CHARTS_KEY, RELEASES_FORGOTTEN, RELEASES_KEY, releases_problem
from preflight.cli import preflight
from program.guard import REPLACEMENT_EXPORT, ReleasesRefused
from tests.harness import REPO
from tests.preflight.test_changes import b200_with, committed_b200, run_cli

OPERATOR_KEYS = (CHARTS_KEY, RELEASES_KEY, RELEASES_FORGOTTEN)


def before_charts() -> dict[str, Any]:
    """b200's record as a version with Helm releases only exported it (no operator keys)."""
    exported = dict(committed_b200().run.exports[REPLACEMENT_EXPORT].value)
    assert (exported[CHARTS_KEY], exported[RELEASES_KEY]) == (["kuberay"], ["kueue"])
    return {k: v for k, v in exported.items() if k not in OPERATOR_KEYS}


def test_an_update_over_a_helm_release_stops_naming_the_key_and_the_steps() -> None:
    with pytest.raises(ReleasesRefused) as refused:
        preflight(REPO / "Pulumi.b200.yaml", previous_outputs={REPLACEMENT_EXPORT: before_charts()})
    message = str(refused.value)
    assert message.startswith(
        "invalid stack config: nemo-rl-gke:helmReleasesForgotten: this version installs kuberay"
        " as chart objects"
    )
    assert "python -m tools.forget_release s.json kuberay" in message
    assert "pulumi config set --path 'nemo-rl-gke:helmReleasesForgotten[0]' kuberay" in message
    assert "\n" not in message


def test_once_the_release_is_forgotten_the_update_goes_on(tmp_path: Path) -> None:
    forgotten = b200_with(tmp_path, **{RELEASES_FORGOTTEN: ["kuberay"]})
    result = preflight(forgotten, previous_outputs={REPLACEMENT_EXPORT: before_charts()})
    exported = result.run.exports[REPLACEMENT_EXPORT].value
    assert exported[CHARTS_KEY] == ["kuberay"]  # the next update is judged by this record
    # A deployment that recorded its operators, and a first deployment, go on without the key.
    recorded = committed_b200().run.exports[REPLACEMENT_EXPORT].value
    preflight(REPO / "Pulumi.b200.yaml", previous_outputs={REPLACEMENT_EXPORT: recorded})
    preflight(REPO / "Pulumi.b200.yaml", previous_outputs={})


def test_a_stack_on_gke_s_ray_add_on_has_nothing_to_forget(tmp_path: Path) -> None:
    addon = b200_with(tmp_path, **{"ray.operator": "gke-addon"})
    result = preflight(addon, previous_outputs={REPLACEMENT_EXPORT: before_charts()})
    assert result.run.exports[REPLACEMENT_EXPORT].value[CHARTS_KEY] == []


def test_a_later_move_is_judged_by_the_recorded_releases_not_by_an_old_key() -> None:
    """When Kueue moves too, a stack that forgot only KubeRay's release is stopped again."""
    previous = {"name": "nemo-rl-b200", RELEASES_KEY: ["kueue"], CHARTS_KEY: ["kuberay"]}
    found = releases_problem(previous, ["kuberay", "kueue"], ["kuberay"])
    assert found is not None
    assert found[1] == ["kueue"]
    assert releases_problem(previous, ["kuberay", "kueue"], ["kuberay", "kueue"]) is None
    # An operator turned on with this update had no release to lose.
    assert releases_problem({**previous, RELEASES_KEY: []}, ["kuberay", "kueue"], []) is None


def test_preflight_previous_with_an_earlier_report_exits_2_in_one_line(tmp_path: Path) -> None:
    earlier = tmp_path / "earlier.json"
    code, _, _ = run_cli("--stack", "b200", "--json", str(earlier), "--quiet")
    assert code == 0
    report = json.loads(earlier.read_text())
    record = report["outputs"][REPLACEMENT_EXPORT]
    for key in OPERATOR_KEYS:
        record.pop(key)
    earlier.write_text(json.dumps(report))
    code, out, err = run_cli("--stack", "b200", "--previous", str(earlier), "--quiet")
    assert code == 2, out + err
    (line,) = [x for x in err.splitlines() if not x.startswith("preflight: note:")]
    assert line.startswith("preflight: invalid stack config: nemo-rl-gke:helmReleasesForgotten:")
