"""stack_config.cron against Kubernetes' own CronJob validation (testbed/go/kube-validation,
the pinned Kubernetes' pkg/apis/batch/validation): every schedule or time zone the API server
refuses is refused at preview, and every one it takes is taken unless the model refuses it on
purpose (a schedule that never fires, a period that is not positive). About 5 s with the
program cached (a first build reuses the control plane's compiled packages)."""

from __future__ import annotations

import shutil
from collections.abc import Callable

import pytest

from stack_config.cron import CronError, check_schedule, check_time_zone
from testbed.kube_validation import judge
from tests.engine.realcli import require_engine
from tests.stack_config.test_health import ACCEPTED, NEVER, REFUSED

DURATIONS = [
    "1ns",
    "0.5s",
    ".5h",
    "1.h",
    "1.5µs",
    "1.5μs",
    "5m.5s",
    "+1h",
    "1h1h",
    "2562047h47m16.854775807s",  # the largest Go duration
    "2562047h47m16.854775808s",
    "2562048h",
    "9223372036854775807ns",
    "9223372036854775808ns",
    "99999999999999999999ns",
    "1.00000000000000000000000000001h",
    "1e3s",
    "1",
    ".s",
    "1h-1m",
    "1H",
    "1 h",
    "",
]
ZONES = [
    "Etc/UTC",
    "UTC",
    "Europe/Berlin",
    "America/Argentina/ComodRivadavia",
    "America/Port-au-Prince",
    "Etc/GMT+14",
    "Etc/GMT-15",
    "EST5EDT",
    "America",  # a folder of the zone database
    "America/Argentina",
    "Etc",
    "Local",
    "local",
    "zone.tab",
    "Europe/../UTC",
    "./UTC",
    "Europe/",
    "/UTC",
    "Europe//Berlin",
    "-UTC",
    "Antarctica/DumontDUrville",
    "Europe/Berlin\n",
    "Mars/Olympus",
    "posixrules",
    "Factory",
    "US/Pacific-New",  # removed from the database in 2020
    "leapseconds",
    "iso3166.tab",
    "SystemV/AST4",
    "GMT0",
    "W-SU",
    "",
]
STRICTER_SCHEDULES = {
    *NEVER,
    "@every 0",
    "@every -5m",
    "@every 0s",
    "@every -1ns",
}
"""Schedules the API server takes that the model refuses on purpose: they never fire."""


@pytest.fixture(scope="module")
def go() -> None:
    """Skip (a failure in CI) where Go is missing: the judge is built with it."""
    if shutil.which("go") is None:
        if require_engine():
            pytest.fail("kube-validation needs Go 1.26 on PATH")
        pytest.skip("kube-validation needs Go 1.26 on PATH")


def _ours(check: Callable[[str], None], value: str) -> str | None:
    try:
        check(value)
    except CronError as error:
        return str(error)
    return None


def test_schedules_are_judged_as_the_api_server_judges_them(go: None) -> None:
    schedules = [
        *ACCEPTED,
        *(s for s, _ in REFUSED),
        *NEVER,
        *(f"@every {d}" for d in DURATIONS),
        *STRICTER_SCHEDULES,
    ]
    verdicts = judge([(s, "Etc/UTC") for s in schedules])
    wrong = []
    for schedule, verdict in zip(schedules, verdicts, strict=True):
        ours = _ours(check_schedule, schedule)
        if verdict.schedule and ours is None:
            wrong.append(
                f"{schedule!r}: the API server refuses ({verdict.schedule[0]}), we take it"
            )
        if not verdict.schedule and ours is not None and schedule not in STRICTER_SCHEDULES:
            wrong.append(f"{schedule!r}: the API server takes it, we refuse ({ours})")
    assert not wrong, "\n".join(wrong)
    # The corpus holds both kinds: the comparison is not vacuous.
    assert sum(bool(v.schedule) for v in verdicts) >= 20
    assert sum(not v.schedule for v in verdicts) >= 20


def test_time_zones_are_judged_as_the_api_server_judges_them(go: None) -> None:
    verdicts = judge([("@daily", zone) for zone in ZONES])
    wrong = []
    for zone, verdict in zip(ZONES, verdicts, strict=True):
        ours = _ours(check_time_zone, zone)
        if bool(verdict.time_zone) != (ours is not None):
            wrong.append(
                f"{zone!r}: API server {verdict.time_zone or 'takes it'}, we {ours or 'take it'}"
            )
    assert not wrong, "\n".join(wrong)
    assert sum(bool(v.time_zone) for v in verdicts) >= 10
