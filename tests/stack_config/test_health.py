"""The health checks' keys: a schedule as the API server parses it, checks the pool can run."""

from __future__ import annotations

from typing import Any

import pytest

from stack_config import load_stack_config
from stack_config.cron import CronError, check_schedule
from tests.stack_config.test_stack import error_for, values

DEV_GPU = {"type": "l4", "autoscaling": {"min": 0, "max": 2}, "capacity": "spot"}

# robfig/cron v3 ParseStandard, as kube-apiserver validates spec.schedule: these parse.
ACCEPTED = [
    "0 4 * * *",
    "0 4 * * sun",
    "0 4 * * SUN-sat",
    "*/15 * * * *",
    "5/15 * * * *",  # N/step: N to the field's end
    "0 0 1,15 jan,jul ?",
    "*-5 * * * *",  # robfig ignores what follows a star's hyphen
    "0 0 30 2 1",  # the 30th never comes in February, but Mondays do (either matches)
    "@daily",
    "@weekly",
    "@every 12h",
    "@every 1h30m",
]
REFUSED = [
    ("", "empty"),
    ("0 4 * *", "exactly 5"),
    ("0 4 * * * *", "exactly 5"),  # no seconds field in the standard parser
    ("60 * * * *", "above the minute maximum"),
    ("0 24 * * *", "above the hour maximum"),
    ("0 0 0 * *", "below the day of month minimum"),
    ("0 0 * 13 *", "above the month maximum"),
    ("0 0 * * 7", "above the day of week maximum"),  # robfig's week is 0-6
    ("*/0 * * * *", "step 0"),
    ("5-1 * * * *", "runs backwards"),
    ("1-2-3 * * * *", "too many hyphens"),
    ("*/2/3 * * * *", "too many slashes"),
    ("-1 * * * *", "not a number"),  # split at the hyphen, as robfig does
    ("x * * * *", "not a number"),
    ("@fortnightly", "not a descriptor"),
    ("@daily ", "not a descriptor"),  # robfig matches descriptors exactly
    ("@every soon", "not a duration"),
    ("TZ=UTC 0 4 * * *", "time zone"),
    ("CRON_TZ=Europe/Berlin 0 4 * * *", "time zone"),
]
NEVER = ["0 0 30 2 *", "0 0 31 4,6,9,11 *"]


@pytest.mark.parametrize("schedule", ACCEPTED)
def test_schedules_the_api_server_takes_are_accepted(schedule: str) -> None:
    check_schedule(schedule)


@pytest.mark.parametrize(("schedule", "why"), REFUSED)
def test_schedules_the_api_server_refuses_are_refused(schedule: str, why: str) -> None:
    with pytest.raises(CronError, match=why):
        check_schedule(schedule)


@pytest.mark.parametrize("schedule", NEVER)
def test_a_schedule_that_never_fires_does_nothing_and_is_refused(schedule: str) -> None:
    with pytest.raises(CronError, match="never fires"):
        check_schedule(schedule)


def test_a_non_positive_period_is_refused() -> None:
    for period in ("@every -5m", "@every 0s", "@every 0"):
        with pytest.raises(CronError, match="positive"):
            check_schedule(period)


def test_the_stack_refuses_a_bad_schedule_naming_the_key() -> None:
    err = error_for(values(health={"schedule": "every day at 4"}))
    assert err.key == "nemo-rl-gke:health.schedule", str(err)
    assert "exactly 5" in str(err)
    assert "0 4 * * 0" in err.fix


@pytest.mark.parametrize(
    ("changes", "key", "text"),
    [
        ({"health": {"timeZone": "Mars/Olympus"}}, "health.timeZone", "not an IANA"),
        ({"health": {"checks": ["nccl"]}}, "health.checks", "health.schedule is not set"),
        (
            {"health": {"schedule": "@daily"}, "kueue": {"enabled": False}},
            "health.schedule",
            "through the job queue",
        ),
        (
            {
                "gpu": DEV_GPU,
                "kueue": {"enabled": True},
                "health": {"schedule": "@daily", "checks": ["gpuHealth", "rdma"]},
            },
            "health.checks[1]",
            "needs RDMA NICs",
        ),
        (
            {"health": {"schedule": "@daily", "checks": ["rdma", "rdma"]}},
            "health.checks[1]",
            "listed twice",
        ),
        ({"health": {"schedule": "@daily", "checks": ["dcgm"]}}, "health.checks[0]", "gpuHealth"),
    ],
)
def test_checks_that_could_not_run_as_asked_are_refused(
    changes: dict[str, Any], key: str, text: str
) -> None:
    err = error_for(values(**changes))
    assert err.key == f"nemo-rl-gke:{key}", str(err)
    assert text in str(err)
    assert err.fix


def test_checks_default_to_what_the_pool_can_run() -> None:
    b200 = load_stack_config(values(health={"schedule": "@daily"}), "b200")
    assert b200.health_checks == ["gpu-health", "rdma", "nccl"]
    assert load_stack_config(values(), "b200").health_checks == []
    one = {"type": "b200", "nodes": 1, "capacity": "reservation", "reservation": "r1"}
    one_node = load_stack_config(values(gpu=one, health={"schedule": "@daily"}), "b200")
    assert one_node.health_checks == ["gpu-health", "rdma"]
    err = error_for(values(gpu=one, health={"schedule": "@daily", "checks": ["nccl"]}))
    assert "two GPU nodes" in str(err)


def test_a_parked_pool_keeps_its_schedule_and_plans_no_check() -> None:
    parked = {"type": "b200", "nodes": 0, "capacity": "reservation", "reservation": "r1"}
    cfg = load_stack_config(
        values(gpu=parked, health={"schedule": "@daily", "checks": ["nccl"]}), "b200"
    )
    assert cfg.health_checks == []


def test_a_floor_no_gate_and_no_check_uses_is_refused_one_a_check_uses_is_not() -> None:
    off = {"enabled": False, "nccl": {"minAvgBusBandwidthGBPerSecond": 110}}
    err = error_for(values(verify=off))
    assert err.key == "nemo-rl-gke:verify.nccl", str(err)
    # The scheduled NCCL check reads the floor: the same key now does something.
    cfg = load_stack_config(values(verify=off, health={"schedule": "@daily"}), "b200")
    assert cfg.gate_settings.nccl_min_avg_busbw == 110
    err = error_for(values(verify=off, health={"schedule": "@daily", "checks": ["gpuHealth"]}))
    assert err.key == "nemo-rl-gke:verify.nccl", str(err)
