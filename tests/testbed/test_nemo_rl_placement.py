"""The NeMo RL stand-in's placement groups and NUMA map reading against NeMo RL v0.7.0's own.

The recordings (tests/testbed/data) are `testbed.nemo_rl_standin.placement_groups` run against
the real `RayVirtualCluster` on a real one-node Ray, and `testbed.nemo_rl_standin.numa_map` run
against the real `bind_to_gpu_numa`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from testbed.nemo_rl_standin import numa_map, placement_groups
from testbed.nemo_rl_standin.run_grpo import numa_cpulist
from testbed.nemo_rl_standin.run_grpo import placement_groups as standin_groups

DATA = Path(__file__).parent / "data"


@pytest.mark.parametrize("backend", sorted(placement_groups.CASES))
def test_the_standin_places_grpo_workers_as_nemo_rl_does(backend: str) -> None:
    recorded = json.loads((DATA / "nemo_rl_v0.7.0_placement_groups.json").read_text())
    shape = (recorded["nodes"], recorded["per_node"])
    assert shape == (placement_groups.NODES, placement_groups.PER_NODE)
    assert standin_groups(*shape, backend) == recorded["cases"][backend]


@pytest.mark.parametrize("case", sorted(numa_map.CASES))
def test_the_standin_reads_the_numa_map_as_nemo_rl_does(case: str) -> None:
    recorded = json.loads((DATA / "nemo_rl_v0.7.0_numa_map.json").read_text())["cases"][case]
    text, gpus = numa_map.CASES[case]
    assert sorted(recorded) == sorted(str(gpu) for gpu in gpus)
    for gpu in gpus:
        cpulist = numa_cpulist(text, str(gpu))
        assert (bool(cpulist), cpulist) == (
            recorded[str(gpu)]["bound"],
            recorded[str(gpu)]["cpulist"],
        )
