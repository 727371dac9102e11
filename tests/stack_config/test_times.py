"""Maintenance times (RFC 3339 as Go's time.Parse reads it) and recurrences (RFC 5545, within
bounds): every bad value is one line naming the key, none spins or overflows."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from stack_config import load_stack_config
from stack_config.errors import ConfigProblem
from stack_config.times import parse_rfc3339
from tests.stack_config.test_stack import error_for, values

# Accepted by Go's time.Parse(time.RFC3339, v) (the fast path, or its general layout parser:
# a one-digit hour, any fraction), and refused by it (a space, no seconds, no zone, a bare
# date, the basic format, a week date, a lower-case t or z, an offset without a colon).
GO_ACCEPTS = {
    "2026-01-03T04:00:00Z": datetime(2026, 1, 3, 4, tzinfo=UTC),
    "2026-01-03T04:00:00.5Z": datetime(2026, 1, 3, 4, 0, 0, 500000, tzinfo=UTC),
    "2026-01-03T04:00:00+05:30": datetime(
        2026, 1, 3, 4, tzinfo=timezone(timedelta(hours=5, minutes=30))
    ),
    "2026-01-03T4:00:00Z": datetime(2026, 1, 3, 4, tzinfo=UTC),
    "2028-02-29T00:00:00-00:00": datetime(2028, 2, 29, tzinfo=UTC),
}
GO_REFUSES = [
    "2026-01-03 04:00:00Z",
    "2026-01-03T04:00Z",
    "2026-01-03T04:00:00",
    "2026-01-03",
    "20260103T040000Z",
    "2026-W01-6T04:00:00Z",
    "2026-01-03t04:00:00Z",
    "2026-01-03T04:00:00z",
    "2026-01-03T04:00:00+0530",
    "2026-1-03T04:00:00Z",
    "2026-13-03T04:00:00Z",
    "2027-02-29T04:00:00Z",
    "2026-01-03T24:00:00Z",
    "2026-01-03T04:60:00Z",
    "2026-01-03T04:00:00+24:00",
]


@pytest.mark.parametrize(("text", "moment"), GO_ACCEPTS.items())
def test_what_go_accepts_is_read(text: str, moment: datetime) -> None:
    assert parse_rfc3339(text) == moment


@pytest.mark.parametrize("text", GO_REFUSES)
def test_what_go_refuses_is_refused(text: str) -> None:
    with pytest.raises(ConfigProblem):
        parse_rfc3339(text)


def maintenance(**fields: Any) -> dict[str, Any]:
    return {"maintenance": fields}


@pytest.mark.parametrize(
    ("fields", "key", "text"),
    [
        ({"windowStart": "2026-01-03"}, "windowStart", "is not an RFC 3339 time"),
        ({"exclusionStart": "2026-01-01 00:00:00"}, "exclusionStart", "is not an RFC 3339"),
        ({"windowEnd": "2026-01-03T12:00:00"}, "windowEnd", "is not an RFC 3339 time"),
        # Far-future and far-past times: a clear refusal, never an OverflowError.
        (
            {"windowStart": "9999-12-31T20:00:00Z", "windowEnd": "9999-12-31T23:59:59Z"},
            "windowStart",
            "year 9999 is outside",
        ),
        (
            {"exclusionStart": "9999-12-31T00:00:00Z", "exclusionScope": "NO_UPGRADES"},
            "exclusionStart",
            "year 9999 is outside",
        ),
        ({"exclusionEnd": "0001-01-01T00:00:00Z"}, "exclusionEnd", "year 1 is outside"),
    ],
)
def test_maintenance_times(fields: dict[str, Any], key: str, text: str) -> None:
    err = error_for(values(cluster=maintenance(**fields)))
    assert err.key == f"nemo-rl-gke:cluster.maintenance.{key}", str(err)
    assert text in str(err)
    assert "\n" not in str(err)


@pytest.mark.parametrize(
    ("rule", "text"),
    [
        ("FREQ=DAILY;INTERVAL=0", "INTERVAL=0 is not a positive integer"),
        ("FREQ=WEEKLY;INTERVAL=-1", "INTERVAL=-1 is not a positive integer"),
        ("FREQ=DAILY;INTERVAL=1.5", "is not a positive integer"),
        (
            "FREQ=DAILY;BYHOUR=" + ",".join(map(str, range(24))) + ";BYMINUTE=0,30",
            "more than 10000 occurrences",
        ),
        ("FREQ=DAILY;BYMONTH=2;BYMONTHDAY=31", "longer than 0.5 s to evaluate"),
    ],
)
def test_recurrences_are_evaluated_within_bounds(rule: str, text: str) -> None:
    started = time.perf_counter()
    err = error_for(values(cluster=maintenance(recurrence=rule)))
    assert time.perf_counter() - started < 3  # a hard bound: never a hang
    assert err.key == "nemo-rl-gke:cluster.maintenance.recurrence", str(err)
    assert text in str(err)


def test_unusual_valid_rules_and_times_are_accepted() -> None:
    cfg = load_stack_config(
        values(
            cluster=maintenance(
                windowStart="2026-01-03T4:00:00+01:00",
                windowEnd="2026-01-03T12:00:00+01:00",
                recurrence="FREQ=DAILY;INTERVAL=2",
            )
        ),
        "b200",
    )
    assert cfg.cluster.maintenance.recurrence == "FREQ=DAILY;INTERVAL=2"


def test_a_minor_exclusion_ends_by_the_minors_end_of_support() -> None:
    from planning.versions import GKE_END_OF_SUPPORT

    eos = GKE_END_OF_SUPPORT["1.35"].value
    err = error_for(values(cluster=maintenance(exclusionEnd="2027-06-01T00:00:00Z")))
    assert err.key == "nemo-rl-gke:cluster.maintenance.exclusionEnd", str(err)
    assert f"after the end of support of GKE 1.35 ({eos})" in str(err)
    # Up to the end of support it is accepted, and so is no end (GKE ends it there itself).
    load_stack_config(values(cluster=maintenance(exclusionEnd=f"{eos}T00:00:00Z")), "b200")
    load_stack_config(values(), "b200")
