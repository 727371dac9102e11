"""The GPU node pool's config: which GPU, how many nodes, how the capacity is bought.

Every rule here judges the pool alone; rules that need the rest of the stack (the address
plan's room for the pool, the job's size) sit with that config.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal, Self, cast

from pydantic import Field, model_validator

from planning.catalog import Capacity, GpuProfile, GpuType, profile
from planning.cluster import FULL_VERSION_PATTERN
from planning.network import GPU_MAX_PODS_PER_NODE
from planning.reservation import ReservationPath, parse_reservation
from planning.versions import VERSIONS
from stack_config.base import PROJECT_ID_PATTERN, ConfigModel, check_bounds
from stack_config.errors import ConfigProblem, show

MAX_NODES_PER_POOL_ZONE = 1000
"""GKE quota: nodes per node pool per zone (https://cloud.google.com/kubernetes-engine/quotas)."""

RESERVATION_FORMS = (
    "NAME, NAME/reservationBlocks/BLOCK or NAME/reservationBlocks/BLOCK/reservationSubBlocks/SUB"
)
DriverVersion = Literal["DEFAULT", "LATEST"]


class Autoscaling(ConfigModel):
    """Cluster-autoscaler bounds for the GPU pool, in nodes of the single GPU zone."""

    min: int = Field(0, ge=0, le=MAX_NODES_PER_POOL_ZONE, description="Fewest GPU nodes.")
    max: int = Field(ge=1, le=MAX_NODES_PER_POOL_ZONE, description="Most GPU nodes.")

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        check_bounds(self.min, self.max)
        return self


class GpuConfig(ConfigModel):
    """The GPU node pool: which GPU, how many nodes, and how the capacity is bought."""

    type: GpuType = Field(description="Key into the GPU catalog: b200, h200 or l4.")
    nodes: int | None = Field(
        None,
        ge=0,
        le=MAX_NODES_PER_POOL_ZONE,
        description="Fixed number of GPU nodes (exclusive with autoscaling).",
    )
    autoscaling: Autoscaling | None = Field(
        None, description="Autoscaling bounds {min, max} (exclusive with nodes)."
    )
    capacity: Capacity = Field(
        description="How the VMs are obtained: reservation, spot, flex-start or on-demand."
    )
    reservation: str | None = Field(
        None,
        max_length=250,
        description=f"Reservation {RESERVATION_FORMS}; required exactly when capacity is"
        " reservation.",
    )
    reservation_project: str | None = Field(
        None,
        pattern=PROJECT_ID_PATTERN,
        description="Project that owns a shared reservation (omit for the stack's own project).",
    )
    check_reservation: bool = Field(
        True,
        description="Read the reservation (and its block or sub-block) during the preview and"
        " stop the plan when its machine type, GPUs, zone or free VMs cannot hold the pool. Needs"
        " compute.reservations.get on the reservation's project (and container.clusters.get)."
        " false skips the check, e.g. for an identity that may not read a shared reservation.",
    )
    placement: Literal["compact", "none"] = Field(
        "none", description="compact asks GCE to place the nodes close together (single zone)."
    )
    max_pods_per_node: int = Field(
        GPU_MAX_PODS_PER_NODE,
        ge=8,
        le=256,
        description="Pods per GPU node; sets each node's share of the pods range (32 -> a /26)."
        " Fixed when the pool is created: a pool made before the 32 default keeps GKE's 110 (set"
        " 110 here so the address plan is checked as it is); changing it later needs a new pool.",
    )
    version: str | None = Field(
        None,
        pattern=FULL_VERSION_PATTERN,
        description="Full GKE version the GPU nodes run (e.g. 1.35.8-gke.1036000); unset: they"
        " stay on the version they were created at. Changing it recreates every GPU node: it is"
        " the consent to that, given after the control plane and the system pool moved.",
    )
    driver_version: DriverVersion = Field(
        cast(DriverVersion, VERSIONS.gpu_driver_version.value),
        description="NVIDIA driver GKE installs: DEFAULT or LATEST for the node version.",
    )

    @property
    def profile(self) -> GpuProfile:
        """The catalog row for this GPU type."""
        return profile(self.type)

    @property
    def reservation_path(self) -> ReservationPath | None:
        """The reservation named, with its block and sub-block (None without one)."""
        return parse_reservation(self.reservation) if self.reservation else None

    @property
    def max_nodes(self) -> int:
        """Most nodes the pool can have: the fixed size or the autoscaling maximum."""
        if self.autoscaling is not None:
            return self.autoscaling.max
        return self.nodes or 0

    @model_validator(mode="after")
    def _rules(self) -> Self:
        for problem in self._problems():
            raise problem
        return self

    def _problems(self) -> Iterator[ConfigProblem]:
        if (self.nodes is None) == (self.autoscaling is None):
            yield ConfigProblem(
                ("nodes",),
                "set exactly one of nodes (fixed size) or autoscaling {min, max}",
                "keep one of nodes / autoscaling and remove the other",
            )
        if self.capacity == "reservation" and not self.reservation:
            yield ConfigProblem(
                ("reservation",),
                "required when capacity is 'reservation'",
                "pulumi config set --path 'nemo-rl-gke:gpu.reservation' RESERVATION_NAME"
                " (or NAME/reservationBlocks/BLOCK[/reservationSubBlocks/SUB])",
            )
        if self.capacity != "reservation" and self.reservation:
            yield ConfigProblem(
                ("reservation",),
                f"only used with capacity 'reservation' (capacity is '{self.capacity}';"
                " Spot and flex-start VMs cannot consume reservations)",
                "remove gpu.reservation or set gpu.capacity to reservation",
            )
        if self.reservation and parse_reservation(self.reservation) is None:
            yield ConfigProblem(
                ("reservation",),
                f"{show(self.reservation)} is not {RESERVATION_FORMS} with names GCE accepts"
                " (1-63 of a-z, 0-9 and -)",
                "use the reservation's short name, not a URL (the project goes in"
                " gpu.reservationProject)",
            )
        if self.reservation_project and not self.reservation:
            yield ConfigProblem(
                ("reservationProject",),
                "only used together with gpu.reservation",
                "remove gpu.reservationProject or set gpu.reservation",
            )
        row = self.profile
        if self.capacity not in row.capacity_types:
            sold = ", ".join(sorted(row.capacity_types))
            yield ConfigProblem(
                ("capacity",),
                f"{row.machine_type} is not sold as '{self.capacity}' (available: {sold})",
                f"set gpu.capacity to one of: {sold}",
            )
        if self.placement == "compact" and self.capacity == "reservation":
            yield ConfigProblem(
                ("placement",),
                "compact placement is not used with a reservation: the reservation's blocks already"
                " fix the topology",
                "set gpu.placement to none, or target a block with"
                " gpu.reservation NAME/reservationBlocks/BLOCK",
            )
        if (
            self.placement == "compact"
            and self.capacity == "flex-start"
            and self.type not in ("b200", "h200")
        ):
            yield ConfigProblem(
                ("placement",),
                f"compact placement with flex-start is only offered for A4 and A3 Ultra, not"
                f" {row.machine_type}",
                "set gpu.placement to none",
            )
        if self.capacity == "flex-start" and (
            self.autoscaling is None or self.autoscaling.min != 0
        ):
            yield ConfigProblem(
                ("autoscaling",),
                "flex-start pools must autoscale from 0 (GKE provisions flex-start nodes"
                " on demand)",
                "replace gpu.nodes with gpu.autoscaling {min: 0, max: N}",
            )
