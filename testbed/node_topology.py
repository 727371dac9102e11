"""GKE's reservation topology labels on the test bed's fake GPU nodes.

A4 and A3 Ultra nodes on a reservation carry the physical topology of their VM as labels:
block, sub-block and host (opaque IDs on GKE). The fake nodes of such a pool get the same
labels with readable IDs, `SUBBLOCK_NODES` nodes per sub-block (NEMO_RL_GKE_SUBBLOCK_NODES,
default 2), all in one block. Tests that need another layout relabel nodes with kubectl.
"""

from __future__ import annotations

import os

from planning.catalog import GpuProfile
from planning.queue import BLOCK_LABEL, HOST_LABEL, SUBBLOCK_LABEL, reports_topology

SUBBLOCK_NODES_ENV = "NEMO_RL_GKE_SUBBLOCK_NODES"
DEFAULT_SUBBLOCK_NODES = 2
BLOCK = "block-0"


def subblock_nodes() -> int:
    """Nodes per sub-block of the fake reservation."""
    return max(1, int(os.environ.get(SUBBLOCK_NODES_ENV, DEFAULT_SUBBLOCK_NODES)))


def topology_labels(gpu: GpuProfile, index: int, per_subblock: int | None = None) -> dict[str, str]:
    """The topology labels of the `index`-th GPU node (none for shapes GKE does not label)."""
    if not reports_topology(gpu):
        return {}
    size = per_subblock or subblock_nodes()
    subblock = f"{BLOCK}-sb-{index // size}"
    return {
        BLOCK_LABEL: BLOCK,
        SUBBLOCK_LABEL: subblock,
        HOST_LABEL: f"{subblock}-host-{index % size}",
    }
