"""Pure planning of the job NCCL gate: NCCL proven with the training run's own software.

The NCCL gate runs Google's diagnostic image with its own NCCL; the GRPO run uses the NeMo RL
image's torch and the NCCL it bundles (nvidia-nccl-cu13 2.28.9 in v0.7.0) and starts its
workers through Ray. This gate runs in that image, on the RayCluster, the way the run starts:
the GRPO driver's own setup steps, one actor per GPU of every GPU node in NeMo RL's placement
groups, one torch.distributed NCCL group over all of them (16 ranks on two A4 nodes). It
requires every rank to have formed the group, NCCL's version line and `Using network gIB` in
every rank's NCCL log, right values, and the NCCL gate's all_gather floor at 8 GiB.

Like the GRPO smoke it is a Job that submits a Ray job (verify/gates/grpo_smoke.py), after the
RayCluster and before the RayJob; it does not run beside a training run.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from planning.ray import (
    DRIVER_CLEAN_ENV,
    GIB_RESOURCE,
    NEMO_RL_DIR,
    GrpoRun,
    fail_fast,
    gib_setup_steps,
    gpu_setup_steps,
    ray_token_file,
    ship_file,
)
from planning.verify import (
    GATES_DIR,
    NCCL_MARGIN,
    NCCL_MESSAGE_BYTES,
    NCCL_PUBLISHED_BUSBW_8G,
    GateSettings,
    Threshold,
    VerifyInputs,
    fingerprint_of,
    nccl_min_busbw,
    ray_gate_env,
    smoke_script,
)

JOB_NCCL_GATE: Final = "job-nccl"
JOB_NCCL_SCRIPT: Final = "job_nccl.py"
"""The Ray driver (verify/gates/): needs ray and torch, which the NeMo RL image has."""
JOB_NCCL_SIZES: Final = (1 << 20, 1 << 30, NCCL_MESSAGE_BYTES)
"""Bytes per call: 1 MiB (latency-bound), 1 GiB, and 8 GiB, the size the floor is set at."""
JOB_NCCL_ITERATIONS = 20
JOB_NCCL_TIMEOUT_SECONDS = 20 * 60
"""The image is on the workers already; the GPUs may take a while to be free of the gates."""
JOB_NCCL_READY_SECONDS = 300
"""How long the driver waits for its placement groups (every GPU of every node)."""
JOB_NCCL_SCRIPT_PATH: Final = "/tmp/nemo-rl-gke/job_nccl.py"  # noqa: S108 - in the Ray pod
"""Where the entrypoint writes the driver (a Ray job's entrypoint is a command line)."""
DRIVER_VARIABLE: Final = "JOB_NCCL_DRIVER"
"""The driver, gzip then base64, on its way from the command line to its file."""


@dataclass(frozen=True)
class JobNcclPlan:
    """The job NCCL gate: a Job that submits the gate's Ray driver to the RayCluster."""

    job_name: str
    nodes: int
    gpus_per_node: int
    entrypoint: str
    entrypoint_resources: dict[str, int]
    image: str
    """The submitter's image (a plain Python image, as the smoke's)."""
    timeout_seconds: int
    thresholds: tuple[Threshold, ...]
    fingerprint: str

    @property
    def ranks(self) -> int:
        """One rank per GPU of every GPU node."""
        return self.nodes * self.gpus_per_node


def job_nccl_script() -> str:
    """verify/gates/job_nccl.py, the gate's Ray driver."""
    return (Path(GATES_DIR) / JOB_NCCL_SCRIPT).read_text(encoding="utf-8")


def job_nccl_entrypoint(run: GrpoRun, nodes: int, script: str) -> str:
    """The Ray job's entrypoint: the GRPO driver's clean environment and GPU setup, the driver
    written out from the command line itself, run with the image's Python (`uv run`)."""
    setup = gib_setup_steps(run.tuner_config) if run.rdma else gpu_setup_steps()
    env = {
        "NODES": str(nodes),
        "GPUS_PER_NODE": str(run.gpus_per_node),
        "SIZES": " ".join(str(s) for s in JOB_NCCL_SIZES),
        "ITERATIONS": str(JOB_NCCL_ITERATIONS),
        "READY_SECONDS": str(JOB_NCCL_READY_SECONDS),
    }
    steps = fail_fast(
        [
            f"unset {' '.join(DRIVER_CLEAN_ENV)}",
            *ray_token_file(),
            *setup,
            # Compressed (a third of the size): the entrypoint is printed in the job's log.
            *ship_file(DRIVER_VARIABLE, script, JOB_NCCL_SCRIPT_PATH),
            f"cd {NEMO_RL_DIR}",
            "export " + " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items()),
        ]
    )
    # The driver's own error is the job's last word (not a setup step's message).
    return f"bash -c {shlex.quote(f'{steps} && uv run python {JOB_NCCL_SCRIPT_PATH}')}"


def plan_job_nccl(
    job_run: GrpoRun,
    inputs: VerifyInputs,
    settings: GateSettings,
    *,
    workers: int,
    image: str,
    timeout_seconds: int | None = None,
) -> JobNcclPlan | None:
    """The gate over the RayCluster's `workers` GPU workers (those it starts with) where the
    GPUs talk over RDMA and there are two or more (as the NCCL gate); None elsewhere or when
    turned off. It runs again when the image, the driver, the pool, the networks or the
    workers' setup change."""
    if not (settings.job_nccl and inputs.rdma_nics > 0 and workers >= 2):
        return None
    script = job_nccl_script()
    entrypoint = job_nccl_entrypoint(job_run, workers, script)
    resources = {GIB_RESOURCE: 1}
    world = workers * job_run.gpus_per_node
    thresholds = [
        Threshold(
            "ranks_formed", ">=", str(world), "ranks", "every GPU of every node in one group"
        ),
        Threshold("nodes_spanned", ">=", str(workers), "nodes", "the group crosses nodes"),
        Threshold("ranks_with_nccl_version", ">=", str(world), "ranks", "NCCL's version line"),
        Threshold("ranks_on_gib", ">=", str(world), "ranks", "`Using network gIB`, not sockets"),
        Threshold(
            "ranks_with_gdrdma", ">=", str(world), "ranks", "a `via NET/gIB/<n>/GDRDMA` channel"
        ),
        Threshold("wrong_values", "<=", "0", "ranks", "all_gather and all_reduce results"),
    ]
    floor = nccl_min_busbw(inputs.gpu_type, settings)
    if floor is not None:
        why = (
            "configured"
            if settings.nccl_min_busbw is not None
            else f"{NCCL_MARGIN:.0%} of Google's {NCCL_PUBLISHED_BUSBW_8G[inputs.gpu_type]} GB/s"
        )
        thresholds.append(
            Threshold("all_gather_busbw", ">=", f"{floor:g}", "GB/s", f"8 GiB, {why}")
        )
    fingerprint = fingerprint_of(
        {
            "gate": JOB_NCCL_GATE,
            "script": script,
            "submitter": smoke_script(),
            "image": job_run.image,
            "submitter_image": image,
            "entrypoint": entrypoint,
            "thresholds": [t.value for t in thresholds],
            "pool": inputs.pool,
            "networks": list(inputs.networks),
            "worker_setup": inputs.worker_setup,
        }
    )
    return JobNcclPlan(
        job_name=f"verify-{JOB_NCCL_GATE}-{fingerprint}",
        nodes=workers,
        gpus_per_node=job_run.gpus_per_node,
        entrypoint=entrypoint,
        entrypoint_resources=resources,
        image=image,
        timeout_seconds=timeout_seconds or JOB_NCCL_TIMEOUT_SECONDS,
        thresholds=tuple(thresholds),
        fingerprint=fingerprint,
    )


def job_nccl_env(plan: JobNcclPlan, dashboard_service: str) -> dict[str, str]:
    """The gate container's environment (after POD_NAMESPACE and GATE_RUN_ID): the smoke's,
    with the driver's MEASURE lines judged against the thresholds."""
    return ray_gate_env(
        JOB_NCCL_GATE,
        f"{plan.nodes} nodes x {plan.gpus_per_node} GPUs",
        plan.job_name,
        plan.entrypoint,
        plan.entrypoint_resources,
        plan.timeout_seconds,
        dashboard_service,
        plan.thresholds,
    )
