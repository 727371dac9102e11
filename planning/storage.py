"""Managed Lustre performance tiers: which capacities each throughput tier accepts.

Source (read 2026-08): https://docs.cloud.google.com/managed-lustre/docs/performance-tiers and
https://docs.cloud.google.com/managed-lustre/docs/increase-capacity. Per tier (MB/s per TiB):

| tier | min GiB | max GiB    | step below threshold | threshold GiB | step above |
|------|---------|------------|----------------------|---------------|------------|
| 1000 | 9,000   | 10,008,000 | 9,000                | 1,530,000     | 72,000     |
| 500  | 18,000  | 20,016,000 | 18,000               | 3,060,000     | 144,000    |
| 250  | 36,000  | 40,032,000 | 36,000               | 6,120,000     | 288,000    |
| 125  | 72,000  | 12,240,000 | 72,000               | (none)        | 72,000     |

The quotas page still shows older, smaller maximums (7,632,000 GiB at 125); the
performance-tiers page is newer and wins. Above the threshold a capacity must be a
multiple of the larger step (every tier's maximum is one). The Dynamic tier is not offered
here: it needs 472,000 GiB at minimum, far beyond a training scratch file system.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

Throughput = Literal[125, 250, 500, 1000]


@dataclass(frozen=True)
class Tier:
    """Capacity rules of one throughput tier."""

    throughput: Throughput
    min_gib: int
    max_gib: int
    step_gib: int
    threshold_gib: int
    step_above_gib: int


TIERS: Final[dict[int, Tier]] = {
    1000: Tier(1000, 9_000, 10_008_000, 9_000, 1_530_000, 72_000),
    500: Tier(500, 18_000, 20_016_000, 18_000, 3_060_000, 144_000),
    250: Tier(250, 36_000, 40_032_000, 36_000, 6_120_000, 288_000),
    125: Tier(125, 72_000, 12_240_000, 72_000, 12_240_000, 72_000),
}


CREATE_TIMEOUT_MINUTES: Final = 120
"""How long a Lustre create may take before the provider gives up: pulumi-gcp's own default
since magic-modules#14878 (2025-08), whose author measured P99 creates of 40-80 minutes; the
125 and 250 MB/s/TiB tiers take more than an hour (cluster-toolkit#5079). A shorter timeout
fails the `up` while the instance goes on creating."""


def capacity_problem(throughput: int, capacity_gib: int) -> str | None:
    """Why `capacity_gib` is not valid at `throughput`, or None when it is."""
    tier = TIERS.get(throughput)
    if tier is None:
        return f"throughput {throughput} is not a tier; use one of {sorted(TIERS)} (MB/s per TiB)"
    if capacity_gib < tier.min_gib or capacity_gib > tier.max_gib:
        return (
            f"{capacity_gib} GiB is outside {tier.min_gib}..{tier.max_gib} GiB"
            f" for the {throughput} MB/s/TiB tier"
        )
    if capacity_gib <= tier.threshold_gib:
        if capacity_gib % tier.step_gib:
            return (
                f"{capacity_gib} GiB is not a multiple of {tier.step_gib} GiB"
                f" (the {throughput} MB/s/TiB tier's step); nearest valid:"
                f" {nearest_valid(tier, capacity_gib)} GiB"
            )
        return None
    if capacity_gib % tier.step_above_gib:
        return (
            f"above {tier.threshold_gib} GiB the {throughput} MB/s/TiB tier grows in steps of"
            f" {tier.step_above_gib} GiB; nearest valid: {nearest_valid(tier, capacity_gib)} GiB"
        )
    return None


def nearest_valid(tier: Tier, capacity_gib: int) -> int:
    """The valid capacity closest to `capacity_gib` (ties round up), clamped to the tier."""
    step = tier.step_gib if capacity_gib <= tier.threshold_gib else tier.step_above_gib
    down = capacity_gib // step * step
    up = down + step
    best = up if capacity_gib - down >= up - capacity_gib else down
    return min(max(best, tier.min_gib), tier.max_gib)


def aggregate_throughput_mbps(throughput: int, capacity_gib: int) -> float:
    """Total throughput in MB/s: capacity in TiB times the per-TiB tier."""
    return capacity_gib / 1024 * throughput


def growth_problem(
    throughput: int, created_gib: int, previous_gib: int, new_gib: int
) -> str | None:
    """Why an existing instance cannot go from `previous_gib` to `new_gib`, or None.

    Capacity never shrinks, and an instance created at or below its tier's threshold grows only
    up to that threshold (https://docs.cloud.google.com/managed-lustre/docs/increase-capacity):
    the API refuses both at apply, after the preview showed an ordinary update.
    """
    if new_gib < previous_gib:
        return (
            f"Managed Lustre capacity never shrinks: {previous_gib} GiB -> {new_gib} GiB would"
            " be refused by the API at apply"
        )
    tier = TIERS.get(throughput)
    if tier is not None and created_gib <= tier.threshold_gib < new_gib:
        return (
            f"an instance created at {created_gib} GiB (at or below the {throughput} MB/s/TiB"
            f" tier's threshold of {tier.threshold_gib} GiB) grows only up to"
            f" {tier.threshold_gib} GiB; {new_gib} GiB would be refused by the API at apply"
        )
    return None
