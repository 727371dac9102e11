"""Day-2 changes of the b200 stack that the tests plan, offline and under the real engine.

Each case is a set of `pulumi config set --path` edits and the resources its plan recreates,
named from the rows of `planning.replacements` (the README's table) by `ROLE_NAMES`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from planning.replacements import (
    GATES_RERUN,
    LUSTRE_VOLUME,
    RDMA_GATES_RERUN,
    STORAGE_GATE_RERUNS,
    row,
)

RDMA = frozenset({"rdma-net", *(f"rdma-sub-{i}" for i in range(8))})
GPU_GATES = frozenset({"verify-gpu-health", "verify-nccl", "verify-nccl-peers", "verify-rdma"})
ROLE_NAMES: dict[str, frozenset[str]] = {
    "GPU node pool": frozenset({"gpu-pool"}),
    "Lustre instance": frozenset({"lustre-instance"}),
    "RDMA VPC and its subnets": RDMA,
    LUSTRE_VOLUME: frozenset({"lustre-volume-pv", "lustre-volume-pvc"}),
    "Lustre private services range": frozenset({"lustre-psa"}),
    GATES_RERUN: GPU_GATES | {"verify-storage", "ray-job-nccl-job"},
    RDMA_GATES_RERUN: frozenset(
        {"verify-nccl", "verify-nccl-peers", "verify-rdma", "ray-job-nccl-job"}
    ),
    STORAGE_GATE_RERUNS: frozenset({"verify-storage"}),
}
"""What each "Recreated" entry of the table is in the b200 stack (logical names)."""


@dataclass(frozen=True)
class Case:
    """One config change of the b200 stack."""

    key: str
    """The row of planning.replacements it exercises, or the in-place key."""
    edits: dict[str, Any]
    """`nemo-rl-gke:` paths -> new values (None: removed)."""
    replaced: frozenset[str] = field(default_factory=frozenset)
    """For in-place changes: what is replaced anyway (gate Jobs that run again)."""
    lift_cuda_check: bool = False
    """The NeMo RL image needs the LATEST driver, so the stack refuses DEFAULT: the test lifts
    that check to see what a driver change plans."""

    @property
    def expected(self) -> frozenset[str]:
        """Logical names the plan recreates."""
        try:
            recreates = row(self.key).recreates
        except KeyError:
            return self.replaced
        return frozenset().union(*(ROLE_NAMES[r] for r in recreates))

    def cli_edits(self) -> list[tuple[str, str | None]]:
        """(`nemo-rl-gke:...` key, value or None) for `pulumi config set --path` / `rm`."""
        return [(f"nemo-rl-gke:{k}", None if v is None else str(v)) for k, v in self.edits.items()]


REPLACING = (
    Case("gpu.driverVersion", {"gpu.driverVersion": "DEFAULT"}, lift_cuda_check=True),
    Case("gpu.capacity", {"gpu.capacity": "spot", "gpu.reservation": None}),
    Case("gpu.reservation", {"gpu.reservation": "another-reservation"}),
    Case("network.rdma", {"network.rdma": "dranet"}),
    Case("zone", {"zone": "us-central1-c"}),
    Case("lustre.throughput", {"lustre.throughput": 1000}),
    Case("network.psaCidr", {"network.psaCidr": "172.17.0.0/20"}),
)
IN_PLACE = (
    Case("lustre.capacityGib", {"lustre.capacityGib": 36000}, frozenset({"verify-storage"})),
    Case(
        "gpu.nodes",
        {"gpu.nodes": 1},
        frozenset({"verify-gpu-health", "verify-rdma", "verify-storage"}),
    ),
    Case("cluster.systemPool.min", {"cluster.systemPool.min": 2}),
)
