"""Stop a protected stack's update that would recreate the GPU pool, Lustre or the cluster.

The program exports the values of the config keys whose change recreates something
(`REPLACEMENT_EXPORT`), and before it registers any resource it reads the ones its own stack
exported last time, through the engine's built-in `pulumi:pulumi:readStackOutputs` invoke
(what a StackReference reads: the backend's last checkpoint of this stack). When the stack
is protected and a key changed in a way that recreates a guarded resource, the program fails
with one message naming the key, what is lost and the documented way to do it on purpose;
`pulumi preview` fails with it, and `pulumi up` (with or without its preview) registers
nothing. A stack that has never been deployed (or was deployed before this export existed)
has nothing to compare with and goes on.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import pulumi

from planning.cluster import (
    POOL_VERSION_KEYS,
    SYSTEM_POOL_CONSENT,
    EngineVersions,
    channel_problem,
    pins_below_live,
    step_problems,
    system_pool_fix,
    system_pool_problem,
    system_pool_shape,
    upgrade_notes,
    version_fix,
    version_problems,
)
from planning.naming import PROJECT
from planning.network import ZONE_MOVE_STEPS, zone_move_problem
from planning.replacements import refusals
from planning.resource_types import READ_STACK_OUTPUTS
from planning.storage import growth_problem
from stack_config import InvalidStackConfig, StackConfig

REPLACEMENT_EXPORT = "replacementConfig"
"""The stack output holding the values `replacement_values` returns."""


class ReplacementRefused(pulumi.RunError):
    """A protected stack's change would recreate a guarded resource; nothing was registered.

    A `pulumi.RunError`, so the real CLI prints the message without a traceback.
    """


MULTI_NETWORKING = "cluster.multiNetworking"
"""Whether the cluster has multi-networking on. GKE's exclusivity with DRANET is per node pool
(Cluster Toolkit refuses additional networks on a DRANET pool, and keeps them on the cluster):
a stack born on the multi-network path keeps it on after a switch to DRANET, while its old pool
and Network objects still exist in the same update; only a cluster created on DRANET has it
off."""
RULE_KEYS = (
    MULTI_NETWORKING,
    "lustre.capacityGib",
    "lustre.createdCapacityGib",
    "gpu.rdmaNetworks",
    "cluster.systemPool.shape",
    SYSTEM_POOL_CONSENT,
    "cluster.releaseChannel",
    "cluster.minVersion",
    *POOL_VERSION_KEYS.values(),
)
"""Exported values that recreate nothing in the plan but bound a day-2 change: how the running
Lustre instance may grow, whether a zone change runs under an RDMA GPU pool, whether the
system nodes (and the Ray head) are recreated with the user's consent, and which GKE versions
the control plane and each pool were last moved to."""

VERSION_KEYS = ("cluster.minVersion", *POOL_VERSION_KEYS.values())


class ChangeRefused(InvalidStackConfig):
    """A day-2 change the cloud cannot carry out as planned, protected or not; nothing was
    registered. Names the key, and the documented way in its fix."""


class LustreGrowthRefused(ChangeRefused):
    """The running Lustre instance cannot take the new capacity; nothing was registered."""


class ZoneMoveRefused(ChangeRefused):
    """A zone change under a running RDMA GPU pool; nothing was registered."""


class SystemPoolRefused(ChangeRefused):
    """A system-pool change that recreates its nodes (and the Ray head), not consented to."""


class VersionRefused(ChangeRefused):
    """A GKE version GKE does not offer, or an upgrade out of order; nothing was registered."""


def replacement_values(cfg: StackConfig) -> dict[str, Any]:
    """The config values whose change recreates something (planning.replacements' keys)."""
    gpu, network, lustre = cfg.gpu, cfg.network, cfg.lustre
    system = cfg.cluster.system_pool
    return {
        "gcp:project": cfg.project,
        "gcp:region": cfg.region,
        "zone": cfg.zone,
        "name": cfg.name,
        "protect": cfg.protect,
        "gpu.type": gpu.type,
        "gpu.capacity": gpu.capacity,
        "gpu.reservation": gpu.reservation or "",
        "gpu.reservationProject": gpu.reservation_project or "",
        "gpu.placement": gpu.placement,
        "gpu.driverVersion": gpu.driver_version,
        "network.primaryCidr": str(network.primary_cidr),
        # Under DRANET GKE plans the RDMA networks: the stack's ranges are not recorded, so
        # a switch is judged once, by network.rdma.
        **(
            {}
            if cfg.dranet
            else {
                "network.gvnicCidr": str(network.gvnic_cidr),
                "network.rdmaCidrs": [str(c) for c in cfg.rdma_cidrs],
            }
        ),
        "network.rdma": network.rdma,
        MULTI_NETWORKING: not cfg.dranet,
        "network.psaCidr": str(network.psa_cidr),
        "lustre.throughput": lustre.throughput if lustre.enabled else 0,
        "lustre.filesystem": lustre.filesystem if lustre.enabled else "",
        "lustre.capacityGib": lustre.capacity_gib if lustre.enabled else 0,
        # What the instance was created at: it bounds how far it can grow (planning.storage).
        "lustre.createdCapacityGib": lustre.capacity_gib if lustre.enabled else 0,
        # Whether the GPU pool has RDMA networks: a zone change under it cannot be planned.
        "gpu.rdmaNetworks": bool(cfg.rdma_cidrs),
        # GKE recreates every system node (and the Ray head) when this changes.
        "cluster.systemPool.shape": system_pool_shape(system.machine_type, system.disk_gb),
        SYSTEM_POOL_CONSENT: system.recreate_nodes_as or "",
        # Where the control plane and each pool were last moved (an upgrade is judged against
        # what GKE offers only when one of them changes).
        "cluster.releaseChannel": cfg.cluster.release_channel,
        "cluster.minVersion": cfg.cluster.min_version,
        POOL_VERSION_KEYS["system"]: system.version,
        POOL_VERSION_KEYS["gpu"]: gpu.version,
    }


def check_system_pool(previous: dict[str, Any], current: dict[str, Any]) -> None:
    """Raise InvalidStackConfig (naming the system pool's machine type) when its nodes would
    be recreated without the stack naming the new shape."""
    shape = str(current.get("cluster.systemPool.shape") or "")
    problem = system_pool_problem(
        str(previous.get("cluster.systemPool.shape") or ""),
        shape,
        str(current.get(SYSTEM_POOL_CONSENT) or "") or None,
    )
    if problem:
        raise SystemPoolRefused(
            f"{PROJECT}:cluster.systemPool.machineType", problem, system_pool_fix(shape)
        )


def check_zone_move(
    previous: dict[str, Any], current: dict[str, Any], pool_running: Callable[[], bool]
) -> None:
    """Raise InvalidStackConfig (naming zone) when the zone changes under a running GPU pool
    with RDMA networks (`pool_running` is asked only then: it reads the cluster)."""
    old, new = str(previous.get("zone") or ""), str(current.get("zone") or "")
    if not previous.get("gpu.rdmaNetworks") or old == new:
        return
    problem = zone_move_problem(old, new, rdma_pool_running=pool_running())
    if problem:
        raise ZoneMoveRefused(f"{PROJECT}:zone", problem, ZONE_MOVE_STEPS)


def _same_instance(previous: dict[str, Any], current: dict[str, Any]) -> bool:
    """Is the Lustre instance the one the last deployment left (not created or recreated)?"""
    keys = ("lustre.throughput", "lustre.filesystem", "zone", "gcp:project", "name")
    return bool(previous.get("lustre.capacityGib")) and all(
        previous.get(k) == current.get(k) for k in keys
    )


def check_lustre_growth(previous: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
    """Raise InvalidStackConfig (naming lustre.capacityGib) when the running instance cannot
    take the new capacity; return `current` with the capacity the instance was created at
    carried over from the last deployment."""
    if not current.get("lustre.capacityGib") or not _same_instance(previous, current):
        return current
    created = int(previous.get("lustre.createdCapacityGib") or previous["lustre.capacityGib"])
    problem = growth_problem(
        int(current["lustre.throughput"]),
        created,
        int(previous["lustre.capacityGib"]),
        int(current["lustre.capacityGib"]),
    )
    if problem:
        raise LustreGrowthRefused(
            f"{PROJECT}:lustre.capacityGib",
            problem,
            f"keep lustre.capacityGib at {previous['lustre.capacityGib']} GiB or grow it within"
            " the rule; a smaller or larger file system is a new instance: copy the data out,"
            " then change lustre.filesystem (it recreates Lustre, docs/runbook.md, Day-2 changes)",
        )
    return {**current, "lustre.createdCapacityGib": created}


def check_day_two(
    previous: dict[str, Any], current: dict[str, Any], pool_running: Callable[[], bool]
) -> dict[str, Any]:
    """Every change the cloud cannot carry out as planned, protected or not (ChangeRefused):
    a zone move under a running RDMA pool, an unconsented system-pool reshape, a Lustre size
    the running instance cannot take. Returns `current` with Lustre's created size carried
    over. The program and preflight --previous both judge a change here."""
    check_zone_move(previous, current, pool_running)
    check_system_pool(previous, current)
    return keep_multi_networking(previous, check_lustre_growth(previous, current))


def keep_multi_networking(previous: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
    """`current` with multi-networking kept on where the last deployment had it (an older
    program's export says so through network.rdma)."""
    before = previous.get(MULTI_NETWORKING, previous.get("network.rdma", "dranet") != "dranet")
    return {**current, MULTI_NETWORKING: bool(before) or bool(current[MULTI_NETWORKING])}


def versions_of(values: Mapping[str, Any]) -> dict[str, str | None]:
    """The control plane's and each pool's version among exported values."""
    return {key: values.get(key) for key in VERSION_KEYS}


def versions_exported(values: Mapping[str, Any]) -> dict[str, Any]:
    """Only the exported values that say which GKE versions were deployed (and the channel)."""
    keys = ("cluster.releaseChannel", *VERSION_KEYS)
    return {key: values[key] for key in keys if key in values}


def check_versions(
    previous: dict[str, Any] | None,
    current: dict[str, Any],
    read: Callable[[], EngineVersions | None],
    read_live: Callable[[], Mapping[str, str]] = dict,
) -> list[str]:
    """Raise VersionRefused (naming the key) when the stack newly asks for a GKE version GKE
    does not offer in its location (`read` is asked only then), a control-plane step GKE or
    the provider does not make, or a channel that cannot carry the running control plane
    (`read_live`: what the cluster runs, asked only then); return what an upgrade leaves to its
    next step, for the plan to say. A previous deployment without these values (an older
    program) counts as changed only where the stack now names a pool version."""
    now = versions_of(current)
    before = versions_of(previous) if previous else None
    if previous and "cluster.minVersion" not in previous:
        # Deployed by a program that did not export versions: the cluster runs at this minimum.
        before = {**(before or {}), "cluster.minVersion": now["cluster.minVersion"]}
    channel = str(current.get("cluster.releaseChannel") or "")
    moved_channel = (previous or {}).get("cluster.releaseChannel", channel) != channel
    if before is not None and before == now and not moved_channel:
        return []
    for key, problem, fix in step_problems(before or {}, now, read_live):
        raise VersionRefused(f"{PROJECT}:{key}", problem, fix)
    offered = read()
    if offered is not None:
        for key, problem in version_problems(before, now, channel, offered):
            fix = version_fix(key, channel, offered, str(now["cluster.minVersion"]))
            raise VersionRefused(f"{PROJECT}:{key}", problem, fix)
        if moved_channel:
            running = read_live().get("control_plane") or str(now["cluster.minVersion"])
            found = channel_problem(channel, offered.channel_latest.get(channel), running)
            if found:
                raise VersionRefused(f"{PROJECT}:cluster.releaseChannel", *found)
    return upgrade_notes(before, now) if before is not None else []


CHECKPOINT_READ_TRIES = 6
"""How often the guard reads its stack's last outputs when the backend's read fails midway: the
file backend (gocloud's fileblob) rewrites the checkpoint's `.attrs` file in place while the
engine saves the stack, and a read at that moment fails with "failed to load checkpoint: EOF"."""


def read_with_retries(
    read: Callable[[], Any], tries: int = CHECKPOINT_READ_TRIES, pause: float = 0.5
) -> Any:
    """`read()`, again after a pause when the backend was caught writing the checkpoint; any
    other error, or the same one `tries` times, ends the program (the guard fails closed)."""
    for attempt in range(1, tries + 1):
        try:
            return read()
        except Exception as error:
            if "failed to load checkpoint" not in str(error):
                raise
            last = error
        if attempt < tries:
            time.sleep(pause * attempt)
    raise pulumi.RunError(
        f"could not read this stack's last outputs from the backend {tries} times ({last});"
        " the replacement guard cannot judge the change: run it again"
    ) from last


def previous_outputs(stack: str) -> dict[str, Any]:
    """This stack's outputs as its last deployment left them (empty before the first)."""
    name = f"{pulumi.get_organization()}/{pulumi.get_project()}/{stack}"
    # An invoke blocks until answered, so nothing is registered before the check below.
    answer = read_with_retries(lambda: pulumi.runtime.invoke(READ_STACK_OUTPUTS, {"name": name}))
    value = answer.value or {}
    outputs = value.get("outputs") if isinstance(value, dict) else None
    return dict(outputs) if isinstance(outputs, dict) else {}


def check_pins(current: Mapping[str, Any], read_live: Callable[[], Mapping[str, str]]) -> None:
    """Raise VersionRefused when a pool version key names a version below the one the pool
    runs now (`read_live` is asked only when a key is set): the plan would downgrade it."""
    pins = {key: current.get(key) for key in POOL_VERSION_KEYS.values()}
    if not any(pins.values()):
        return
    for key, pinned, running in pins_below_live(pins, read_live()):
        raise VersionRefused(
            f"{PROJECT}:{key}",
            f"{pinned} is below {running}, which the pool runs now: GKE moved it (end of"
            " support, a security override or an exclusion that allowed it), and the plan"
            " would downgrade it, recreating every node",
            f"set {key} to {running} (docs/runbook.md, Upgrading GKE: after GKE upgraded a pool)",
        )


def stop_surprise_replacements(
    cfg: StackConfig,
    stack: str,
    pool_running: Callable[[], bool],
    read_versions: Callable[[], EngineVersions | None],
    read_live_versions: Callable[[], Mapping[str, str]],
) -> dict[str, Any]:
    """Raise ReplacementRefused when a protected stack's change recreates a guarded resource
    (InvalidStackConfig when Lustre cannot take its new size, the zone changes under a
    running RDMA GPU pool, or a GKE version is not offered, protected or not); return the
    values to export for the next update to compare with. `pool_running` says whether the
    stack's GPU pool exists now; `read_versions` what GKE offers in the region;
    `read_live_versions` the version each existing pool runs."""
    current = replacement_values(cfg)
    check_pins(current, read_live_versions)
    previous = previous_outputs(stack).get(REPLACEMENT_EXPORT)
    for note in check_versions(
        previous if isinstance(previous, dict) else None,
        current,
        read_versions,
        read_live_versions,
    ):
        pulumi.log.warn(note)
    if isinstance(previous, dict):
        current = check_day_two(previous, current, pool_running)
        problems = refusals(previous, current, cfg.protect)
        if problems:
            more = f" ({len(problems) - 1} more change(s) like it)" if len(problems) > 1 else ""
            raise ReplacementRefused(f"replacement refused: {problems[0]}{more}")
    return current
