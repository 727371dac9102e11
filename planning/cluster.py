"""The cluster's day-2 rules: pure functions, no Pulumi.

A system pool's machine type or boot disk changes in place for pulumi-gcp (the node-config
update path), but GKE carries it out by recreating every node of the pool under its surge
settings. The Ray head runs there, covered by a disruption budget of `maxUnavailable: 0`, so the
drain stalls on the head's node and, once GKE stops waiting, evicts the head and every Ray job
with it. Such a change goes ahead only when the stack names the new shape it consents to.
"""

from __future__ import annotations

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
        f" {shape} && pulumi up (README, Day-2 changes)"
    )
