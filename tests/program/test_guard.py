"""The replacement guard's read of its stack's last outputs, when the backend is caught writing.

The file backend rewrites a checkpoint's `.attrs` file in place while the engine saves the
stack, and a read at that moment fails with "failed to load checkpoint: EOF" (a real
`pulumi up` of the engine tests failed so). The guard reads again; it never goes on without
the outputs (it would then let a protected stack's replacement through).
"""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pulumi
import pytest

from planning.resource_types import READ_STACK_OUTPUTS
from program import guard
from program.guard import read_with_retries
from stack_config import InvalidStackConfig

CAUGHT_WRITING = Exception(
    "invoke of pulumi:pulumi:readStackOutputs failed: invocation of"
    " pulumi:pulumi:readStackOutputs returned an error: failed to load checkpoint: EOF"
)


def reader(*answers: Any) -> tuple[list[int], Any]:
    """A read that raises or returns `answers` in turn, and the count of its calls."""
    calls: list[int] = []

    def read() -> Any:
        calls.append(1)
        answer = answers[len(calls) - 1]
        if isinstance(answer, Exception):
            raise answer
        return answer

    return calls, read


def test_a_read_that_met_the_backend_writing_is_read_again() -> None:
    calls, read = reader(CAUGHT_WRITING, CAUGHT_WRITING, {"replacementConfig": {"zone": "a"}})
    assert read_with_retries(read, pause=0) == {"replacementConfig": {"zone": "a"}}
    assert len(calls) == 3


def test_the_guard_fails_closed_when_the_backend_never_answers() -> None:
    calls, read = reader(*[CAUGHT_WRITING] * 3)
    with pytest.raises(pulumi.RunError, match="could not read this stack's last outputs") as raised:
        read_with_retries(read, tries=3, pause=0)
    assert "failed to load checkpoint: EOF" in str(raised.value)
    assert "run it again" in str(raised.value)
    assert len(calls) == 3


def test_any_other_error_is_not_retried() -> None:
    calls, read = reader(Exception("invoke failed: permission denied"), {})
    with pytest.raises(Exception, match="permission denied"):
        read_with_retries(read, pause=0)
    assert len(calls) == 1


def test_the_guard_s_invoke_goes_through_the_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the program calls: the engine's readStackOutputs invoke, read again once."""

    answer = SimpleNamespace(value={"outputs": {"replacementConfig": {"zone": "us-central1-b"}}})
    calls, read = reader(CAUGHT_WRITING, answer)
    asked: list[tuple[str, dict[str, str]]] = []

    def invoke(token: str, args: dict[str, str]) -> Any:
        asked.append((token, args))
        return read()

    monkeypatch.setattr(pulumi.runtime, "invoke", invoke)
    monkeypatch.setattr(pulumi, "get_organization", lambda: "organization")
    monkeypatch.setattr(pulumi, "get_project", lambda: "nemo-rl-gke")
    monkeypatch.setattr(time, "sleep", lambda _s: None)
    assert guard.previous_outputs("b200") == {"replacementConfig": {"zone": "us-central1-b"}}
    assert asked == [(READ_STACK_OUTPUTS, {"name": "organization/nemo-rl-gke/b200"})] * 2
    assert len(calls) == 2


def test_gke_versions_are_read_only_when_one_changes_and_judged_then() -> None:
    from planning.cluster import EngineVersions

    offered = EngineVersions(
        ["1.36.2-gke.1000"], ["1.36.2-gke.1000"], {"REGULAR": "1.36.2-gke.1000"}
    )
    calls: list[int] = []

    def read() -> EngineVersions:
        calls.append(1)
        return offered

    deployed = {
        "cluster.releaseChannel": "REGULAR",
        "cluster.minVersion": "1.35",
        "cluster.systemPool.version": None,
        "gpu.version": None,
    }
    assert guard.check_versions(deployed, dict(deployed), read) == []
    assert calls == []  # nothing changed: GKE is not asked, a dropped 1.35 keeps running
    with pytest.raises(guard.VersionRefused) as refused:
        guard.check_versions(None, dict(deployed), read)  # a first deploy at 1.35
    assert refused.value.key == "nemo-rl-gke:cluster.minVersion"
    notes = guard.check_versions(deployed, {**deployed, "cluster.minVersion": "1.36"}, read)
    assert len(notes) == 2
    assert calls == [1, 1]
    # GKE's API still off (a fresh project): nothing to judge, the first up goes on.
    assert guard.check_versions(None, dict(deployed), lambda: None) == []
    # A stack deployed by an older program (no version values yet) is not a first deploy.
    older = {"zone": "us-central1-b"}
    assert guard.check_versions(older, dict(deployed), read) == []


def test_a_pool_pin_below_what_the_pool_runs_is_refused_and_read_only_when_set() -> None:
    calls: list[int] = []

    def live() -> dict[str, str]:
        calls.append(1)
        return {"system": "1.35.9-gke.1100000", "gpu": "1.35.9-gke.1100000"}

    unpinned = {"cluster.systemPool.version": None, "gpu.version": None}
    guard.check_pins(unpinned, live)
    assert calls == []  # no pin: the cluster is not read
    guard.check_pins({**unpinned, "gpu.version": "1.35.9-gke.1100000"}, live)  # the same: fine
    guard.check_pins({**unpinned, "gpu.version": "1.36.2-gke.1000"}, live)  # an upgrade: fine
    with pytest.raises(guard.VersionRefused) as refused:
        guard.check_pins({**unpinned, "gpu.version": "1.35.8-gke.1036000"}, live)
    assert refused.value.key == "nemo-rl-gke:gpu.version"
    assert "1.35.8-gke.1036000 is below 1.35.9-gke.1100000, which the pool runs now" in str(
        refused.value
    )
    assert "set gpu.version to 1.35.9-gke.1100000" in refused.value.fix
    guard.check_pins({**unpinned, "gpu.version": "1.35.8-gke.1036000"}, dict)  # no pool yet


def test_preview_reads_the_pools_live_versions_from_the_cluster(tmp_path: Path) -> None:
    """Through the program's getCluster read (the description answers as GKE does)."""
    from tests.program.test_reservation import reservation, run_b200

    cluster = {
        "name": "nemo-rl-b200",
        "location": "us-central1",
        "pools": [
            {
                "name": "system",
                "nodes": 1,
                "zones": ["us-central1-b"],
                "version": "1.35.9-gke.1100000",
            },
            {
                "name": "gpu-b200",
                "nodes": 2,
                "zones": ["us-central1-b"],
                "version": "1.35.9-gke.1100000",
            },
        ],
    }
    with pytest.raises(InvalidStackConfig) as refused:
        run_b200(
            tmp_path, [reservation()], gpu={"version": "1.35.8-gke.1036000"}, clusters=[cluster]
        )
    assert refused.value.key == "nemo-rl-gke:gpu.version"
    assert "1.35.9-gke.1100000, which the pool runs now" in refused.value.problem
    result = run_b200(
        tmp_path, [reservation()], gpu={"version": "1.35.9-gke.1100000"}, clusters=[cluster]
    )
    assert result.mandatory == []


def test_a_channel_switch_is_judged_against_what_the_control_plane_runs() -> None:
    from planning.cluster import EngineVersions

    offered = EngineVersions(
        ["1.35.8-gke.1036000", "1.34.9-gke.1"],
        ["1.35.8-gke.1036000", "1.34.9-gke.1"],
        {"REGULAR": "1.35.8-gke.1036000", "STABLE": "1.34.9-gke.1"},
    )
    deployed = {
        "cluster.releaseChannel": "REGULAR",
        "cluster.minVersion": "1.34",
        "cluster.systemPool.version": None,
        "gpu.version": None,
    }
    live = {"control_plane": "1.35.8-gke.1036000"}
    moved = {**deployed, "cluster.releaseChannel": "STABLE"}
    with pytest.raises(guard.VersionRefused) as refused:
        guard.check_versions(deployed, moved, lambda: offered, lambda: live)
    assert refused.value.key == "nemo-rl-gke:cluster.releaseChannel"
    assert "older than 1.35.8-gke.1036000, which the control plane runs" in refused.value.problem
    # The same switch where the cluster still runs 1.34: GKE can move it.
    guard.check_versions(
        deployed, moved, lambda: offered, lambda: {"control_plane": "1.34.9-gke.1"}
    )
