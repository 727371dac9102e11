"""The scheduled health checks' config: when the GPU pool's gates run again, and which.

The checks are the gates (GPU health, the RDMA loopback, two-node NCCL) with the gates' own
floors (`verify.*`), run as CronJobs through the job queue. They are off until a schedule is
given; the b200 and h200 stacks give one.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

from pydantic import Field, field_validator

from planning.health import HealthCheck
from stack_config.base import ConfigModel
from stack_config.cron import CronError, check_schedule, check_time_zone
from stack_config.errors import ConfigProblem
from stack_config.gpu_pool import GpuConfig

CheckKey = Literal["gpuHealth", "rdma", "nccl"]
CHECK_OF_KEY: dict[str, HealthCheck] = {"gpuHealth": "gpu-health", "rdma": "rdma", "nccl": "nccl"}
_FIX_SCHEDULE = (
    'write five cron fields, e.g. "0 4 * * 0" (Sundays 04:00), or @daily / @weekly / @every 12h'
)


class HealthConfig(ConfigModel):
    """Scheduled health checks of the GPU pool (CronJobs through the job queue)."""

    schedule: str | None = Field(
        None,
        max_length=200,
        description="When the checks run: a cron schedule as a CronJob takes it (five fields,"
        " or @daily, @weekly, @every 12h), in timeZone. None: no scheduled checks.",
    )
    time_zone: str = Field(
        "Etc/UTC", max_length=64, description="IANA time zone the schedule is read in."
    )
    checks: list[CheckKey] | None = Field(
        None,
        min_length=1,
        max_length=3,
        description="Which checks run (default: every one the pool can run: gpuHealth; rdma"
        " and nccl on GPUs with RDMA NICs; nccl on two nodes or more).",
    )

    @field_validator("schedule")
    @classmethod
    def _cron(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                check_schedule(value)
            except CronError as error:
                raise ConfigProblem((), f"{value!r}: {error}", _FIX_SCHEDULE) from None
        return value

    @field_validator("time_zone")
    @classmethod
    def _zone(cls, value: str) -> str:
        try:
            check_time_zone(value)
        except CronError as error:
            raise ConfigProblem(
                (), str(error), 'write a zone such as "Etc/UTC" or "Europe/Berlin"'
            ) from None
        return value

    @field_validator("checks")
    @classmethod
    def _once_each(cls, value: list[CheckKey] | None) -> list[CheckKey] | None:
        for i, name in enumerate(value or []):
            if (value or []).index(name) != i:
                raise ConfigProblem((i,), f"{name} is listed twice", "list each check once")
        return value


def available_checks(gpu: GpuConfig) -> list[CheckKey]:
    """The checks this pool can run (the gates' own conditions, planning.verify)."""
    keys: list[CheckKey] = ["gpuHealth"]
    if gpu.profile.rdma_nics > 0:
        keys.append("rdma")
        if gpu.max_nodes >= 2:
            keys.append("nccl")
    return keys


def scheduled_checks(health: HealthConfig, gpu: GpuConfig) -> list[HealthCheck]:
    """The checks that run (none without a schedule, and none on a parked pool: as with the
    gates, a pool of 0 nodes has nothing to check, and parking it stays a one-key change)."""
    if health.schedule is None or gpu.max_nodes < 1:
        return []
    keys = health.checks if health.checks is not None else available_checks(gpu)
    return [CHECK_OF_KEY[k] for k in keys]


def health_problems(
    health: HealthConfig, gpu: GpuConfig, queue_on: bool
) -> Iterator[ConfigProblem]:
    """Checks that could not run as asked. Paths relative to the stack."""
    if health.schedule is None:
        for key in sorted(health.model_fields_set - {"schedule"}):
            camel = "timeZone" if key == "time_zone" else key
            yield ConfigProblem(
                ("health", camel),
                "is read only with a schedule, and health.schedule is not set: it would do nothing",
                f'set health.schedule (e.g. "0 4 * * 0"), or remove health.{camel}',
            )
            return
        return
    if gpu.max_nodes < 1:
        return  # parked: nothing is checked until the pool has nodes again
    if not queue_on:
        yield ConfigProblem(
            ("health", "schedule"),
            "the checks run through the job queue, so that one never takes the GPUs from a"
            " run, and the queue is off here (kueue.enabled)",
            "set kueue.enabled: true, or remove health.schedule",
        )
        return
    can = available_checks(gpu)
    for i, key in enumerate(health.checks or []):
        if key not in can:
            why = (
                f"needs RDMA NICs, which {gpu.profile.machine_type} lacks"
                if gpu.profile.rdma_nics == 0
                else "needs two GPU nodes or more (on one node NCCL goes over NVLink)"
            )
            yield ConfigProblem(
                ("health", "checks", i),
                f"the {key} check {why}: it would never run",
                f"remove {key} from health.checks (this pool can run: {', '.join(can)})",
            )
            return
