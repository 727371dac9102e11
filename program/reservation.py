"""Read the GPU pool's reservation before anything is planned, and stop when it cannot hold it.

Runs before any resource is registered: the invokes go to the gcp provider during `pulumi
preview` as during `up` (preflight and the engine test bed answer them from a description,
`pulumi_offline.fake_reservations`). A reservation that does not exist in the GPU zone, reserves
another machine type or other GPUs, or has too few free VMs stops the plan with one line that
names `nemo-rl-gke:gpu.reservation` - instead of a pool GKE accepts and never fills.
"""

from __future__ import annotations

import re

import pulumi_gcp as gcp

from planning.catalog import GPU_CATALOG
from planning.cluster import POOL_VERSION_KEYS, SYSTEM_POOL
from planning.naming import PROJECT
from planning.reservation import (
    Capacity,
    PoolDemand,
    ReservationPath,
    ReservationSeen,
    consumed_reservation,
    fit_problems,
    last_segment,
    nodes_inside,
)
from stack_config import InvalidStackConfig, StackConfig

KEY = f"{PROJECT}:gpu.reservation"
_NOT_FOUND = re.compile(r"\b404\b|not ?found", re.IGNORECASE)
_API_OFF = re.compile(r"SERVICE_DISABLED|accessNotConfigured|has not been used", re.IGNORECASE)


def api_off(error: Exception) -> bool:
    """Does the error say the project's API is not enabled yet (a first `up` enables it)?"""
    return bool(_API_OFF.search(str(error)))


def first_line(error: Exception) -> str:
    """The error's first line (the API's message, without the provider's trace)."""
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__


def _missing(error: Exception) -> bool:
    return bool(_NOT_FOUND.search(str(error)))


def check_reservation(cfg: StackConfig) -> None:
    """Raise InvalidStackConfig (naming gpu.reservation) when the reservation cannot hold the
    pool; do nothing for pools without one or with `gpu.checkReservation: false`."""
    path = cfg.gpu.reservation_path
    if path is None or not cfg.gpu.check_reservation:
        return
    owner = cfg.gpu.reservation_project or cfg.project
    gpu = cfg.gpu.profile
    seen = _read(path, owner, cfg.zone)
    nodes, consumed = _current_pool(cfg)
    # A pool's nodes count only in the reservation (and block) they consume: after a move they
    # sit in the old one, and the new one must hold the whole pool.
    inside = nodes_inside(path, owner, consumed_reservation(consumed, cfg.project))
    demand = PoolDemand(
        machine_type=gpu.machine_type,
        accelerator_type=gpu.accelerator_type,
        gpus_per_node=gpu.gpus_per_node,
        nodes=cfg.gpu.max_nodes,
        zone=cfg.zone,
        current_nodes=nodes if inside else 0,
        elsewhere=None if inside or not nodes else (consumed or "no reservation"),
        elsewhere_nodes=0 if inside else nodes,
    )
    problems = fit_problems(path, demand, seen)
    if problems:
        raise InvalidStackConfig(
            KEY,
            f"reservation {path} (project {owner}) cannot hold the GPU pool: it"
            f" {'; it '.join(problems)}",
            _fix(seen, demand),
        )


def _read(path: ReservationPath, owner: str, zone: str) -> ReservationSeen:
    try:
        reservation = gcp.compute.get_reservation(name=path.name, zone=zone, project=owner)
    except Exception as error:  # noqa: BLE001 - the provider's error, whatever its class
        raise _unreadable(path, owner, zone, error) from None
    specifics = list(reservation.specific_reservations or [])
    if not reservation.name or not specifics:
        raise InvalidStackConfig(
            KEY,
            f"reservation {path.name} was not found in zone {zone} of project {owner}, or it"
            " reserves no specific VMs",
            _fix_not_found(owner, zone),
        )
    specific = specifics[0]
    properties = list(specific.instance_properties or [])
    machine = str(properties[0].machine_type or "") if properties else ""
    accelerators = tuple(
        (str(a.accelerator_type), int(a.accelerator_count))
        for a in (properties[0].guest_accelerators or [] if properties else [])
    )
    capacity = Capacity(int(specific.count or 0), int(specific.in_use_count or 0))
    try:
        if path.sub_block and path.block:
            sub = gcp.compute.get_reservation_sub_block(
                name=path.sub_block,
                reservation=path.name,
                reservation_block=path.block,
                zone=zone,
                project=owner,
            )
            capacity = Capacity(int(sub.sub_block_count or 0), int(sub.in_use_count or 0))
        elif path.block:
            block = gcp.compute.get_reservation_block(
                name=path.block, reservation=path.name, zone=zone, project=owner
            )
            capacity = Capacity(int(block.block_count or 0), int(block.in_use_count or 0))
    except Exception as error:  # noqa: BLE001 - the provider's error, whatever its class
        raise _unreadable(path, owner, zone, error) from None
    return ReservationSeen(
        specific_required=bool(reservation.specific_reservation_required),
        zone=str(reservation.zone or zone),
        machine_type=machine,
        accelerators=accelerators,
        capacity=capacity,
    )


def _current_pool(cfg: StackConfig) -> tuple[int, str]:
    """Nodes the stack's GPU pool has now and the reservation-affinity value they consume
    (empty when none); (0, "") when there is no such pool yet."""
    pool = read_gpu_pool(cfg, KEY, "or set gpu.checkReservation to false")
    return pool or (0, "")


def read_cluster(cfg: StackConfig, key: str, way_out: str) -> gcp.container.GetClusterResult | None:
    """The stack's cluster as GKE has it now; None when it does not exist (or the project has
    no GKE API, so no cluster). An unreadable cluster stops the plan naming `key`, with
    `way_out` after the permission it needs."""
    try:
        cluster = gcp.container.get_cluster(
            name=cfg.names.cluster, location=cfg.region, project=cfg.project
        )
    except Exception as error:  # noqa: BLE001 - the provider's error, judged below
        if _missing(error) or api_off(error):
            return None
        raise InvalidStackConfig(
            key,
            f"could not read cluster {cfg.names.cluster} to see the pools it has now:"
            f" {first_line(error)}",
            f"give the identity container.clusters.get (roles/container.viewer), {way_out}",
        ) from None
    return cluster


def read_gpu_pool(cfg: StackConfig, key: str, way_out: str) -> tuple[int, str] | None:
    """The stack's GPU pool as GKE has it now: its nodes and the reservation-affinity value
    they consume (empty when none); None when the cluster or the pool does not exist."""
    cluster = read_cluster(cfg, key, way_out)
    pools = {str(pool.name): pool for pool in (cluster.node_pools or [])} if cluster else {}
    pool = pools.get(f"gpu-{cfg.gpu.profile.key}")
    if pool is None:
        return None
    zones = max(1, len(pool.node_locations or []))
    return int(pool.node_count or 0) * zones, _affinity_value(pool)


def live_versions(cfg: StackConfig) -> dict[str, str]:
    """The GKE version the control plane ("control_plane") and each of the stack's pools
    ("system", "gpu") runs now, for what exists; read only when a version key or the channel
    needs it (program.guard)."""
    key = f"{PROJECT}:{POOL_VERSION_KEYS['gpu']}"
    cluster = read_cluster(cfg, key, "or unset the pool version keys")
    if cluster is None:
        return {}
    pools = {str(pool.name): pool for pool in cluster.node_pools or []}
    names = {"system": SYSTEM_POOL, "gpu": f"gpu-{cfg.gpu.profile.key}"}
    found = {
        role: str(pools[name].version)
        for role, name in names.items()
        if name in pools and pools[name].version
    }
    if cluster.master_version:
        found["control_plane"] = str(cluster.master_version)
    return found


def gpu_pool_running(cfg: StackConfig) -> bool:
    """Does the stack's GPU pool exist in its cluster now (asked before a zone change)?"""
    way_out = (
        "or remove the GPU pool first (docs/runbook.md, Day-2 changes, Moving to another zone)"
    )
    return read_gpu_pool(cfg, f"{PROJECT}:zone", way_out) is not None


def _affinity_value(pool: gcp.container.outputs.GetClusterNodePoolResult) -> str:
    """The specific reservation a pool consumes, as GKE holds it; empty for any other."""
    for config in pool.node_configs or []:
        for affinity in config.reservation_affinities or []:
            if affinity.consume_reservation_type == "SPECIFIC_RESERVATION" and affinity.values:
                return str(affinity.values[0])
    return ""


def _unreadable(
    path: ReservationPath, owner: str, zone: str, error: Exception
) -> InvalidStackConfig:
    if _missing(error):
        where = (
            f"block {path.block} / sub-block {path.sub_block} of reservation {path.name}"
            if path.sub_block
            else f"block {path.block} of reservation {path.name}"
            if path.block
            else f"reservation {path.name}"
        )
        return InvalidStackConfig(
            KEY,
            f"{where} was not found in zone {zone} of project {owner}",
            _fix_not_found(owner, zone),
        )
    return InvalidStackConfig(
        KEY,
        f"reservation {path} could not be read in zone {zone} of project {owner}:"
        f" {first_line(error)}",
        f"give the identity compute.reservations.get on project {owner} (roles/compute.viewer)"
        " and enable compute.googleapis.com, or set gpu.checkReservation to false",
    )


def _fix_not_found(owner: str, zone: str) -> str:
    return (
        f"gcloud compute reservations list --project {owner} shows the reservations and"
        f" their zones (this stack's GPU zone is {zone}): correct gpu.reservation, nemo-rl-gke:zone"
        " or gpu.reservationProject; blocks: gcloud compute reservations blocks list NAME"
        f" --zone {zone}"
    )


def _fix(seen: ReservationSeen, demand: PoolDemand) -> str:
    if not seen.specific_required:
        return (
            "name a reservation created with --require-specific-reservation (gpu.reservation):"
            " only then are its VMs kept for the pools that name it"
        )
    if demand.elsewhere and last_segment(seen.machine_type) in ("", demand.machine_type):
        return (
            f"make room for all {demand.nodes} nodes in the new reservation first (free or add"
            " VMs there), then change gpu.reservation; or move in two updates, accepting the"
            " outage: gpu.nodes 0 (the pool leaves"
            f" {demand.elsewhere}), then gpu.reservation with gpu.nodes back"
        )
    reserved = last_segment(seen.machine_type)
    if reserved != demand.machine_type:
        matching = [key for key, row in GPU_CATALOG.items() if row.machine_type == reserved]
        hint = f", or set gpu.type to {matching[0]} (what it reserves)" if matching else ""
        return (
            f"name a reservation of {demand.machine_type} in {demand.zone} (gpu.reservation){hint}"
        )
    return (
        f"name a reservation (or block) of {demand.machine_type} in {demand.zone} with room for"
        " the pool (gpu.reservation), or lower gpu.nodes / gpu.autoscaling.max to what it holds"
    )
