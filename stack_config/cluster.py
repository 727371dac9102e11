"""The GKE control plane's config: version, system pool, maintenance, and the GKE minimums
the rest of the stack depends on."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Annotated, Literal, Self, cast

from pydantic import AfterValidator, Field, model_validator

from planning.versions import VERSIONS, gke_at_least
from stack_config.base import ConfigModel, check_bounds
from stack_config.errors import ConfigProblem, show

_GO_TIME = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d+)? [+-]\d{4} \S+")


def _rfc3339(value: str) -> datetime:
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        # An unquoted YAML timestamp reaches the program as Go's time text
        # ("2026-01-03 04:00:00 +0000 UTC"): the CLI decodes it as a time, then prints it.
        unquoted = _GO_TIME.fullmatch(value) is not None
        raise ConfigProblem(
            (),
            f"{show(value)} is not an RFC 3339 time"
            + (" (the Pulumi CLI rewrote an unquoted YAML timestamp)" if unquoted else ""),
            'write it like "2026-01-03T04:00:00Z", in quotes',
        ) from None


Rfc3339 = Annotated[str, AfterValidator(lambda v: (_rfc3339(v), v)[1])]


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

    @model_validator(mode="after")
    def _window(self) -> Self:
        start, end = _rfc3339(self.window_start), _rfc3339(self.window_end)
        if end - start < timedelta(hours=4):
            raise ConfigProblem(
                ("windowEnd",),
                "the maintenance window must last at least 4 hours",
                "move windowEnd at least 4 hours after windowStart",
            )
        return self


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


def gke_version_problems(
    cluster: ClusterConfig, minimums: dict[str, str]
) -> Iterator[ConfigProblem]:
    """cluster.minVersion must satisfy every GKE minimum the stack depends on (`minimums`:
    reason -> version). Paths are relative to the stack."""
    for reason, minimum in minimums.items():
        if not gke_at_least(cluster.min_version, minimum):
            yield ConfigProblem(
                ("cluster", "minVersion"),
                f"{cluster.min_version} is older than {minimum}, the minimum for {reason}",
                f"set cluster.minVersion to {minimum} or newer (Google's blueprints use"
                f" {VERSIONS.gke_cluster_version.value})",
            )
