"""The resource-graph picture: what goes into it, and that it renders."""

from __future__ import annotations

from pathlib import Path

import pytest

from preflight.cli import Result
from preflight.graph import build, layers, render
from tests.preflight.test_cli import run_cli


def titles(result: Result) -> dict[str, str]:
    return {urn: box.title for urn, box in build(result.run).boxes.items()}


def test_boxes_fold_resources_into_components(b200: Result) -> None:
    graph = build(b200.run)
    by_title = {box.title: box for box in graph.boxes.values()}
    assert "8 Subnetwork" in by_title["RdmaNetwork rdma"].contents
    assert "9 Network" in by_title["GpuNetworking gpu-net"].contents
    assert by_title["kubernetes gke-k8s"].group == "providers"
    assert sum(int(c.split()[0]) for b in graph.boxes.values() for c in b.contents) == sum(
        1 for r in b200.run.records if r.custom
    )


def test_arrows_follow_dependencies_and_lustre_is_parallel(b200: Result) -> None:
    graph = build(b200.run)
    names = titles(b200)
    arrows = {(names[s], names[t]) for s, t in graph.edges}
    assert ("PrimaryNetwork primary", "Cluster gke") in arrows
    assert ("RdmaNetwork rdma", "GpuNodePool gpu") in arrows
    assert ("Lustre lustre", "LustreVolume lustre-volume") in arrows
    assert ("kubernetes gke-k8s", "RayWorkload ray") in arrows  # through the provider
    column = {names[u]: i for i, col in enumerate(layers(graph)) for u in col}
    assert column["Lustre lustre"] == column["Cluster gke"]  # created side by side


@pytest.mark.parametrize("suffix", [".svg", ".png"])
def test_render_writes_a_picture(b200: Result, tmp_path: Path, suffix: str) -> None:
    path = render(b200.run, tmp_path / f"g{suffix}")
    data = path.read_bytes()
    assert data.startswith(b"\x89PNG") if suffix == ".png" else b"<svg" in data[:500]
    if suffix == ".svg":
        assert b"RdmaNetwork rdma" in data


def test_graph_flag_and_bad_extension(tmp_path: Path) -> None:
    code, _, _ = run_cli("--stack", "dev", "--quiet", "--graph", str(tmp_path / "dev.svg"))
    assert code == 0
    assert (tmp_path / "dev.svg").exists()
    code, _, err = run_cli("--stack", "dev", "--quiet", "--graph", str(tmp_path / "dev.pdf"))
    assert code == 2
    assert ".svg or .png" in err


def test_readme_picture_is_current(b200: Result, tmp_path: Path) -> None:
    """docs/b200-graph.svg (embedded in the README) matches what the program registers now."""
    from tests.harness import REPO

    fresh = render(b200.run, tmp_path / "b200-graph.svg").read_text()
    committed = (REPO / "docs" / "b200-graph.svg").read_text()
    assert fresh == committed, "the b200 stack changed: run `make graph` and commit the picture"


def test_dranet_picture_is_current(tmp_path: Path) -> None:
    """docs/b200-dranet-graph.svg is the b200 stack on network.rdma dranet, as `make graph`
    draws it beside the multi-network one."""
    from tests.harness import REPO, run_stack, stack_data, variant

    network = {**stack_data("b200")["config"]["nemo-rl-gke:network"], "rdma": "dranet"}
    result = run_stack(
        "b200", tmp_path, variant("b200", {"nemo-rl-gke:network": network}), known=False
    )
    fresh = render(result.run, tmp_path / "b200-dranet-graph.svg").read_text()
    committed = (REPO / "docs" / "b200-dranet-graph.svg").read_text()
    assert fresh == committed, "the b200 stack changed: run `make graph` and commit the pictures"
