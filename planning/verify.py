"""Pure planning of the acceptance gates: which gates a stack runs, their thresholds, and names.

A gate is a Kubernetes Job that `pulumi up` waits for. Its pods run one of the scripts in
`verify/gates/` (POSIX sh + awk, mounted from a ConfigMap; the GRPO smoke's is Python, standard
library only, and runs after the RayCluster instead of before it) and end with a verdict
line in their termination message. The thresholds are derived here, with their sources, so
preflight can print them and tests can check them without a cluster.

A gate's Job is named after a fingerprint of everything it proves (scripts, image, shell
setup, thresholds, node count, pool and networks): an unchanged stack plans no new gate run,
and a change to any of those replaces the Job, which runs the gate again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Final, Literal

from planning.ray import GIB_RESOURCE, GrpoRun, grpo_entrypoint

GATES_DIR = Path(__file__).resolve().parents[1] / "verify" / "gates"
"""The gate scripts shipped to the cluster (ConfigMap data)."""
GATE_MOUNT = "/gates"
GATE_LABEL: Final = "nemo-rl-gke/gate"
"""Label of every gate Job and pod (what `make verify` and the test bed select on)."""
RAY_GATE_LABEL: Final = "nemo-rl-gke/ray-job-gate"
"""Label (value "true") of the pods of the gates that call the Ray dashboard (the GRPO smoke,
the job NCCL gate): the dashboard's NetworkPolicy admits them."""
GateName = Literal["gpu-health", "rdma", "nccl", "storage"]
GATE_ORDER: Final[tuple[GateName, ...]] = ("gpu-health", "rdma", "nccl", "storage")
"""Gates run one after another: the first failure stops the update, and a measurement never
shares the nodes with another gate's traffic."""

NCCL_MESSAGE_BYTES = 8589934592
"""8 GiB: the largest size of the sweep and the one Google publishes bus bandwidths for."""
NCCL_PUBLISHED_BUSBW_8G: Final[dict[str, float]] = {
    # docs.cloud.google.com/ai-hypercomputer/docs/nccl/test-gke-custom (updated 2026-04-06):
    # 2 nodes, all_gather, out-of-place bus bandwidth at 8 GiB.
    "b200": 344.46,
    "h200": 330.16,
}
NCCL_PUBLISHED_AVG_BUSBW: Final[dict[str, float]] = {
    # The same runs' "Avg bus bandwidth" (the mean over every size, 1K..8G).
    "b200": 120.845,
    "h200": 120.94,
}
NCCL_PLAUSIBLE_FACTOR = 1.10
"""A threshold more than 10% above Google's published figure is refused: the published run is
one healthy two-node run (its in-place figure is 2.5% higher than the out-of-place one the gate
reads), so no healthy fabric clears such a floor and every `up` would fail after the cluster
and its GPU pool are built."""
NCCL_MARGIN = 0.85
"""Pass at 85% of Google's published figure. The figure is one run on two nodes; run-to-run
variation, pools without compact placement and larger node counts (more hops for the same
bus-bandwidth normalisation) each cost a few percent. A healthy fabric clears 85%; one NIC
lost or a rail falling back to TCP drops all_gather far below it (an 8-NIC node on 7 NICs tops
out near 7/8 = 87.5% only when everything else is perfect)."""
NCCL_MIN_AVG_BUSBW = 100.0
"""Cluster Toolkit's daily CI fails a 2-node all_gather run whose "Avg bus bandwidth" (the
mean over every size, 1K..8G) is below 100 GB/s (tools/cloud-build/daily-tests, test-gke-a4.yml
and test-gke-a3-ultra.yml); Google's published runs average about 121 GB/s."""
STORAGE_MIN_FRACTION = 0.5
"""Pass at half the provisioned throughput: a one-minute fio run from the GPU nodes does not
reach a file system's steady-state peak, and Lustre's throughput scales with provisioned
capacity only when enough clients push; half still catches a wrong tier, a single-NIC
bottleneck or a mount falling back to a slow path."""
BUCKET_MIN_MBPS = 100
"""A GCS bucket has no provisioned throughput: the gate on dev checks the mount works at a
floor of 100 MB/s per run (sequential 1 MiB blocks through GCS FUSE)."""

TIMEOUTS: Final[dict[GateName, int]] = {
    # Seconds for the Job to finish, image pull included (the diagnostic image is several GB).
    "gpu-health": 15 * 60,
    "rdma": 20 * 60,
    "nccl": 40 * 60,
    "storage": 25 * 60,
}
FIO_RUNTIME_SECONDS = 60
FIO_JOBS = 8
FIO_MAX_FILE_MIB = 4096
STORAGE_SCRATCH_SHARE = 0.2
"""The files fio writes on all nodes together stay within 20% of the volume's capacity."""


@dataclass(frozen=True)
class Threshold:
    """One pass condition of a gate, as preflight prints it."""

    metric: str
    op: Literal[">=", "<=", "="]
    value: str
    unit: str
    why: str


@dataclass(frozen=True)
class GatePlan:
    """One gate as a Kubernetes Job: one pod per GPU node (Indexed, all in parallel)."""

    gate: GateName
    job_name: str
    nodes: int
    image: str
    interpreter: str
    """`/bin/bash` where the workers' setup is sourced; `/bin/sh` elsewhere."""
    script: str
    """File name under verify/gates/."""
    env: Mapping[str, str]
    timeout_seconds: int
    gpus: int
    """GPUs each pod takes (all of the node's, as a Ray worker does); 0 for storage."""
    worker_shaped: bool
    """Carries the Ray workers' interfaces annotation, host paths and shell setup."""
    peers: bool
    """Pods reach one another by name (a headless Service as their subdomain)."""
    thresholds: tuple[Threshold, ...]
    fingerprint: str


@dataclass(frozen=True)
class StorageTarget:
    """What /data is and what it should deliver."""

    kind: Literal["lustre", "bucket"]
    capacity_gib: int = 0
    throughput_per_tib: int = 0
    """Lustre tier, MB/s per TiB (0 for the bucket)."""

    @property
    def provisioned_mbps(self) -> float:
        """Lustre: capacity (TiB) x tier. The bucket has none."""
        return self.capacity_gib / 1024 * self.throughput_per_tib


@dataclass(frozen=True)
class GateSettings:
    """The stack's verify settings, already resolved (defaults applied)."""

    gpu_health: bool = True
    rdma: bool = True
    nccl: bool = True
    storage: bool = True
    nccl_collectives: tuple[str, ...] = ("all_gather", "all_reduce")
    nccl_min_busbw: float | None = None
    """all_gather at 8 GiB; None: derived from Google's published figure for the GPU."""
    nccl_min_all_reduce_busbw: float | None = None
    """No published all_reduce figure was found for A4 / A3 Ultra: reported, not judged."""
    nccl_min_avg_busbw: float = NCCL_MIN_AVG_BUSBW
    storage_min_fraction: float = STORAGE_MIN_FRACTION
    bucket_min_mbps: float = BUCKET_MIN_MBPS
    timeouts: Mapping[str, int] = field(default_factory=dict)
    """Per-gate overrides of TIMEOUTS, in seconds."""
    grpo_smoke: bool = False
    smoke_steps: int = 3
    job_nccl: bool = True
    """NCCL with the run's own image across the RayCluster's GPU workers
    (planning.verify_job_nccl)."""


@dataclass(frozen=True)
class VerifyInputs:
    """What the gates depend on, from the stack's plan."""

    gpu_type: str
    gpus_per_node: int
    rdma_nics: int
    nodes: int
    """GPU nodes the gates cover (the pool's maximum)."""
    pool: str
    """Identity of the pool (name, machine type, reservation): a new pool re-runs the gates."""
    networks: tuple[str, ...]
    """Names of the GKE Network objects the workers attach to (eth1..)."""
    worker_setup: str
    """The Ray workers' shell setup, word for word (planning.ray)."""
    diagnostic_image: str
    fio_image: str
    storage: StorageTarget


def gate_scripts() -> dict[str, str]:
    """ConfigMap data: every script under verify/gates/, by file name."""
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(GATES_DIR.glob("*.sh"))}


def nccl_min_busbw(gpu_type: str, settings: GateSettings) -> float | None:
    """The all_gather threshold at 8 GiB: configured, or 85% of Google's figure."""
    if settings.nccl_min_busbw is not None:
        return settings.nccl_min_busbw
    published = NCCL_PUBLISHED_BUSBW_8G.get(gpu_type)
    return round(published * NCCL_MARGIN, 1) if published is not None else None


def storage_min_mbps(target: StorageTarget, settings: GateSettings) -> int:
    """The aggregate MB/s the storage gate needs (write and read each)."""
    if target.kind == "bucket":
        return int(settings.bucket_min_mbps)
    return int(target.provisioned_mbps * settings.storage_min_fraction)


def fio_file_size_mib(target: StorageTarget, nodes: int) -> int:
    """Per fio job: at most 4 GiB, and all nodes' files within 20% of the capacity."""
    if target.kind == "bucket" or target.capacity_gib == 0:
        return 1024
    share = target.capacity_gib * 1024 * STORAGE_SCRATCH_SHARE / (max(1, nodes) * FIO_JOBS)
    return max(64, min(FIO_MAX_FILE_MIB, int(share)))


def fingerprint_of(parts: object) -> str:
    """A short hash of what a gate proves: its Job's name changes with any of it."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:8]


def _plan(
    gate: GateName,
    inputs: VerifyInputs,
    settings: GateSettings,
    *,
    image: str,
    interpreter: str,
    env: Mapping[str, str],
    gpus: int,
    worker_shaped: bool,
    peers: bool,
    thresholds: tuple[Threshold, ...],
) -> GatePlan:
    scripts = gate_scripts()
    script = f"{gate.replace('-', '_')}.sh"
    fingerprint = fingerprint_of(
        {
            "gate": gate,
            "scripts": [scripts["common.sh"], scripts[script]],
            "image": image,
            "env": dict(env),
            "nodes": inputs.nodes,
            "pool": inputs.pool,
            "networks": list(inputs.networks) if worker_shaped else [],
        }
    )
    return GatePlan(
        gate=gate,
        job_name=f"verify-{gate}-{fingerprint}",
        nodes=inputs.nodes,
        image=image,
        interpreter=interpreter,
        script=script,
        env=env,
        timeout_seconds=settings.timeouts.get(gate, TIMEOUTS[gate]),
        gpus=gpus,
        worker_shaped=worker_shaped,
        peers=peers,
        thresholds=thresholds,
        fingerprint=fingerprint,
    )


def plan_gates(inputs: VerifyInputs, settings: GateSettings) -> list[GatePlan]:
    """The gates this stack runs, in order. RDMA and NCCL need RDMA NICs; NCCL needs two or
    more nodes (on one node NCCL goes over NVLink and proves nothing about the network). Every
    gate runs one pod per GPU node: a pool of 0 nodes (parked, or not bought yet) has nothing
    to prove, so it plans no gate instead of a Job no pod could ever complete."""
    gates: list[GatePlan] = []
    if inputs.nodes < 1:
        return gates
    gpus = inputs.gpus_per_node
    rdma = inputs.rdma_nics > 0
    if settings.gpu_health:
        gates.append(
            _plan(
                "gpu-health",
                inputs,
                settings,
                image=inputs.diagnostic_image,
                interpreter="/bin/sh",
                env={"EXPECTED_GPUS": str(gpus)},
                gpus=gpus,
                worker_shaped=False,
                peers=False,
                thresholds=(
                    Threshold("gpus", ">=", str(gpus), "GPUs", "the machine type's GPUs"),
                    Threshold(
                        "gpus_with_uncorrected_ecc", "<=", "0", "GPUs", "Cluster Toolkit's check"
                    ),
                ),
            )
        )
    if settings.rdma and rdma:
        gates.append(
            _plan(
                "rdma",
                inputs,
                settings,
                image=inputs.diagnostic_image,
                interpreter="/bin/bash",
                env={
                    "EXPECTED_GPUS": str(gpus),
                    "EXPECTED_RDMA": str(inputs.rdma_nics),
                    "GPU_SETUP": inputs.worker_setup,
                },
                gpus=gpus,
                worker_shaped=True,
                peers=False,
                thresholds=(
                    Threshold("rdma_devices", ">=", str(inputs.rdma_nics), "devices", "RDMA NICs"),
                    Threshold("nccl_network", "=", "gIB", "name", "not TCP sockets"),
                ),
            )
        )
    if settings.nccl and rdma and inputs.nodes >= 2:
        env = {
            "EXPECTED_GPUS": str(gpus),
            "NODES": str(inputs.nodes),
            "GATE_SCOPE": f"{inputs.nodes} nodes",
            "COLLECTIVES": " ".join(settings.nccl_collectives),
            "GPU_SETUP": inputs.worker_setup,
        }
        thresholds: list[Threshold] = []
        for collective in settings.nccl_collectives:
            thresholds.append(Threshold(f"{collective}_network", "=", "gIB", "name", "gIB"))
            thresholds.append(
                Threshold(f"{collective}_wrong_values", "<=", "0", "values", "nccl-tests -c 1")
            )
        ag_min = nccl_min_busbw(inputs.gpu_type, settings)
        if "all_gather" in settings.nccl_collectives and ag_min is not None:
            env["MIN_BUSBW_all_gather"] = f"{ag_min:g}"
            env["MIN_AVG_BUSBW_all_gather"] = f"{settings.nccl_min_avg_busbw:g}"
            why = (
                "configured"
                if settings.nccl_min_busbw is not None
                else f"{NCCL_MARGIN:.0%} of Google's"
                f" {NCCL_PUBLISHED_BUSBW_8G[inputs.gpu_type]} GB/s"
            )
            thresholds.append(Threshold("all_gather_busbw_8GiB", ">=", f"{ag_min:g}", "GB/s", why))
            thresholds.append(
                Threshold(
                    "all_gather_avg_busbw",
                    ">=",
                    f"{settings.nccl_min_avg_busbw:g}",
                    "GB/s",
                    "Cluster Toolkit's floor",
                )
            )
        ar_min = settings.nccl_min_all_reduce_busbw
        if "all_reduce" in settings.nccl_collectives and ar_min is not None:
            env["MIN_BUSBW_all_reduce"] = f"{ar_min:g}"
            thresholds.append(
                Threshold("all_reduce_busbw_8GiB", ">=", f"{ar_min:g}", "GB/s", "configured")
            )
        gates.append(
            _plan(
                "nccl",
                inputs,
                settings,
                image=inputs.diagnostic_image,
                interpreter="/bin/bash",
                env=env,
                gpus=gpus,
                worker_shaped=True,
                peers=True,
                thresholds=tuple(thresholds),
            )
        )
    if settings.storage:
        target = inputs.storage
        need = storage_min_mbps(target, settings)
        why = (
            f"{settings.storage_min_fraction:.0%} of {target.provisioned_mbps:.0f} MB/s"
            f" provisioned ({target.capacity_gib} GiB x {target.throughput_per_tib} MB/s/TiB)"
            if target.kind == "lustre"
            else "a floor for the GCS FUSE mount"
        )
        gates.append(
            _plan(
                "storage",
                inputs,
                settings,
                image=inputs.fio_image,
                interpreter="/bin/sh",
                env={
                    "NODES": str(inputs.nodes),
                    "GATE_SCOPE": f"{inputs.nodes} nodes",
                    "MIN_MBPS": str(need),
                    "FIO_SIZE": f"{fio_file_size_mib(target, inputs.nodes)}m",
                    "FIO_JOBS": str(FIO_JOBS),
                    "FIO_RUNTIME": str(FIO_RUNTIME_SECONDS),
                    # GCS FUSE does not take O_DIRECT the way Lustre does.
                    "FIO_DIRECT": "1" if target.kind == "lustre" else "0",
                },
                gpus=0,
                worker_shaped=False,
                peers=False,
                thresholds=(
                    Threshold("write_throughput", ">=", str(need), "MB/s", why),
                    Threshold("read_throughput", ">=", str(need), "MB/s", why),
                ),
            )
        )
    return gates


# --- GRPO smoke: a few NeMo RL steps on the RayCluster, before the job ---

SMOKE_GATE: Final = "grpo-smoke"
SMOKE_SCRIPT: Final = "grpo_smoke.py"
"""Python 3, standard library only: it talks to Ray's job REST API, as KubeRay does."""
SMOKE_CONFIG: Final = "examples/configs/grpo_smoke.yaml"
"""NeMo RL's own smoke recipe (on grpo_math_1B.yaml): GSM8K, 2 prompts x 4 generations."""
SMOKE_MODEL: Final = "Qwen/Qwen3-0.6B"
"""The model grpo_smoke.yaml names: small, and not gated (no token needed)."""
SMOKE_TIMEOUT_SECONDS = 60 * 60
"""Image already on the workers; model and dataset downloads, vLLM start-up, a few steps."""
SMOKE_STOP_MARGIN_SECONDS = 60
"""The script stops the Ray job this long before the Job's deadline, so its verdict is what
ends a smoke that hangs."""
SMOKE_POLL_SECONDS = 15
DASHBOARD_TOKEN_DIR: Final = "/var/run/ray-dashboard"  # noqa: S105 - a folder
"""Where the smoke gate mounts the dashboard's token (KubeRay's Secret of the RayCluster)."""
DASHBOARD_TOKEN_NAME: Final = "token"  # noqa: S105 - a file name
DASHBOARD_TOKEN_FILE: Final = f"{DASHBOARD_TOKEN_DIR}/{DASHBOARD_TOKEN_NAME}"


@dataclass(frozen=True)
class SmokePlan:
    """The GRPO smoke gate: a Job that submits the smoke run to the RayCluster and waits."""

    job_name: str
    run: GrpoRun
    """The smoke run: the job's run with NeMo RL's smoke config, 1 GPU, no checkpoints."""
    entrypoint: str
    """Word for word what a RayJob of this run would submit (planning.ray)."""
    entrypoint_resources: Mapping[str, int]
    """As the RayJob asks: the gIB worker resource on RDMA GPUs."""
    image: str
    timeout_seconds: int
    thresholds: tuple[Threshold, ...]
    fingerprint: str


def smoke_run(job_run: GrpoRun, steps: int) -> GrpoRun:
    """The job's run (image, GPU setup, run folder) on NeMo RL's smoke config."""
    return replace(
        job_run,
        config=SMOKE_CONFIG,
        model=SMOKE_MODEL,
        steps=steps,
        nodes=1,
        gpus_per_node=1,
        wandb=False,
        job=SMOKE_GATE,
        run_id=None,
        attempt=1,
        checkpoints=False,
    )


def smoke_script() -> str:
    """verify/gates/grpo_smoke.py (ConfigMap data of the smoke gate)."""
    return (GATES_DIR / SMOKE_SCRIPT).read_text(encoding="utf-8")


def plan_smoke(
    job_run: GrpoRun,
    inputs: VerifyInputs,
    *,
    steps: int,
    image: str,
    timeout_seconds: int | None = None,
) -> SmokePlan:
    """The smoke gate of a stack. It runs again when the run, the image or the platform it
    proves (pool, networks, worker setup) changes."""
    run = smoke_run(job_run, steps)
    entrypoint = grpo_entrypoint(run)
    resources = {GIB_RESOURCE: 1} if run.rdma else {}
    script = smoke_script()
    fingerprint = fingerprint_of(
        {
            "gate": SMOKE_GATE,
            "script": script,
            "image": image,
            "entrypoint": entrypoint,
            "resources": resources,
            "pool": inputs.pool,
            "networks": list(inputs.networks),
            "worker_setup": inputs.worker_setup,
        }
    )
    timeout = timeout_seconds or SMOKE_TIMEOUT_SECONDS
    return SmokePlan(
        job_name=f"verify-{SMOKE_GATE}-{fingerprint}",
        run=replace(run, run_id=fingerprint),
        entrypoint=grpo_entrypoint(replace(run, run_id=fingerprint)),
        entrypoint_resources=resources,
        image=image,
        timeout_seconds=timeout,
        thresholds=(
            Threshold("job_status", "=", "SUCCEEDED", "name", f"{steps} GRPO steps, Ray's verdict"),
            Threshold(
                "duration",
                "<=",
                str(timeout - SMOKE_STOP_MARGIN_SECONDS),
                "s",
                "stopped before the Job's deadline",
            ),
        ),
        fingerprint=fingerprint,
    )


def ray_gate_env(
    gate: str,
    scope: str,
    job_name: str,
    entrypoint: str,
    resources: Mapping[str, int],
    timeout_seconds: int,
    dashboard_service: str,
    measures: tuple[Threshold, ...] = (),
) -> dict[str, str]:
    """A Ray job gate container's environment (after POD_NAMESPACE and GATE_RUN_ID): what it
    submits, where, and until when; with `measures`, the thresholds its MEASURE lines are
    judged against (verify/gates/grpo_smoke.py)."""
    return {
        "GATE_NAME": gate,
        "GATE_SCOPE": scope,
        "RAY_DASHBOARD": f"http://{dashboard_service}.$(POD_NAMESPACE).svc.cluster.local:8265",
        "DASHBOARD_TOKEN_FILE": DASHBOARD_TOKEN_FILE,
        "SUBMISSION_PREFIX": job_name,
        "ENTRYPOINT": entrypoint,
        "ENTRYPOINT_RESOURCES": json.dumps(dict(resources)),
        **(
            {"MEASURES": json.dumps([[t.metric, t.op, t.value, t.unit] for t in measures])}
            if measures
            else {}
        ),
        "DEADLINE_SECONDS": str(timeout_seconds - SMOKE_STOP_MARGIN_SECONDS),
        "POLL_SECONDS": str(SMOKE_POLL_SECONDS),
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def smoke_env(plan: SmokePlan, dashboard_service: str) -> dict[str, str]:
    """The smoke gate container's environment (after POD_NAMESPACE and GATE_RUN_ID)."""
    return ray_gate_env(
        SMOKE_GATE,
        f"{plan.run.nodes * plan.run.gpus_per_node} GPU",
        plan.job_name,
        plan.entrypoint,
        plan.entrypoint_resources,
        plan.timeout_seconds,
        dashboard_service,
    )
