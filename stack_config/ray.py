"""The Ray platform's config: operator, the workload's identity, the RayCluster's head and
the GRPO job, with the rules that tie the job to the GPU pool and the image to the driver."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Final, Literal, Self

from pydantic import AfterValidator, Field, field_validator, model_validator

from planning.queue import gke_allocatable, machine_shape
from planning.ray import IMAGE_CUDA, RUN_ID_LENGTH, GrpoRun, image_tag
from planning.ray_logs import LOG_TARGETS, SHIPPER_CPU_MILLIS, SHIPPER_MEMORY_MIB, LogTarget
from planning.ray_sizes import describe_shapes, divides_batch, shapes_that_fit
from planning.versions import VERSIONS
from stack_config.base import ConfigModel
from stack_config.errors import ConfigProblem
from stack_config.gpu_pool import MAX_NODES_PER_POOL_ZONE, GpuConfig
from stack_config.local_chart import check_pinned_chart
from stack_config.text_rules import PATH_SEGMENT, hf_model_id, hydra_word

MAX_RAYJOB_NAME: Final = 47
"""KubeRay refuses longer RayJob names: MaxRayJobNameLength = MaxRayClusterNameLength (53) - 6,
the suffix of the RayCluster it creates (ray-operator controllers/ray/utils/constant.go)."""


class HeadConfig(ConfigModel):
    """Ray head pod (on the system pool)."""

    cpu: int = Field(12, ge=1, le=400, description="vCPUs (requests = limits).")
    memory_gib: int = Field(96, ge=4, le=4000, description="Memory in GiB (requests = limits).")


class JobConfig(ConfigModel):
    """The NeMo RL GRPO RayJob on GSM8K. Off unless asked: `pulumi up` never starts training
    by itself."""

    enabled: bool = Field(False, description="Create the RayJob (starts a training run).")
    name: str = Field(
        "grpo-gsm8k",
        pattern=r"^[a-z]([-a-z0-9]{0,36}[a-z0-9])?$",
        description="Base of the RayJob's name, <name>-<runId>[-a<attempt>] (DNS-1035; KubeRay"
        " takes at most 47 characters in all, so at most 38 here).",
    )
    config: str | None = Field(
        None,
        pattern=rf"^examples/configs/({PATH_SEGMENT}/)*{PATH_SEGMENT}\.yaml$",
        max_length=200,
        description="NeMo RL config inside the image (default from the GPU catalog).",
    )
    model: Annotated[str, AfterValidator(hf_model_id)] | None = Field(
        None,
        description="Hugging Face model id (default from the GPU catalog).",
    )
    steps: int = Field(
        10,
        ge=1,
        le=1_000_000,
        description="grpo.max_num_steps (the run asks for the epochs they need).",
    )
    nodes: int | None = Field(
        None,
        ge=1,
        le=MAX_NODES_PER_POOL_ZONE,
        description="cluster.num_nodes (default: GPU nodes).",
    )
    gpus_per_node: int | None = Field(
        None, ge=1, le=8, description="cluster.gpus_per_node (default: the node's GPUs)."
    )
    runs_dir: str = Field(
        "/data/nemo-rl/runs",
        pattern=rf"^/data(/{PATH_SEGMENT})+$",
        max_length=200,
        description="Folder on the shared volume (/data) holding one directory per run"
        " (<name>-<runId>/checkpoints and /logs).",
    )
    run_id: str | None = Field(
        None,
        pattern=r"^[a-z0-9]([-a-z0-9]{0,8}[a-z0-9])?$",
        description="Pin the run's identity (1-10 of a-z, 0-9, -). Default: a fingerprint of"
        " the image, config, model, steps, nodes and GPUs, so changing any of them starts a new"
        " run; pin it to resume or extend a run from its checkpoints.",
    )
    attempt: int = Field(
        1,
        ge=1,
        le=99,
        description="Attempt of the run: raise it to run the same run id again (KubeRay never"
        " re-runs a finished RayJob); NeMo RL resumes from the run's newest checkpoint.",
    )
    pre_running_deadline_seconds: int = Field(
        3600,
        ge=60,
        le=7 * 24 * 3600,
        description="Seconds the RayJob may take from its start to running (KubeRay's"
        " preRunningDeadlineSeconds): a job whose workers never come up (no capacity, an image"
        " that does not pull) fails with PreRunningDeadlineExceeded instead of holding nodes.",
    )
    keep_failed_head_minutes: int | None = Field(
        None,
        ge=0,
        le=7 * 24 * 60,
        description="Minutes the head of a failed run's own cluster stays for a post-mortem"
        " (its dashboard and Ray's logs) while the GPU workers go at once (KubeRay"
        " deletionRules; default 1440). Only for a run that brings its own cluster outside the"
        " queue, with the Helm operator.",
    )
    wandb: bool = Field(False, description="Log to Weights & Biases (needs wandbApiKey).")
    wandb_project: Annotated[str, AfterValidator(hydra_word)] = Field(
        "nemo-rl-gke",
        pattern=r"^[A-Za-z][A-Za-z0-9_.-]{0,127}$",
        description="W&B project when wandb is on (a letter, then letters, digits, _ . -).",
    )

    @model_validator(mode="after")
    def _rayjob_name_fits(self) -> Self:
        run_id = len(self.run_id) if self.run_id else RUN_ID_LENGTH
        attempt = len(f"-a{self.attempt}") if self.attempt > 1 else 0
        length = len(self.name) + 1 + run_id + attempt
        if length > MAX_RAYJOB_NAME:
            raise ConfigProblem(
                ("name",),
                f"the RayJob is named <name>-<run id>{'-a<attempt>' if attempt else ''}, here"
                f" {length} characters; KubeRay refuses RayJob names over {MAX_RAYJOB_NAME}",
                f"shorten ray.job.name to at most {MAX_RAYJOB_NAME - (length - len(self.name))}"
                " characters (or ray.job.runId)",
            )
        return self


class RayConfig(ConfigModel):
    """Ray platform: operator choice, the workload's identity, the RayCluster and the job."""

    operator: Literal["helm", "gke-addon"] = Field(
        "helm",
        description="helm: pinned KubeRay Helm release; gke-addon: GKE's managed Ray operator."
        " Never both.",
    )
    namespace: str = Field(
        "nemo-rl",
        pattern=r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$",
        description="Kubernetes namespace of the RayCluster, its volumes and secrets.",
    )
    service_account: str | None = Field(
        None,
        pattern=r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$",
        description="Kubernetes service account of the Ray pods, bound through Workload Identity"
        " (default <name>-workload: the stack's own; every cluster of a project shares one"
        " identity pool, so two stacks with the same namespace and account would be one"
        " principal with shared grants).",
    )
    cluster_name: str = Field(
        "nemo-rl",
        pattern=r"^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$",
        description="RayCluster name; its head service is <clusterName>-head-svc.",
    )
    head: HeadConfig = Field(default_factory=HeadConfig, description="Ray head pod size.")
    avoid_maintenance: bool = Field(
        True,
        description="GPU workers are not scheduled on nodes with host maintenance scheduled"
        " (GKE's cloud.google.com/scheduled-maintenance-time label); a queued run waits with"
        " Kueue's reason until the maintenance is done or started by hand.",
    )
    ship_logs: list[LogTarget] = Field(
        default_factory=lambda: list(LOG_TARGETS),
        max_length=2,
        description="Where every Ray pod's sidecar sends Ray's own log files (each process's,"
        " workers' and actors' stdout and stderr, the job driver's): cloudLogging (structured"
        " entries through GKE's agent) and volume (the run's folder on /data). [] turns the"
        " sidecar off.",
    )
    job: JobConfig = Field(default_factory=JobConfig, description="GRPO RayJob.")
    chart_path: str | None = Field(
        None,
        description="A local kuberay-operator chart folder or .tgz to install instead of the"
        " public Helm repository (air-gapped installs, the engine test bed). Its version must"
        " be the pinned chart version. Default: the public repository.",
    )

    @field_validator("ship_logs")
    @classmethod
    def _each_target_once(cls, value: list[LogTarget]) -> list[LogTarget]:
        for i, name in enumerate(value):
            if value.index(name) != i:
                raise ConfigProblem((i,), f"{name} is listed twice", "list each place once")
        return value

    @field_validator("chart_path")
    @classmethod
    def _chart_is_the_pinned_one(cls, value: str | None) -> str | None:
        if value is None:
            return None
        check_pinned_chart(
            value,
            VERSIONS.kuberay_chart.value,
            key="ray.chartPath",
            chart="kuberay-operator",
            name="KubeRay",
            pin="kuberay_chart",
            note=" (the CRD Job applies that version's CRDs)",
        )
        return value


def grpo_run(ray: RayConfig, gpu: GpuConfig) -> GrpoRun:
    """The GRPO run the job (or the submit command) starts, defaults resolved."""
    job, row = ray.job, gpu.profile
    return GrpoRun(
        image=VERSIONS.nemo_rl_image.value,
        config=job.config or row.grpo_config,
        model=job.model or row.grpo_model,
        steps=job.steps,
        nodes=job.nodes or max(1, gpu.max_nodes),
        gpus_per_node=job.gpus_per_node or row.gpus_per_node,
        wandb=job.wandb,
        wandb_project=job.wandb_project,
        job=job.name,
        runs_dir=job.runs_dir,
        run_id=job.run_id,
        attempt=job.attempt,
        rdma=bool(row.rdma_nics),
        tuner_config=row.nccl_tuner_config or "",
    )


def job_fits_pool_problems(ray: RayConfig, gpu: GpuConfig) -> Iterator[ConfigProblem]:
    """The job asks for no more nodes and GPUs than the pool has. Paths relative to the stack."""
    job, row = ray.job, gpu.profile
    if job.enabled and gpu.max_nodes == 0:
        yield ConfigProblem(
            ("ray", "job", "enabled"),
            "the GRPO job needs GPU nodes, and the GPU pool has 0 (gpu.nodes is 0)",
            "set gpu.nodes (or gpu.autoscaling.max) to 1 or more, or ray.job.enabled to false",
        )
        return
    if job.nodes is not None and job.nodes > gpu.max_nodes:
        yield ConfigProblem(
            ("ray", "job", "nodes"),
            f"the job wants {job.nodes} nodes but the GPU pool has at most {gpu.max_nodes}",
            "lower ray.job.nodes or raise gpu.nodes / gpu.autoscaling.max",
        )
    if job.gpus_per_node is not None and job.gpus_per_node > row.gpus_per_node:
        yield ConfigProblem(
            ("ray", "job", "gpusPerNode"),
            f"{row.machine_type} has {row.gpus_per_node} GPUs, not {job.gpus_per_node}",
            f"set ray.job.gpusPerNode to at most {row.gpus_per_node}",
        )


def batch_problems(ray: RayConfig, gpu: GpuConfig) -> Iterator[ConfigProblem]:
    """The job's GPUs split the recipe's batches evenly: NeMo RL asserts it only after vLLM's
    start-up and a whole rollout. Checked for the recipes whose sizes are known (RECIPES)."""
    job = ray.job
    run = grpo_run(ray, gpu)
    shape = run.shape
    if not job.enabled or shape is None or divides_batch(shape, run.nodes, run.gpus_per_node):
        return
    if job.gpus_per_node is not None and job.gpus_per_node != gpu.profile.gpus_per_node:
        key: tuple[str, ...] = ("ray", "job", "gpusPerNode")
    elif job.nodes is not None:
        key = ("ray", "job", "nodes")
    else:
        key = ("gpu", "autoscaling", "max") if gpu.autoscaling is not None else ("gpu", "nodes")
    fits = shapes_that_fit(shape, gpu.max_nodes, gpu.profile.gpus_per_node)
    instead = f"run on {describe_shapes(fits)}" if fits else "use a pool of 1, 2 or 4 nodes"
    yield ConfigProblem(
        key,
        f"{run.nodes} nodes x {run.gpus_per_node} GPUs is a data-parallel size of"
        f" {run.nodes * run.gpus_per_node // shape.model_parallel}, which does not divide"
        f" {run.config}'s batch of {shape.train_global_batch_size} (and"
        f" {shape.samples_per_step} samples a step); NeMo RL stops on it after the first rollout",
        f"{instead} (set ray.job.nodes / ray.job.gpusPerNode)",
    )


def image_driver_problems(gpu: GpuConfig) -> Iterator[ConfigProblem]:
    """The NeMo RL image's CUDA needs a driver branch GKE's DEFAULT driver may not have."""
    cuda = IMAGE_CUDA.get(image_tag(VERSIONS.nemo_rl_image.value))
    if cuda is not None and cuda[0] >= 13 and gpu.driver_version != "LATEST":
        yield ConfigProblem(
            ("gpu", "driverVersion"),
            f"the NeMo RL image runs CUDA {cuda[0]}.{cuda[1]}, which needs an R580-class"
            " driver; GKE's DEFAULT driver may be older",
            "set gpu.driverVersion to LATEST",
        )


SYSTEM_PODS_ROOM: Final = (1000, 4096)
"""(millicores, MiB) left on the Ray head's node for what else runs there: GKE's DaemonSets
(Dataplane V2, logging, metrics, the CSI node drivers), the KubeRay operator and Kueue's
controller. An estimate from the requests those pods declare, kept generous."""


def head_fits_problems(ray: RayConfig, system_machine_type: str) -> Iterator[ConfigProblem]:
    """The Ray head (requests = limits) fits one system node's allocatable CPU and memory (GKE's
    reservation formula), with room for the system pods beside it; otherwise it stays Pending
    and the RayCluster never starts. Unknown machine shapes are not judged."""
    shape = machine_shape(system_machine_type)
    if shape is None:
        return
    cpu_millis, memory_mib = gke_allocatable(*shape)
    cpu_left, memory_left = cpu_millis - SYSTEM_PODS_ROOM[0], memory_mib - SYSTEM_PODS_ROOM[1]
    # The log sidecar's requests are the pod's too (planning.ray_logs).
    if ray.ship_logs:
        cpu_left, memory_left = cpu_left - SHIPPER_CPU_MILLIS, memory_left - SHIPPER_MEMORY_MIB
    head = ray.head
    for key, asked, left, unit, scale in (
        ("cpu", head.cpu * 1000, cpu_left, "vCPU", 1000),
        ("memoryGib", head.memory_gib * 1024, memory_left, "GiB", 1024),
    ):
        if asked > left:
            yield ConfigProblem(
                ("ray", "head", key),
                f"{asked / scale:g} {unit} does not fit a {system_machine_type} node: it offers"
                f" {left / scale:.1f} {unit} to pods after GKE's reservation and"
                f" {SYSTEM_PODS_ROOM[0 if unit == 'vCPU' else 1] / scale:g} {unit} for the"
                " system pods beside the head"
                + (" (and its log sidecar's requests)" if ray.ship_logs else "")
                + ", so the head would never be scheduled",
                f"set ray.head.{key} to at most {int(left // scale)}, or a larger"
                " cluster.systemPool.machineType",
            )


def keeps_failed_head(ray: RayConfig, gpu: GpuConfig, queue_on: bool) -> bool:
    """Whether the run's RayJob keeps a failed run's head (KubeRay deletionRules): it brings
    its own cluster (a pool that scales from zero), outside the queue (KubeRay suspends, so
    Kueue can queue, only a RayJob that shuts its cluster down when it ends, which excludes
    deletionRules), with the pinned Helm operator (GKE's managed one is not pinned, and the
    rules need KubeRay 1.6 or later with RayJobDeletionPolicy on)."""
    return (
        ray.job.enabled and gpu.autoscaling is not None and not queue_on and ray.operator == "helm"
    )


def keep_failed_problems(ray: RayConfig, gpu: GpuConfig, queue_on: bool) -> Iterator[ConfigProblem]:
    """ray.job.keepFailedHeadMinutes where no head would be kept. Paths relative to the stack."""
    if ray.job.keep_failed_head_minutes is None or keeps_failed_head(ray, gpu, queue_on):
        return
    path = ("ray", "job", "keepFailedHeadMinutes")
    if not ray.job.enabled:
        why, fix = "no RayJob is created (ray.job.enabled is false)", "remove it"
    elif gpu.autoscaling is None:
        why = (
            "the run uses the stack's RayCluster, whose head stays after a failure anyway (the"
            " job's logs with it)"
        )
        fix = "remove it"
    elif queue_on:
        why = (
            "a queued run must shut its own cluster down when it ends (KubeRay suspends, and so"
            " Kueue queues, only such a RayJob, and those take no deletionRules); its driver log"
            " stays in the run's folder"
        )
        fix = "remove it, or set kueue.enabled: false"
    else:
        why = (
            "GKE's managed Ray operator is not pinned here, and deletionRules need KubeRay 1.6 or"
            " later with RayJobDeletionPolicy on"
        )
        fix = "remove it, or set ray.operator: helm (the pinned KubeRay)"
    yield ConfigProblem(path, f"{why}: it would do nothing", f"{fix}")


def unused_chart_problems(ray: RayConfig) -> Iterator[ConfigProblem]:
    """ray.chartPath with GKE's managed operator: no Helm release reads it."""
    if ray.operator == "gke-addon" and ray.chart_path is not None:
        yield ConfigProblem(
            ("ray", "chartPath"),
            "is the KubeRay Helm chart, and ray.operator gke-addon installs no Helm release"
            " (GKE runs its managed operator): it would do nothing",
            "remove ray.chartPath, or set ray.operator: helm",
        )
