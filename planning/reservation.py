"""Can a named reservation hold the GPU pool? Pure: what was read in, problems out.

The most reported failure of the tools this project replaces is a pool pointed at a reservation
that cannot hold it (XPK #476: another machine type; Cluster Toolkit #5043: a block that does
not exist; #4492: too few free VMs). GKE accepts such a pool and then never gets its nodes; the
program reads the reservation (and its block or sub-block) during the preview and stops the
plan instead (`program.reservation`). This module holds the comparison.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

RESERVATION_PATH = re.compile(
    r"(?P<name>[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)"
    r"(?:/reservationBlocks/(?P<block>[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?)"
    r"(?:/reservationSubBlocks/(?P<sub_block>[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?))?)?"
)
"""`NAME`, `NAME/reservationBlocks/BLOCK` or `NAME/reservationBlocks/BLOCK/reservationSubBlocks/
SUB`: the forms GKE's reservation affinity takes (the sub-block form as XPK sends it), each
part a GCE name of 1-63 characters. Matched whole (`fullmatch`): `$` would let a trailing newline
through."""


@dataclass(frozen=True)
class ReservationPath:
    """A reservation, optionally narrowed to one block or one sub-block."""

    name: str
    block: str | None = None
    sub_block: str | None = None

    def __str__(self) -> str:
        text = self.name
        if self.block:
            text += f"/reservationBlocks/{self.block}"
        if self.sub_block:
            text += f"/reservationSubBlocks/{self.sub_block}"
        return text


def parse_reservation(text: str) -> ReservationPath | None:
    """The parts of a reservation path, or None when it is not one of the accepted forms."""
    match = RESERVATION_PATH.fullmatch(text)
    if match is None:
        return None
    return ReservationPath(match["name"], match["block"], match["sub_block"])


@dataclass(frozen=True)
class PoolDemand:
    """What the GPU pool asks of its reservation."""

    machine_type: str
    accelerator_type: str
    gpus_per_node: int
    nodes: int
    """The pool's most nodes (fixed size or autoscaling maximum)."""
    zone: str
    current_nodes: int = 0
    """Nodes the pool already has: they already count in the reservation's in-use VMs."""


@dataclass(frozen=True)
class Capacity:
    """VMs in a reservation, a block or a sub-block, and how many of them are in use."""

    count: int
    in_use: int

    @property
    def free(self) -> int:
        """VMs nobody uses (never negative)."""
        return max(0, self.count - self.in_use)


@dataclass(frozen=True)
class ReservationSeen:
    """What the Compute API says about the reservation (and the block or sub-block named)."""

    zone: str
    machine_type: str
    """Empty when the reservation names its VMs by an instance template instead: then machine
    type and GPUs are not judged (the API does not repeat the template's properties)."""
    accelerators: tuple[tuple[str, int], ...]
    """(accelerator type, count per VM) of the reserved VMs."""
    capacity: Capacity
    """Of the narrowest part named: the sub-block, else the block, else the reservation."""


def last_segment(value: str) -> str:
    """`.../zones/us-central1-b` -> `us-central1-b`; a short name stays as it is."""
    return value.rstrip("/").rsplit("/", 1)[-1]


def fit_problems(path: ReservationPath, demand: PoolDemand, seen: ReservationSeen) -> list[str]:
    """Why `seen` cannot hold the pool; empty when it can."""
    problems = []
    zone = last_segment(seen.zone) if seen.zone else demand.zone
    if zone != demand.zone:
        problems.append(f"is in zone {zone}, but the GPU pool is in {demand.zone}")
    machine = last_segment(seen.machine_type)
    if machine and machine != demand.machine_type:
        problems.append(f"reserves {machine} VMs, but the pool runs {demand.machine_type}")
    wanted = (demand.accelerator_type, demand.gpus_per_node)
    reserved = tuple((last_segment(kind), count) for kind, count in seen.accelerators)
    if machine == demand.machine_type and wanted not in reserved:
        shown = ", ".join(f"{count} x {kind}" for kind, count in reserved) or "no GPUs"
        problems.append(
            f"reserves {shown} per VM, but the pool needs {demand.gpus_per_node} x"
            f" {demand.accelerator_type}"
        )
    part = "sub-block" if path.sub_block else "block" if path.block else "reservation"
    capacity = seen.capacity
    if capacity.count < demand.nodes:
        problems.append(
            f"holds {capacity.count} VMs in the {part}, but the pool can grow to {demand.nodes}"
        )
    else:
        # The pool's own nodes are among the VMs in use; only the rest must be free.
        missing = demand.nodes - min(demand.current_nodes, demand.nodes)
        if capacity.free < missing:
            problems.append(
                f"has {capacity.free} free VMs in the {part} ({capacity.count} reserved,"
                f" {capacity.in_use} in use), but the pool needs {missing} more"
                + (f" beyond its {demand.current_nodes} nodes" if demand.current_nodes else "")
            )
    return problems
