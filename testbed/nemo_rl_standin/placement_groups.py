"""NeMo RL's placement groups for GRPO's policy cluster, recorded from the real class (test bed
only).

GRPO's setup (`nemo_rl/algorithms/grpo.py`) makes a `RayVirtualCluster` named
`grpo_policy_cluster` with `max_colocated_worker_groups` 2 (1 when generation runs on Megatron),
and vLLM's colocated generation asks it for placement groups without a unified group when the
model fits a node. `record` plays that through the real class on a one-node Ray of this machine
that declares four GPUs (two "nodes" of two GPUs each) and writes each group Ray holds: its name,
strategy and bundles. The stand-in's `placement_groups` is compared with the recording in
tests/testbed.

    python -m testbed.nemo_rl_standin.placement_groups /path/to/NeMo-RL-v0.7.0 > recording.json
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from testbed.nemo_rl_standin.recording import load_source, main, on_local_ray

NODES = 2
"""Nodes in the recording (one real Ray node declares all their GPUs)."""
PER_NODE = 2
"""GPUs of each node in the recording."""
CASES = {"vllm": 2, "megatron": 1}
"""Generation backend -> GRPO's `max_colocated_worker_groups` for it (grpo.py setup)."""


def _groups(module: Any, colocated: int) -> list[dict[str, Any]]:
    import ray

    cluster = module.RayVirtualCluster(
        name="grpo_policy_cluster",
        bundle_ct_per_node_list=[PER_NODE] * NODES,
        use_gpus=True,
        num_gpus_per_node=PER_NODE,
        max_colocated_worker_groups=colocated,
    )
    try:
        groups = cluster._init_placement_groups(strategy=None, use_unified_pg=False)
        tables = [ray.util.placement_group_table(group) for group in groups]
    finally:
        cluster.shutdown()
    return [
        {
            "name": table["name"],
            "strategy": table["strategy"],
            "bundles": [table["bundles"][index] for index in sorted(table["bundles"])],
        }
        for table in tables
    ]


def record(checkout: Path) -> dict[str, Any]:
    """GRPO's policy placement groups for each backend, from the real RayVirtualCluster."""
    source = checkout / "nemo_rl" / "distributed" / "virtual_cluster.py"
    module = load_source(source, "nemo_rl_virtual_cluster")
    gpus = NODES * PER_NODE
    cases = on_local_ray(2 * gpus, gpus, lambda: {b: _groups(module, c) for b, c in CASES.items()})
    return {
        "source": "NVIDIA-NeMo/RL nemo_rl/distributed/virtual_cluster.py",
        "sha256": hashlib.sha256(source.read_bytes()).hexdigest(),
        "nodes": NODES,
        "per_node": PER_NODE,
        "cases": cases,
    }


if __name__ == "__main__":
    main(record, "placement_groups.py")
