"""GKE version rules: what GKE offers, and the order an upgrade moves the pools in."""

from __future__ import annotations

from collections.abc import Mapping

from planning.cluster import (
    EngineVersions,
    channel_problem,
    control_plane_problem,
    gpu_pool_timeout_minutes,
    matches,
    pool_version_problem,
    step_problems,
    upgrade_notes,
    version_fix,
    version_problems,
)

OFFERED = EngineVersions(
    valid_master=["1.36.2-gke.1000", "1.35.8-gke.1036000", "1.35.6-gke.900"],
    valid_node=["1.36.2-gke.1000", "1.35.8-gke.1036000", "1.35.6-gke.900"],
    channel_latest={"REGULAR": "1.35.8-gke.1036000", "RAPID": "1.36.2-gke.1000"},
)
NOW = {"cluster.minVersion": "1.35", "cluster.systemPool.version": None, "gpu.version": None}


def test_a_prefix_covers_its_versions_only() -> None:
    assert matches("1.35.8-gke.1036000", "1.35")
    assert matches("1.35.8-gke.1036000", "1.35.8")
    assert not matches("1.35.80-gke.1", "1.35.8")
    assert not matches("1.350.1-gke.1", "1.35")


def test_a_minor_gke_no_longer_offers_is_refused_with_what_it_offers() -> None:
    problem = control_plane_problem("1.34", "REGULAR", OFFERED.valid_master, "1.35.8-gke.1036000")
    assert problem is not None
    assert "1.34 is not offered" in problem
    assert "1.35, 1.36" in problem
    assert control_plane_problem("1.35", "REGULAR", OFFERED.valid_master, None) is None


def test_a_minor_newer_than_the_channel_is_refused() -> None:
    problem = control_plane_problem("1.36", "REGULAR", OFFERED.valid_master, "1.35.8-gke.1036000")
    assert problem is not None
    assert "REGULAR channel's newest" in problem
    assert control_plane_problem("1.36", "RAPID", OFFERED.valid_master, "1.36.2-gke.1000") is None


def test_a_pool_never_runs_ahead_of_its_control_plane_nor_on_an_unoffered_version() -> None:
    ahead = pool_version_problem("gpu", "1.36.2-gke.1000", "1.35", OFFERED.valid_node)
    assert ahead is not None
    assert "move the control plane first" in ahead
    unknown = pool_version_problem("gpu", "1.35.7-gke.1", "1.35", OFFERED.valid_node)
    assert unknown is not None
    assert "1.35.8-gke.1036000" in unknown
    assert pool_version_problem("gpu", "1.35.8-gke.1036000", "1.35", OFFERED.valid_node) is None


def test_only_what_changed_is_judged() -> None:
    """A running cluster keeps working after GKE stops offering its minor: an unchanged value
    is never refused; a first deploy (no previous) judges everything."""
    old = {**NOW, "cluster.minVersion": "1.34"}
    assert version_problems(old, old, "REGULAR", OFFERED) == []
    (first,) = version_problems(None, old, "REGULAR", OFFERED)
    assert first[0] == "cluster.minVersion"
    asked = {**NOW, "gpu.version": "1.35.7-gke.1"}
    assert [k for k, _ in version_problems(NOW, asked, "REGULAR", OFFERED)] == ["gpu.version"]


def test_the_fix_names_a_version_gke_offers() -> None:
    assert version_fix("cluster.minVersion", "REGULAR", OFFERED, "1.34").startswith(
        "set cluster.minVersion to 1.35 (the REGULAR channel's newest)"
    )
    assert version_fix("gpu.version", "REGULAR", OFFERED, "1.35").startswith(
        "set gpu.version to 1.35.8-gke.1036000"
    )


def test_an_upgrade_names_the_pools_it_leaves_behind_and_what_the_gpu_step_costs() -> None:
    moved = {**NOW, "cluster.minVersion": "1.36"}
    notes = upgrade_notes(NOW, moved)
    assert len(notes) == 2
    assert "cluster.systemPool.version names a 1.36 version" in notes[0]
    assert "gpu.version names a 1.36 version" in notes[1]
    done = {**moved, "cluster.systemPool.version": "1.36.2-gke.1000"}
    (gpu_step,) = list(upgrade_notes(moved, {**done, "gpu.version": "1.36.2-gke.1000"}))
    assert "recreates every GPU node" in gpu_step
    assert upgrade_notes(NOW, NOW) == []


def test_the_gpu_pool_waits_as_long_as_its_nodes_take_one_at_a_time() -> None:
    """The provider's 60 minutes hold up to 3 nodes; an 18-node reserved pool gets 6 hours."""
    assert gpu_pool_timeout_minutes(2) == 60
    assert gpu_pool_timeout_minutes(3) == 60
    assert gpu_pool_timeout_minutes(4) == 80
    assert gpu_pool_timeout_minutes(18) == 360


def _steps(
    old: str,
    new: str,
    pins: Mapping[str, str | None] | None = None,
    live: dict[str, str] | None = None,
) -> list[tuple[str, str, str]]:
    asked: list[int] = []

    def read() -> dict[str, str]:
        asked.append(1)
        return live or {}

    now: dict[str, str | None] = {"cluster.minVersion": new, **(pins or {})}
    found = step_problems({"cluster.minVersion": old}, now, read)
    if live is None:
        assert asked == []  # the cluster is read only for pools without a version key
    return found


def test_the_control_plane_moves_up_one_minor_at_a_time_and_never_down() -> None:
    assert _steps("1.35", "1.35") == []
    assert (
        _steps(
            "1.35",
            "1.36",
            {"gpu.version": "1.35.8-gke.1", "cluster.systemPool.version": "1.35.8-gke.1"},
        )
        == []
    )
    assert _steps("1.35.8-gke.1036000", "1.35") == []  # a prefix over the same version: no move
    [(key, why, fix)] = _steps("1.36", "1.35")
    assert key == "cluster.minVersion"
    assert "pulumi-gcp never lowers a control plane" in why
    assert fix == "set cluster.minVersion back to 1.36"
    [(key, why, fix)] = _steps("1.35.9-gke.2", "1.35.8-gke.1")
    assert "below 1.35.9-gke.2" in why
    [(key, why, fix)] = _steps("1.34", "1.36")
    assert "2 minors in one step" in why
    assert fix.startswith("set cluster.minVersion to 1.35, pulumi up")


def test_a_control_plane_move_may_not_leave_a_pool_more_than_two_minors_behind() -> None:
    pins = {"gpu.version": "1.33.5-gke.1", "cluster.systemPool.version": "1.35.2-gke.1"}
    [(key, why, fix)] = _steps("1.35", "1.36", pins)
    assert key == "cluster.minVersion"
    assert "the gpu pool on 1.33.5-gke.1, 3 minors behind" in why
    assert fix.startswith("move gpu.version to a 1.35 version first")
    # A pool without a key is judged as it runs.
    found = _steps(
        "1.35", "1.36", {"cluster.systemPool.version": "1.35.2-gke.1"}, {"gpu": "1.33.1-gke.1"}
    )
    assert [k for k, _, _ in found] == ["cluster.minVersion"]
    assert (
        _steps(
            "1.35", "1.36", {"cluster.systemPool.version": "1.35.2-gke.1"}, {"gpu": "1.34.1-gke.1"}
        )
        == []
    )


def test_a_channel_that_cannot_carry_the_running_control_plane_is_refused() -> None:
    assert channel_problem("STABLE", "1.34.9-gke.1", "1.35.8-gke.1036000") is not None
    assert channel_problem("STABLE", "1.35.7-gke.1", "1.35.8-gke.1036000") is not None
    assert channel_problem("STABLE", "1.35.9-gke.1", "1.35.8-gke.1036000") is None
    assert channel_problem("STABLE", "1.35.7-gke.1", "1.35") is None  # a prefix names the minor
    assert channel_problem("STABLE", None, "1.35") is None
