"""Managed Lustre tier rules (table from the performance-tiers page, see the module docstring)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planning.storage import (
    TIERS,
    aggregate_throughput_mbps,
    capacity_problem,
    growth_problem,
    nearest_valid,
)


@pytest.mark.parametrize(
    ("throughput", "capacity"),
    [
        (500, 18_000),  # Google's NeMo RL sample (S5 3_prepare_storage.sh); valid today
        (500, 36_000),
        (500, 3_060_000),  # last size on the small step
        (500, 3_168_000),  # 22 x 144,000: first size above the threshold
        (500, 20_016_000),  # maximum
        (1000, 9_000),
        (250, 36_000),
        (125, 72_000),
        (125, 12_240_000),
    ],
)
def test_valid_capacities(throughput: int, capacity: int) -> None:
    assert capacity_problem(throughput, capacity) is None


@pytest.mark.parametrize(
    ("throughput", "capacity", "fragment"),
    [
        (500, 9_000, "outside 18000..20016000"),
        (500, 20_000, "not a multiple of 18000"),
        (500, 3_078_000, "steps of 144000"),  # 3,060,000 + 18,000: small step no longer allowed
        (250, 18_000, "outside 36000"),
        (125, 36_000, "outside 72000"),
        (1000, 10_080_000, "outside"),
        (300, 18_000, "not a tier"),
    ],
)
def test_invalid_capacities(throughput: int, capacity: int, fragment: str) -> None:
    problem = capacity_problem(throughput, capacity)
    assert problem is not None
    assert fragment in problem


def test_every_maximum_is_on_the_large_step() -> None:
    for tier in TIERS.values():
        assert tier.max_gib % tier.step_above_gib == 0
        assert tier.threshold_gib % tier.step_gib == 0


def test_aggregate_throughput() -> None:
    # 18,000 GiB = 17.58 TiB x 500 MB/s/TiB
    assert round(aggregate_throughput_mbps(500, 18_000)) == 8789


@given(st.sampled_from(sorted(TIERS)), st.integers(min_value=1, max_value=50_000_000))
def test_nearest_valid_is_valid(throughput: int, capacity: int) -> None:
    tier = TIERS[throughput]
    assert capacity_problem(throughput, nearest_valid(tier, capacity)) is None


@pytest.mark.parametrize(
    ("throughput", "created", "previous", "new", "refused"),
    [
        (500, 18_000, 36_000, 18_000, "never shrinks: 36000 GiB -> 18000 GiB"),
        (500, 18_000, 18_000, 36_000, None),
        (500, 18_000, 3_060_000, 3_060_000, None),
        (500, 18_000, 3_060_000, 3_204_000, "grows only up to 3060000 GiB"),
        (500, 3_204_000, 3_204_000, 3_348_000, None),
        (1000, 9_000, 9_000, 1_602_000, "threshold of 1530000 GiB"),
        (125, 72_000, 72_000, 12_240_000, None),
    ],
)
def test_an_instance_grows_only_as_the_api_allows(
    throughput: int, created: int, previous: int, new: int, refused: str | None
) -> None:
    problem = growth_problem(throughput, created, previous, new)
    if refused is None:
        assert problem is None
    else:
        assert problem is not None
        assert refused in problem
