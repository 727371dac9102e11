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
    """Nodes the pool already has inside the reservation part asked for: they already count in
    its in-use VMs."""
    elsewhere: str | None = None
    """Where the pool's nodes sit when that is not inside the part asked for (a reservation
    move, or narrowing to a block): they count nowhere in the target, which must hold the
    whole pool because GKE replaces a pool delete-first on any reservation change."""
    elsewhere_nodes: int = 0
    """How many nodes sit there."""


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
    specific_required: bool = True
    """`specificReservationRequired`: only VMs that name the reservation may consume it. When
    false, any VM of that shape in the project can take its capacity (Cluster Toolkit refuses
    such a reservation for the same reason)."""


_FULL_PATH = re.compile(r"projects/(?P<project>[^/]+)/reservations/(?P<rest>.+)")


def qualifying_project(
    reservation: str, owner_project: str | None, pool_project: str
) -> str | None:
    """The project to send the reservation-affinity value under (`projects/P/reservations/...`),
    or None for the short form: a shared reservation always names its owner, and a block or
    sub-block path goes fully qualified in the pool's own project too, the form Cluster
    Toolkit sends since short block paths came back 404 (cluster-toolkit#5043)."""
    if owner_project:
        return owner_project
    return pool_project if "/reservationBlocks/" in reservation else None


def consumed_reservation(value: str, pool_project: str) -> tuple[str, ReservationPath] | None:
    """The project and path a pool's reservation-affinity value names: `NAME[/...]` in the
    pool's own project, or `projects/P/reservations/NAME[/...]` (a shared reservation, and the
    form Cluster Toolkit sends for blocks). None when it is neither."""
    match = _FULL_PATH.fullmatch(value)
    project, rest = (match["project"], match["rest"]) if match else (pool_project, value)
    path = parse_reservation(rest)
    return (project, path) if path else None


def nodes_inside(
    target: ReservationPath, target_project: str, consumed: tuple[str, ReservationPath] | None
) -> bool:
    """Do nodes consuming `consumed` sit inside `target`? Yes when it is the same reservation
    and the target is the same part or a wider one (a block's nodes are in its reservation);
    no for another reservation or a narrower part (nodes of NAME need not be in block B)."""
    if consumed is None:
        return False
    project, path = consumed
    return (
        project == target_project
        and path.name == target.name
        and target.block in (None, path.block)
        and target.sub_block in (None, path.sub_block)
    )


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
    if not seen.specific_required:
        problems.append(
            "is open to automatic consumption (specificReservationRequired is false): any VM of"
            " its shape in the project can take the capacity the pool counts on"
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
                + (
                    f"; the pool's {demand.elsewhere_nodes} nodes consume {demand.elsewhere},"
                    " which does not make them part of it, and GKE deletes the pool before it"
                    " creates the new one: the running pool would be lost before the new one"
                    " failed"
                    if demand.elsewhere
                    else ""
                )
            )
    return problems
