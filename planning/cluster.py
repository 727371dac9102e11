"""The cluster's day-2 rules: pure functions, no Pulumi.

A system pool's machine type or boot disk changes in place for pulumi-gcp (the node-config
update path), but GKE carries it out by recreating every node of the pool under its surge
settings. The Ray head runs there, covered by a disruption budget of `maxUnavailable: 0`, so the
drain stalls on the head's node and, once GKE stops waiting, evicts the head and every Ray job
with it. Such a change goes ahead only when the stack names the new shape it consents to.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from planning.versions import parse_gke_version

NODE_RECREATING_FIELDS = ("machineType", "diskSizeGb", "diskType", "imageType")
"""nodeConfig fields pulumi-gcp updates in place (google-beta node_config.go's update path)
and GKE applies by recreating every node of the pool."""

SYSTEM_POOL_CONSENT = "cluster.systemPool.recreateNodesAs"
"""The key that names the system-pool shape whose node recreation the user accepts."""


def system_pool_shape(machine_type: str, disk_gb: int) -> str:
    """`MACHINE/DISKgb`: what a change recreates the system nodes for."""
    return f"{machine_type}/{disk_gb}gb"


def system_pool_problem(previous_shape: str, shape: str, consent: str | None) -> str | None:
    """Why the system pool's change must stop, or None when it may go on (unchanged, or the
    user named this very shape)."""
    if not previous_shape or previous_shape == shape or consent == shape:
        return None
    return (
        f"changing the system pool from {previous_shape} to {shape} recreates every system node"
        " (GKE rolls the pool, though the plan says update in place), and the Ray head runs there:"
        " its disruption budget stalls the drain, then the head is evicted and every running Ray"
        " job with it"
    )


def system_pool_fix(shape: str) -> str:
    """The documented way to make the change on purpose."""
    return (
        "wait until no RayJob runs (kubectl get rayjobs -n nemo-rl), then accept the recreation"
        f" for this shape: pulumi config set --path 'nemo-rl-gke:{SYSTEM_POOL_CONSENT}'"
        f" {shape} && pulumi up (docs/runbook.md, Day-2 changes)"
    )


# --- GKE versions and upgrades -------------------------------------------------------------
#
# `cluster.minVersion` is the control plane's version: pulumi-gcp sends it as the initial
# version at create and upgrades the control plane when it is raised. Node pools follow only
# when a pool's own version key names a version: the NO_MINOR_OR_NODE_UPGRADES exclusion keeps
# GKE from moving them, so an upgrade is a reviewed change of the stack, control plane first,
# then the system pool, the GPU pool (whose nodes it recreates) last.

FULL_VERSION_PATTERN = r"^\d+\.\d+\.\d+-gke\.\d+$"
"""A pool's version is a full GKE version: the API reads a prefix back as the full version,
so a prefix would plan an upgrade on every update."""

POOL_VERSION_KEYS = {"system": "cluster.systemPool.version", "gpu": "gpu.version"}
"""The keys that move each pool, in the order an upgrade moves them."""
SYSTEM_POOL = "system"
"""GKE name of the system pool (the GPU pool's is `gpu-<type>`)."""


MAX_NODE_SKEW = 2
"""Minors a node pool may trail its control plane (GKE's version skew policy)."""


def minors_between(older: str, newer: str) -> int:
    """Minor versions from `older` up to `newer` (same major; negative when `newer` is older)."""
    return minor_of(newer)[1] - minor_of(older)[1]


def step_problems(
    before: Mapping[str, str | None],
    now: Mapping[str, str | None],
    live: Callable[[], Mapping[str, str]],
) -> list[tuple[str, str, str]]:
    """(key, why, fix) for a control-plane move GKE or the provider does not make: lowering it
    (pulumi-gcp upgrades only to a newer version, so the plan's update does nothing), more than
    one minor in a step, or a move that leaves a pool more than MAX_NODE_SKEW minors behind
    (a pool without a version key as it runs: `live`, asked only then)."""
    old, new = before.get("cluster.minVersion"), str(now["cluster.minVersion"])
    if not old or old == new:
        return []
    key = "cluster.minVersion"
    if parse_gke_version(new) < parse_gke_version(old) and not matches(old, new):
        return [
            (
                key,
                f"{new} is below {old}, where the control plane was moved: pulumi-gcp never"
                " lowers a control plane, so the update would change nothing",
                f"set cluster.minVersion back to {old}",
            )
        ]
    step = minors_between(old, new)
    if step > 1:
        major, minor = minor_of(old)
        return [
            (
                key,
                f"{old} to {new} is {step} minors in one step: GKE upgrades a control plane one"
                " minor at a time",
                f"set cluster.minVersion to {major}.{minor + 1}, pulumi up, then the next minor",
            )
        ]
    if step < 1:
        return []
    running = None
    problems = []
    for pool, pool_key in POOL_VERSION_KEYS.items():
        version = now.get(pool_key)
        if version is None:
            running = live() if running is None else running
            version = running.get(pool)
        if version and minors_between(version, new) > MAX_NODE_SKEW:
            problems.append(
                (
                    key,
                    f"{new} would leave the {pool} pool on {version},"
                    f" {minors_between(version, new)} minors behind: GKE lets nodes trail the"
                    f" control plane by at most {MAX_NODE_SKEW}",
                    f"move {pool_key} to a {'.'.join(map(str, minor_of(old)))} version first"
                    " (docs/runbook.md, Upgrading GKE)",
                )
            )
    return problems


def channel_problem(
    channel: str, channel_latest: str | None, running: str
) -> tuple[str, str] | None:
    """(why, fix) when `channel`'s newest version is older than the control plane runs: GKE
    does not move a cluster to a channel that cannot carry its version."""
    if not channel_latest:
        return None
    # A prefix such as 1.35 says only the minor: compare full versions only where both are.
    full = "-gke." in running and "-gke." in channel_latest
    older = minor_of(channel_latest) < minor_of(running) or (
        full and parse_gke_version(channel_latest) < parse_gke_version(running)
    )
    if not older:
        return None
    return (
        f"the {channel} channel's newest version is {channel_latest}, older than {running},"
        " which the control plane runs: GKE does not move the cluster there",
        f"keep cluster.releaseChannel, or wait until {channel} offers {running}",
    )


def pins_below_live(
    pins: Mapping[str, str | None], live: Mapping[str, str]
) -> list[tuple[str, str, str]]:
    """(key, pinned, running) for each pool whose version key names a version below the one
    the pool runs now (`live`, by pool: "system", "gpu"). pulumi-gcp reads a pool's version
    back, so such a pin plans a downgrade that recreates every node of the pool: GKE moved it
    past the pin (end of support, a security override, or an exclusion that let it)."""
    found = []
    for pool, key in POOL_VERSION_KEYS.items():
        pinned, running = pins.get(key), live.get(pool)
        if pinned and running and parse_gke_version(pinned) < parse_gke_version(running):
            found.append((key, pinned, running))
    return found


@dataclass(frozen=True)
class EngineVersions:
    """What GKE offers in the cluster's location (pulumi-gcp's getEngineVersions)."""

    valid_master: list[str]
    valid_node: list[str]
    channel_latest: dict[str, str] = field(default_factory=dict)
    """Each release channel's newest version."""


def minor_of(version: str) -> tuple[int, int]:
    """`1.35.8-gke.1036000` or `1.35` -> (1, 35)."""
    major, minor, *_ = parse_gke_version(version)
    return major, minor


def matches(version: str, prefix: str) -> bool:
    """Does the full version fall under the prefix (or equal it)? `1.35` covers
    `1.35.8-gke.1036000`, `1.35.8` covers `1.35.8-gke.1036000` but not `1.35.80-...`."""
    return version == prefix or version.startswith((prefix + ".", prefix + "-"))


def control_plane_problem(
    min_version: str, channel: str, valid_master: list[str], channel_latest: str | None
) -> str | None:
    """Why GKE would refuse `cluster.minVersion` at create or as an upgrade target, or None.

    `valid_master` is what GKE's server config offers in the location (pulumi-gcp's
    getEngineVersions); a channel's newest version bounds what a cluster in it can run."""
    offered = [v for v in valid_master if matches(v, min_version)]
    minors = sorted({minor_of(v) for v in valid_master})
    shown = ", ".join(f"{a}.{b}" for a, b in minors) or "none"
    if not offered:
        return (
            f"{min_version} is not offered by GKE here any more (offered minors: {shown}): a new"
            " cluster is refused and an existing one cannot be moved to it"
        )
    if channel_latest and minor_of(min_version) > minor_of(channel_latest):
        return (
            f"{min_version} is newer than the {channel} channel's newest version"
            f" {channel_latest}: a cluster in that channel cannot run it"
        )
    return None


def pool_version_problem(
    pool: str, version: str, control_plane: str, valid_node: list[str]
) -> str | None:
    """Why GKE would refuse moving `pool` to `version`, or None."""
    if minor_of(version) > minor_of(control_plane):
        return (
            f"the {pool} pool cannot run {version}: nodes may not be newer than the control"
            f" plane (cluster.minVersion {control_plane}); move the control plane first"
        )
    if version not in valid_node:
        near = [v for v in valid_node if minor_of(v) == minor_of(version)]
        offered = ", ".join(sorted(near)[-3:]) or "none of that minor"
        return f"{version} is not a node version GKE offers here (offered: {offered})"
    return None


def pools_behind(control_plane: str, pools: dict[str, str | None]) -> list[str]:
    """The pools a control-plane move leaves on an older minor, each with the key that moves
    it (a pool without a version key stays where it was created)."""
    behind = []
    for pool, version in pools.items():
        if version is None or minor_of(version) < minor_of(control_plane):
            behind.append(
                f"the {pool} pool stays on {version or 'the version it was created at'} until"
                f" {POOL_VERSION_KEYS[pool]} names a {control_plane} version"
            )
    return behind


def version_fix(key: str, channel: str, offered: EngineVersions, control_plane: str) -> str:
    """What to set instead: a version GKE offers, then the order of an upgrade."""
    if key == "cluster.minVersion":
        newest = offered.channel_latest.get(channel) or max(
            offered.valid_master, key=parse_gke_version, default=""
        )
        target = ".".join(map(str, minor_of(newest))) if newest else "a minor GKE offers"
        return (
            f"set cluster.minVersion to {target} (the {channel} channel's newest); {UPGRADE_STEPS}"
        )
    same = [v for v in offered.valid_node if minor_of(v) <= minor_of(control_plane)]
    newest = max(same, key=parse_gke_version, default="")
    return f"set {key} to {newest or 'a node version GKE offers'}; {UPGRADE_STEPS}"


def version_problems(
    previous: dict[str, str | None] | None,
    current: dict[str, str | None],
    channel: str,
    offered: EngineVersions,
) -> list[tuple[str, str]]:
    """(key, why) for each version the stack newly asks for that GKE would refuse. `previous`
    and `current` map `cluster.minVersion` and each pool key to its value (None when unset);
    a value the last deployment already had is not judged again (it runs)."""
    problems: list[tuple[str, str]] = []

    def changed(key: str) -> bool:
        return previous is None or previous.get(key) != current.get(key)

    control_plane = str(current["cluster.minVersion"])
    if changed("cluster.minVersion"):
        problem = control_plane_problem(
            control_plane, channel, offered.valid_master, offered.channel_latest.get(channel)
        )
        if problem:
            problems.append(("cluster.minVersion", problem))
    for pool, key in POOL_VERSION_KEYS.items():
        version = current.get(key)
        if version is not None and changed(key):
            problem = pool_version_problem(pool, version, control_plane, offered.valid_node)
            if problem:
                problems.append((key, problem))
    return problems


def upgrade_notes(previous: dict[str, str | None], current: dict[str, str | None]) -> list[str]:
    """What an upgrade of the control plane leaves to the next step, and what a pool's move
    costs: said in the plan, not refused."""
    notes = []
    old, new = previous.get("cluster.minVersion"), str(current["cluster.minVersion"])
    if old and minor_of(new) > minor_of(old):
        pools = {pool: current.get(key) for pool, key in POOL_VERSION_KEYS.items()}
        notes.extend(pools_behind(new, pools))
    key = POOL_VERSION_KEYS["gpu"]
    if previous.get(key) != current.get(key) and current.get(key) is not None:
        notes.append(
            f"{key} {current.get(key)}: GKE recreates every GPU node (the reservation's pool"
            " upgrades one node at a time, without surge); runs on them end"
        )
    return notes


UPGRADE_STEPS = (
    "upgrade in this order, one reviewed update each (docs/runbook.md, Upgrading GKE): raise"
    " cluster.minVersion to a version the channel offers; then set cluster.systemPool.version to"
    " a node version of that minor; then, when no run needs the GPU nodes, gpu.version"
)


NODE_POOL_DEFAULT_TIMEOUT_MINUTES = 60
"""How long the provider waits for a node pool's create, update or delete unless told."""
GPU_NODE_TURN_MINUTES = 20
"""One GPU node's turn when a reserved pool's nodes are recreated one at a time (max_unavailable
1, no surge: drain, a new VM on the reservation, the GPU driver's install, Ready). Google
publishes no figure: an estimate that errs long, as a timeout only stops Pulumi waiting."""


def gpu_pool_timeout_minutes(nodes: int) -> int:
    """How long Pulumi waits for the GPU pool (create, update, delete) of `nodes` nodes at most.
    Past the provider's 60 minutes a large pool's upgrade would fail the update while GKE
    carries on, and the next `pulumi up` would meet the operation still running."""
    return max(NODE_POOL_DEFAULT_TIMEOUT_MINUTES, nodes * GPU_NODE_TURN_MINUTES)
