"""The GKE control plane's config: version, system pool, maintenance, and the GKE minimums
the rest of the stack depends on."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Annotated, Literal, Self, cast

from pydantic import AfterValidator, Field, model_validator

from planning.cluster import FULL_VERSION_PATTERN, MAX_NODE_SKEW, minor_of, minors_between
from planning.versions import GKE_END_OF_SUPPORT, VERSIONS, gke_at_least
from stack_config.base import ConfigModel, check_bounds
from stack_config.errors import ConfigProblem
from stack_config.times import occurrences, parse_rfc3339, parse_rrule


def _rfc3339(value: str) -> datetime:
    return parse_rfc3339(value)


Rfc3339 = Annotated[str, AfterValidator(lambda v: (_rfc3339(v), v)[1])]

NO_UPGRADES_MAX = timedelta(days=30)
"""GKE: a NO_UPGRADES exclusion lasts at most 30 days; only the minor-upgrade scopes may run
until the version's end of support."""
MIN_AVAILABILITY = timedelta(hours=48)
AVAILABILITY_PERIOD = timedelta(days=32)
"""GKE: the maintenance policy must leave at least 48 hours of maintenance availability in any
32-day rolling period, counting windows of 4 hours or more."""
MIN_WINDOW = timedelta(hours=4)


def least_availability(
    start: datetime, end: datetime, recurrence: str, horizon: timedelta = timedelta(days=400)
) -> tuple[timedelta, datetime]:
    """The fewest window hours in any 32 days (from `start` over `horizon`), and where.

    The RRULE is evaluated by dateutil's RFC 5545 implementation, within bounds
    (`stack_config.times`); overlapping occurrences merge into one stretch of availability.
    """
    rule = parse_rrule(recurrence, start)
    length = end - start
    stretches: list[tuple[datetime, datetime]] = []
    for begin in occurrences(rule, start, horizon):
        if stretches and begin <= stretches[-1][1]:
            stretches[-1] = (stretches[-1][0], max(stretches[-1][1], begin + length))
        else:
            stretches.append((begin, begin + length))
    last_start = start + horizon - AVAILABILITY_PERIOD
    # The covered time of a sliding period is least just after a stretch ends or just before
    # one begins: look at those moments (and at the start).
    candidates = {start}
    for begin, finish in stretches:
        candidates.update({finish, begin - AVAILABILITY_PERIOD})
    least, where = AVAILABILITY_PERIOD, start
    for moment in sorted(c for c in candidates if start <= c <= last_start):
        period_end = moment + AVAILABILITY_PERIOD
        covered = sum(
            (min(finish, period_end) - max(begin, moment) for begin, finish in stretches
             if begin < period_end and finish > moment and finish - begin >= MIN_WINDOW),
            timedelta(),
        )  # fmt: skip
        if covered < least:
            least, where = covered, moment
    return least, where


class SystemPoolConfig(ConfigModel):
    """CPU pool for the Ray head, the KubeRay operator and add-ons."""

    machine_type: str = Field(
        "n2-highmem-16",
        pattern=r"^[a-z][a-z0-9]*-[a-z0-9-]+$",
        description="Machine type; the Ray head needs about 12 vCPU / 96 GiB.",
    )
    min: int = Field(1, ge=0, le=100, description="Fewest system nodes.")
    max: int = Field(3, ge=1, le=100, description="Most system nodes.")
    disk_gb: int = Field(
        200, ge=50, le=4000, description="Boot disk size; NeMo RL images are about 25 GB."
    )
    recreate_nodes_as: str | None = Field(
        None,
        description="`MACHINE/DISKgb` whose change of machine type or disk the user accepts:"
        " GKE recreates every system node, the Ray head and its jobs with them.",
    )
    version: str | None = Field(
        None,
        pattern=FULL_VERSION_PATTERN,
        description="Full GKE version the system nodes run (e.g. 1.35.8-gke.1036000); unset:"
        " they stay on the version they were created at. Raise it after cluster.minVersion.",
    )

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        check_bounds(self.min, self.max)
        return self


class MaintenanceConfig(ConfigModel):
    """When GKE may maintain the cluster, and which upgrades wait for a quiet moment."""

    window_start: Rfc3339 = Field(
        "2026-01-03T04:00:00Z", description="Start of the recurring window (RFC 3339, UTC)."
    )
    window_end: Rfc3339 = Field(
        "2026-01-03T12:00:00Z", description="End of the first occurrence of the window."
    )
    recurrence: str = Field(
        "FREQ=WEEKLY;BYDAY=SA,SU",
        pattern=r"^FREQ=(DAILY|WEEKLY)(;.*)?$",
        description="RFC 5545 RRULE of the window.",
    )
    block_upgrades: bool = Field(
        True,
        description="Add a maintenance exclusion until end of support so GKE never recreates GPU"
        " nodes mid-run; upgrade on purpose instead.",
    )
    exclusion_scope: Literal["NO_UPGRADES", "NO_MINOR_UPGRADES", "NO_MINOR_OR_NODE_UPGRADES"] = (
        Field("NO_MINOR_OR_NODE_UPGRADES", description="What the exclusion blocks.")
    )
    exclusion_start: Rfc3339 = Field(
        "2026-01-01T00:00:00Z", description="When the exclusion starts (RFC 3339, UTC)."
    )
    exclusion_end: Rfc3339 | None = Field(
        None,
        description="When the exclusion ends (RFC 3339, UTC). Unset: at the version's end of"
        " support, which only the minor scopes allow; NO_UPGRADES needs an end at most 30 days"
        " after exclusionStart.",
    )

    @model_validator(mode="after")
    def _rules(self) -> Self:
        for problem in self._problems():
            raise problem
        return self

    def _problems(self) -> Iterator[ConfigProblem]:
        start, end = _rfc3339(self.window_start), _rfc3339(self.window_end)
        if end - start < MIN_WINDOW:
            yield ConfigProblem(
                ("windowEnd",),
                "the maintenance window must last at least 4 hours",
                "move windowEnd at least 4 hours after windowStart",
            )
            return
        try:
            least, where = least_availability(start, end, self.recurrence)
        except ConfigProblem as problem:
            yield ConfigProblem(("recurrence",), problem.problem, problem.fix)
            return
        except (ValueError, TypeError) as err:
            yield ConfigProblem(
                ("recurrence",),
                f"{self.recurrence!r} is not an RFC 5545 recurrence rule ({err})",
                "write it like FREQ=WEEKLY;BYDAY=SA,SU",
            )
            return
        if least < MIN_AVAILABILITY:
            hours = least.total_seconds() / 3600
            each = (end - start).total_seconds() / 3600
            yield ConfigProblem(
                ("recurrence",),
                f"{each:g}-hour windows ({self.recurrence}) give {hours:g} hours of maintenance"
                f" in the 32 days from {where:%Y-%m-%d}; GKE requires at least 48 hours in any"
                " 32 days",
                "make the windows longer (windowEnd) or more frequent (recurrence), e.g. 8 hours"
                " with FREQ=WEEKLY;BYDAY=SA,SU",
            )
        if self.block_upgrades:
            yield from self._exclusion_problems()

    def _exclusion_problems(self) -> Iterator[ConfigProblem]:
        begin = _rfc3339(self.exclusion_start)
        latest = (begin + NO_UPGRADES_MAX).strftime("%Y-%m-%dT%H:%M:%SZ")
        if self.exclusion_end is None:
            if self.exclusion_scope == "NO_UPGRADES":
                yield ConfigProblem(
                    ("exclusionScope",),
                    "a NO_UPGRADES exclusion lasts at most 30 days; only NO_MINOR_UPGRADES and"
                    " NO_MINOR_OR_NODE_UPGRADES can last until the version's end of support",
                    f"set cluster.maintenance.exclusionEnd to {latest} or earlier, or use"
                    " exclusionScope NO_MINOR_OR_NODE_UPGRADES",
                )
            return
        finish = _rfc3339(self.exclusion_end)
        if finish <= begin:
            yield ConfigProblem(
                ("exclusionEnd",),
                f"{self.exclusion_end} is not after exclusionStart {self.exclusion_start}",
                "move exclusionEnd after exclusionStart",
            )
        elif self.exclusion_scope == "NO_UPGRADES" and finish - begin > NO_UPGRADES_MAX:
            yield ConfigProblem(
                ("exclusionEnd",),
                f"a NO_UPGRADES exclusion lasts at most 30 days; {self.exclusion_start} to"
                f" {self.exclusion_end} is {(finish - begin).days} days",
                f"set cluster.maintenance.exclusionEnd to {latest} or earlier, or use"
                " exclusionScope NO_MINOR_OR_NODE_UPGRADES (until end of support)",
            )


class ClusterConfig(ConfigModel):
    """GKE control plane: version, system pool and maintenance policy."""

    release_channel: Literal["RAPID", "REGULAR", "STABLE", "EXTENDED"] = Field(
        cast(Literal["REGULAR"], VERSIONS.gke_release_channel.value),
        description="GKE release channel.",
    )
    min_version: str = Field(
        VERSIONS.gke_cluster_version.value,
        pattern=r"^\d+\.\d+(\.\d+(-gke\.\d+)?)?$",
        description="Minimum control-plane version (prefix like 1.35 or a full GKE version);"
        " must satisfy the GPU, flex-start and Lustre minimums.",
    )
    system_pool: SystemPoolConfig = Field(
        default_factory=SystemPoolConfig, description="CPU node pool."
    )
    maintenance: MaintenanceConfig = Field(
        default_factory=MaintenanceConfig, description="Maintenance window and exclusion."
    )

    @model_validator(mode="after")
    def _exclusion_within_support(self) -> Self:
        # GKE refuses a minor-upgrade exclusion that outlasts the minor's end of support.
        maintenance = self.maintenance
        eos = GKE_END_OF_SUPPORT.get(".".join(map(str, minor_of(self.min_version))))
        if (
            eos is None
            or not maintenance.block_upgrades
            or maintenance.exclusion_scope == "NO_UPGRADES"
            or maintenance.exclusion_end is None
        ):
            return self
        end = _rfc3339(maintenance.exclusion_end)
        limit = _rfc3339(f"{eos.value}T23:59:59Z")
        if end > limit:
            raise ConfigProblem(
                ("maintenance", "exclusionEnd"),
                f"{maintenance.exclusion_end} is after the end of support of GKE"
                f" {'.'.join(map(str, minor_of(self.min_version)))} ({eos.value}), where a"
                f" {maintenance.exclusion_scope} exclusion must end (GKE refuses a later end)",
                f"set cluster.maintenance.exclusionEnd to {eos.value}T00:00:00Z or earlier, or"
                " remove it (the exclusion then lasts until end of support)",
            )
        return self


_NODES_FROZEN = ("NO_MINOR_OR_NODE_UPGRADES", "NO_UPGRADES")
"""Exclusion scopes that keep GKE from upgrading nodes (NO_MINOR_UPGRADES lets patches in)."""


def _pin_fights_upgrades(
    maintenance: MaintenanceConfig, system: str | None, gpu_version: str | None
) -> Iterator[ConfigProblem]:
    """A pool version where GKE may upgrade the nodes: auto-upgrade cannot be turned off in a
    release channel, pulumi-gcp reads the version back (its docs: the two "will fight each
    other"), so the refresh after GKE's upgrade plans a downgrade of every node."""
    if maintenance.block_upgrades and maintenance.exclusion_scope in _NODES_FROZEN:
        return
    why = (
        "cluster.maintenance.blockUpgrades is false"
        if not maintenance.block_upgrades
        else f"exclusionScope {maintenance.exclusion_scope} lets node patches through"
    )
    for path, version in (
        (("cluster", "systemPool", "version"), system),
        (("gpu", "version"), gpu_version),
    ):
        if version is not None:
            yield ConfigProblem(
                path,
                f"{version} pins the pool while GKE upgrades its nodes ({why}): pulumi-gcp reads"
                " the version back, so the refresh after GKE's upgrade plans a downgrade that"
                " recreates every node",
                "unset it and let GKE move the pool, or keep the nodes frozen"
                " (cluster.maintenance.blockUpgrades: true, exclusionScope"
                " NO_MINOR_OR_NODE_UPGRADES) and move them with this key",
            )


def pool_version_problems(
    cluster: ClusterConfig, gpu_version: str | None
) -> Iterator[ConfigProblem]:
    """Pools move after the control plane, the GPU pool last: neither may be on a newer minor
    than `cluster.minVersion`, nor the GPU pool newer than the system pool it follows. A pool
    version is a pin only where the maintenance exclusion keeps GKE off the nodes."""
    control_plane = cluster.min_version
    system = cluster.system_pool.version
    yield from _pin_fights_upgrades(cluster.maintenance, system, gpu_version)
    for path, version in (
        (("cluster", "systemPool", "version"), system),
        (("gpu", "version"), gpu_version),
    ):
        behind = minors_between(version, control_plane) if version is not None else 0
        if behind > MAX_NODE_SKEW:
            yield ConfigProblem(
                path,
                f"{version} is {behind} minors behind the control plane (cluster.minVersion"
                f" {control_plane}); GKE lets nodes trail it by at most {MAX_NODE_SKEW}",
                f"move {'.'.join(path)} to a {control_plane} version (docs/runbook.md, Upgrading"
                " GKE)",
            )
        if version is not None and minor_of(version) > minor_of(control_plane):
            yield ConfigProblem(
                path,
                f"{version} is newer than the control plane (cluster.minVersion {control_plane});"
                " GKE never runs nodes newer than their control plane",
                f"raise cluster.minVersion to {'.'.join(map(str, minor_of(version)))} first (or"
                " with it, in the same update: the control plane moves before the pools)",
            )
    if system is not None and gpu_version is not None and minor_of(gpu_version) > minor_of(system):
        yield ConfigProblem(
            ("gpu", "version"),
            f"{gpu_version} is newer than the system pool's {system}; the GPU pool moves last",
            "raise cluster.systemPool.version to that minor first (docs/runbook.md, Upgrading GKE)",
        )


def gke_version_problems(
    cluster: ClusterConfig, minimums: dict[str, str], gpu_version: str | None = None
) -> Iterator[ConfigProblem]:
    """cluster.minVersion, and the GPU pool's version where it is pinned (its nodes run the
    GPUs, the NICs and the mounts), must satisfy every GKE minimum the stack depends on
    (`minimums`: reason -> version). Paths are relative to the stack."""
    for reason, minimum in minimums.items():
        if gpu_version is not None and not gke_at_least(gpu_version, minimum):
            yield ConfigProblem(
                ("gpu", "version"),
                f"{gpu_version} is older than {minimum}, the minimum for {reason}",
                f"set gpu.version to a {minimum} or newer node version, or unset it",
            )
        if not gke_at_least(cluster.min_version, minimum):
            yield ConfigProblem(
                ("cluster", "minVersion"),
                f"{cluster.min_version} is older than {minimum}, the minimum for {reason}",
                f"set cluster.minVersion to {minimum} or newer (Google's blueprints use"
                f" {VERSIONS.gke_cluster_version.value})",
            )
