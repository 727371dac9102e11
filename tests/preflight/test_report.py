"""Tree and summary rendering helpers."""

from __future__ import annotations

import pytest

from preflight.cli import Result
from preflight.report import display_type, render_tree


@pytest.mark.parametrize(
    ("token", "shown"),
    [
        ("gcp:compute/network:Network", "gcp:compute:Network"),
        ("gcp:serviceaccount/iAMMember:IAMMember", "gcp:serviceaccount:IAMMember"),
        ("kubernetes:core/v1:Secret", "kubernetes:core/v1:Secret"),
        ("kubernetes:helm.sh/v3:Release", "kubernetes:helm.sh/v3:Release"),
        ("nemo:network:RdmaNetwork", "nemo:network:RdmaNetwork"),
    ],
)
def test_display_type(token: str, shown: str) -> None:
    assert display_type(token) == shown


def test_tree_nests_children_under_components(b200: Result) -> None:
    tree = render_tree(b200.run).splitlines()
    assert tree[0].startswith("pulumi:pulumi:Stack")
    rdma = next(i for i, line in enumerate(tree) if "nemo:network:RdmaNetwork" in line)
    assert "rdma-net" in tree[rdma + 1]
    assert "networkProfile=" in tree[rdma + 1]
    assert tree[rdma + 1].startswith(("│  ├─", "   ├─"))
