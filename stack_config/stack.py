"""The whole stack: every concern's config, and the rules that cross concerns.

Each concern's model and its rules live in its own module (`gpu_pool`, `network_plan`,
`storage`, `cluster`, `ray_job`, `gates`); `StackConfig` ties them together and runs the
cross-concern rules in a fixed order, so the first problem reported is always the same one.
`gcp:project` and `gcp:region` live in the provider namespace, everything else under
`nemo-rl-gke:`.
"""

from __future__ import annotations

from collections.abc import Iterator
from ipaddress import IPv4Network
from typing import Any, Self

from pydantic import Field, field_validator, model_validator

from planning.health import HealthCheck
from planning.naming import BASE_NAME_PATTERN, Names
from planning.ray import GrpoRun
from planning.verify import GateSettings
from planning.versions import VERSIONS
from stack_config import ray as ray_job
from stack_config import verify as gates
from stack_config.base import PROJECT_ID_PATTERN, ConfigModel
from stack_config.cluster import ClusterConfig, gke_version_problems, pool_version_problems
from stack_config.errors import ConfigProblem
from stack_config.gpu_pool import GpuConfig
from stack_config.health import HealthConfig, health_problems, scheduled_checks
from stack_config.labels import label_format_problem
from stack_config.network import (
    NetworkConfig,
    address_plan_problems,
    planned_rdma_cidrs,
    rdma_devices,
    rdma_path_problems,
)
from stack_config.queue import (
    QueueConfig,
    admits_own_workload_problems,
    queue_enabled,
    queue_problems,
    unused_queue_key_problems,
)
from stack_config.ray import RayConfig
from stack_config.secrets import SECRET_KEYS as SECRET_KEYS  # re-exported; defined in secrets.py
from stack_config.storage import (
    BucketConfig,
    LustreConfig,
    bucket_name_problem,
    shared_storage_problems,
)
from stack_config.verify import VerifyConfig

REGION_PATTERN = r"^[a-z]+-[a-z]+[0-9]+$"
ZONE_PATTERN = r"^[a-z]+-[a-z]+[0-9]+-[a-z]$"


class StackConfig(ConfigModel):
    """Everything one stack needs, validated per field and across fields."""

    project: str = Field(
        alias="gcp:project", pattern=PROJECT_ID_PATTERN, description="GCP project."
    )
    region: str = Field(alias="gcp:region", pattern=REGION_PATTERN, description="GCP region.")
    zone: str = Field(
        pattern=ZONE_PATTERN,
        description="GPU zone: RDMA network profile, GPU node locations and Lustre.",
    )
    name: str = Field(
        pattern=BASE_NAME_PATTERN,
        description="Base name of cloud resources (default nemo-rl-<stack>).",
    )
    protect: bool = Field(
        True,
        description="Protect stateful resources (cluster, Lustre, buckets) from deletion.",
    )
    protection_lift: str | None = Field(
        None,
        pattern=r"^([a-z][a-z0-9_-]{0,62})?$",
        description="Why protection is lifted, with protect false, for one deliberate change on a"
        " stack the policy pack keeps protected (e.g. lustre-throughput): labels the cluster,"
        " Lustre and the bucket so the pack takes the lift as that step. Unset it when protect"
        " is true again.",
    )
    labels: dict[str, str] = Field(
        default_factory=dict, description="Extra labels put on every labelable resource."
    )
    enable_apis: bool = Field(
        True,
        description="Enable the Google APIs the stack uses (projects.Service, never disabled on"
        " destroy) before anything that calls them; false leaves them to the project owner.",
    )
    gpu: GpuConfig = Field(description="GPU node pool.")
    network: NetworkConfig = Field(default_factory=NetworkConfig, description="Address plan.")
    lustre: LustreConfig = Field(default_factory=LustreConfig, description="Managed Lustre.")
    cluster: ClusterConfig = Field(default_factory=ClusterConfig, description="GKE cluster.")
    bucket: BucketConfig = Field(default_factory=BucketConfig, description="GCS FUSE bucket.")
    ray: RayConfig = Field(default_factory=RayConfig, description="Ray platform.")
    verify: VerifyConfig = Field(
        default_factory=VerifyConfig, description="Acceptance gates after the platform is up."
    )
    kueue: QueueConfig = Field(
        default_factory=QueueConfig, description="Kueue: the job queue in front of the GPUs."
    )
    health: HealthConfig = Field(
        default_factory=HealthConfig,
        description="Scheduled health checks of the GPU pool (off without a schedule).",
    )

    @property
    def names(self) -> Names:
        """GCP names derived from the base name."""
        return Names(self.name)

    @property
    def workload_service_account(self) -> str:
        """The Ray pods' Kubernetes service account: configured, or the stack's own."""
        return self.ray.service_account or self.names.workload_service_account

    @property
    def rdma_cidrs(self) -> list[IPv4Network]:
        """The RDMA subnets: as configured, or planned right after the gVNIC subnet."""
        return planned_rdma_cidrs(self.network, self.gpu)

    @property
    def dranet(self) -> bool:
        """Whether GPU pods reach their RDMA NICs through GKE managed DRANET."""
        return self.network.rdma == "dranet" and self.gpu.profile.rdma_nics > 0

    @property
    def rdma_devices(self) -> int:
        """RDMA NICs each GPU pod claims under DRANET."""
        return rdma_devices(self.network, self.gpu)

    @property
    def bucket_name(self) -> str:
        """The bucket's name: configured, or `<project>-<name>-data`."""
        return self.bucket.name or f"{self.project}-{self.name}-data"[:63].rstrip("-")

    @property
    def network_profile(self) -> str:
        """The zonal RoCE network profile (the tutorial's region form is a doc bug)."""
        return f"projects/{self.project}/global/networkProfiles/{self.zone}-vpc-roce"

    @property
    def verify_enabled(self) -> bool:
        """verify.enabled, defaulting to on where the GPUs have RDMA NICs."""
        return gates.verify_enabled(self.verify, self.gpu)

    @property
    def gate_settings(self) -> GateSettings:
        """The verify settings as planning.verify takes them (gates off when verify is off)."""
        return gates.gate_settings(self.verify, self.gpu)

    @property
    def queue_enabled(self) -> bool:
        """kueue.enabled, defaulting to on where the GPUs have RDMA NICs."""
        return queue_enabled(self.kueue, self.gpu)

    @property
    def health_checks(self) -> list[HealthCheck]:
        """The scheduled health checks that run (none without health.schedule)."""
        return scheduled_checks(self.health, self.gpu)

    @property
    def grpo_run(self) -> GrpoRun:
        """The GRPO run the job (or the submit command) starts, defaults resolved."""
        return ray_job.grpo_run(self.ray, self.gpu)

    @property
    def legacy_lustre_port(self) -> bool:
        """The cluster's legacy-port flag: on exactly when the instance has GKE support."""
        return self.lustre.enabled and self.lustre.gke_support

    def required_gke_minimums(self) -> dict[str, str]:
        """Every GKE minimum this stack depends on, keyed by the reason."""
        needs = {
            f"{self.gpu.profile.machine_type} GPUs": self.gpu.profile.min_gke_version,
            "the KUBELET and CADVISOR metrics the cluster sends to Cloud Monitoring": (
                VERSIONS.gke_min_kubelet_cadvisor_metrics.value
            ),
        }
        if self.dranet:
            needs["GKE managed DRANET (network.rdma dranet)"] = VERSIONS.gke_min_dranet.value
        if self.gpu.capacity == "flex-start":
            needs["flex-start"] = VERSIONS.gke_min_flex_start.value
        if self.lustre.enabled and not self.lustre.gke_support:
            needs["Lustre on port 988 (no legacy port)"] = VERSIONS.gke_min_lustre_port_988.value
        return needs

    @field_validator("labels", mode="before")
    @classmethod
    def _labels(cls, value: Any) -> Any:
        # Before pydantic walks the map: a map of a million entries stops at its size.
        if isinstance(value, dict):
            problem = label_format_problem(value)
            if problem is not None:
                raise problem
        return value

    @model_validator(mode="after")
    def _cross_checks(self) -> Self:
        for problem in self._problems():
            raise problem
        return self

    def _problems(self) -> Iterator[ConfigProblem]:
        """The cross-concern rules, in the order their problems are reported."""
        zone_region = self.zone.rsplit("-", 1)[0]
        if zone_region != self.region:
            yield ConfigProblem(
                ("zone",),
                f"zone {self.zone} is not in region {self.region}",
                f"pick a zone of {self.region} (e.g. {self.region}-b) or change gcp:region to"
                f" {zone_region}",
            )
        if self.protection_lift and self.protect:
            yield ConfigProblem(
                ("protectionLift",),
                f"{self.protection_lift!r} does nothing while protect is true",
                "set protect false with it to lift protection (docs/runbook.md), or unset it",
            )
        yield from rdma_path_problems(self.network, self.gpu)
        yield from gke_version_problems(
            self.cluster, self.required_gke_minimums(), self.gpu.version
        )
        yield from pool_version_problems(self.cluster, self.gpu.version)
        yield from shared_storage_problems(self.lustre, self.bucket)
        if self.bucket.enabled:
            problem = bucket_name_problem(self.bucket_name)
            if problem:
                yield ConfigProblem(
                    ("bucket", "name"),
                    f"{self.bucket_name}"
                    + ("" if self.bucket.name else " (the default, <project>-<name>-data)")
                    + f": {problem}",
                    "set bucket.name to a name without it (3-63 of a-z, 0-9, - and _)",
                )
        yield from ray_job.job_fits_pool_problems(self.ray, self.gpu)
        yield from ray_job.batch_problems(self.ray, self.gpu)
        yield from gates.smoke_problems(self.verify, self.gpu)
        yield from gates.threshold_problems(self.verify, self.gpu, self.lustre.enabled)
        yield from gates.unused_gate_problems(self.verify, self.gpu, frozenset(self.health_checks))
        yield from queue_problems(self.kueue, self.gpu, self.cluster.system_pool.machine_type)
        yield from unused_queue_key_problems(self.kueue, self.gpu)
        yield from health_problems(self.health, self.gpu, self.queue_enabled)
        yield from ray_job.unused_chart_problems(self.ray)
        yield from ray_job.keep_failed_problems(self.ray, self.gpu, self.queue_enabled)
        yield from gates.timeout_problems(self.verify)
        yield from admits_own_workload_problems(
            self.kueue,
            self.gpu,
            self.gpu.autoscaling.min if self.gpu.autoscaling else self.gpu.max_nodes,
            self.grpo_run.nodes * self.grpo_run.gpus_per_node if self.ray.job.enabled else None,
        )
        yield from ray_job.head_fits_problems(self.ray, self.cluster.system_pool.machine_type)
        yield from ray_job.image_driver_problems(self.gpu)
        yield from address_plan_problems(
            self.network, self.gpu, self.cluster.system_pool.max, self.lustre.enabled
        )
