"""The Ray job gates: Jobs that submit a Ray job to the RayCluster and wait for its verdict -
the GRPO smoke (a few NeMo RL steps) and the job NCCL gate (NCCL of the NeMo RL image over every
GPU of the workers).

A RayJob cannot be the gate itself: pulumi-kubernetes waits for a custom resource only
through `pulumi.com/waitFor`, which knows success conditions only (a failed run would hold
`pulumi up` until the timeout), and `pulumi.com/replaceUnready` works for Jobs only (a failed
RayJob would never run again). So a small batch Job submits the run to the RayCluster's job
API - what KubeRay does for a RayJob in HTTP mode, with the same entrypoint - and ends with
the gates' verdict line: the update fails at once with it, and the next `up` replaces it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.verify.gates import (
    AWAIT_MARGIN_SECONDS,
    MEASURE_SECURITY,
    NON_ROOT,
    scripts_config_map,
    verdict_holder,
)
from planning.ray import DASHBOARD_TOKEN_KEY
from planning.verify import (
    DASHBOARD_TOKEN_DIR,
    DASHBOARD_TOKEN_NAME,
    GATE_LABEL,
    GATE_MOUNT,
    RAY_GATE_LABEL,
    SMOKE_GATE,
    SMOKE_SCRIPT,
    SmokePlan,
    smoke_env,
)
from planning.verify_job_nccl import JOB_NCCL_GATE, JobNcclPlan, job_nccl_env


@dataclass(frozen=True, kw_only=True)
class SmokeGateArgs:
    """Inputs of a Ray job gate."""

    namespace: pulumi.Input[str]
    plan: SmokePlan | JobNcclPlan
    script: str
    """verify/gates/grpo_smoke.py (the submitter of both)."""
    dashboard_service: str
    """The RayCluster's head Service (dashboard on 8265)."""
    dashboard_token_secret: str
    """The Secret KubeRay generates for the RayCluster in token mode (its name)."""
    node_selector: pulumi.Input[Mapping[str, str]]
    """The system pool's: the gate needs no GPU, the run takes one from the RayCluster."""
    after: Sequence[pulumi.Resource] = ()
    """The RayCluster."""
    labels: Mapping[str, str] = field(default_factory=dict)
    priority_class: str | None = None
    """With the queue: smoke/gate priority, below training (planning.queue)."""


def _gate(args: SmokeGateArgs) -> tuple[str, dict[str, str], dict[str, str]]:
    """The gate's name, its container's environment and the Job's own annotations."""
    plan = args.plan
    if isinstance(plan, JobNcclPlan):
        return JOB_NCCL_GATE, job_nccl_env(plan, args.dashboard_service), {}
    return (
        SMOKE_GATE,
        smoke_env(plan, args.dashboard_service),
        {"nemo-rl-gke/run": plan.run.name, "nemo-rl-gke/log-dir": plan.run.log_dir},
    )


class GrpoSmokeGate(pulumi.ComponentResource):
    """The submitter script (a ConfigMap) and the Job that runs it: the GRPO smoke, or (as
    JobNcclGate) the job NCCL gate."""

    job: k8s.batch.v1.Job
    """What the GRPO RayJob waits for."""
    job_name: pulumi.Output[str]
    """The Job's name, once it completed (what `make verify` reads)."""

    TYPE = "nemo:verify:GrpoSmokeGate"

    def __init__(
        self, name: str, args: SmokeGateArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(self.TYPE, name, None, opts)
        plan = args.plan
        gate, env, annotations = _gate(args)
        labels = {"app.kubernetes.io/part-of": "nemo-rl-gke", **args.labels}
        script = scripts_config_map(
            f"{name}-script",
            f"verify-{gate}",
            {SMOKE_SCRIPT: args.script},
            args.namespace,
            labels,
            pulumi.ResourceOptions(parent=self),
        )
        container: dict[str, Any] = {
            "name": "gate",
            "image": plan.image,
            "command": ["python3", f"{GATE_MOUNT}/{SMOKE_SCRIPT}"],
            "env": [
                {
                    "name": "POD_NAMESPACE",
                    "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}},
                },
                {
                    # The Job's UID: one Ray submission per run of the Job.
                    "name": "GATE_RUN_ID",
                    "valueFrom": {
                        "fieldRef": {
                            "fieldPath": "metadata.labels['batch.kubernetes.io/controller-uid']"
                        }
                    },
                },
                *[{"name": k, "value": v} for k, v in env.items()],
            ],
            "resources": {
                "requests": {"cpu": "100m", "memory": "128Mi"},
                "limits": {"cpu": "500m", "memory": "256Mi"},
            },
            "volume_mounts": [
                {"name": "gates", "mountPath": GATE_MOUNT, "readOnly": True},
                {"name": "tmp", "mountPath": "/tmp"},
                {"name": "dashboard-token", "mountPath": DASHBOARD_TOKEN_DIR, "readOnly": True},
            ],
            "image_pull_policy": "Always",
            "security_context": {**MEASURE_SECURITY, **NON_ROOT},
            "termination_message_path": "/dev/termination-log",
        }
        self.job = k8s.batch.v1.Job(
            f"{name}-job",
            metadata={
                "name": plan.job_name,
                "namespace": args.namespace,
                "labels": {**labels, GATE_LABEL: gate},
                "annotations": {
                    # A failed gate runs again on the next up (a new submission to Ray).
                    "pulumi.com/replaceUnready": "true",
                    "nemo-rl-gke/fingerprint": plan.fingerprint,
                    **annotations,
                },
            },
            spec={
                "backoff_limit": 0,
                "active_deadline_seconds": plan.timeout_seconds,
                "template": {
                    "metadata": {"labels": {GATE_LABEL: gate, RAY_GATE_LABEL: "true"}},
                    "spec": {
                        "restart_policy": "Never",
                        # It only calls the Ray dashboard, never the API server.
                        "automount_service_account_token": False,
                        "security_context": {"seccomp_profile": {"type": "RuntimeDefault"}},
                        "node_selector": args.node_selector,
                        **(
                            {"priority_class_name": args.priority_class}
                            if args.priority_class
                            else {}
                        ),
                        "init_containers": [verdict_holder(plan.image)],
                        "containers": [container],
                        "volumes": [
                            {"name": "gates", "configMap": {"name": script.metadata.name}},
                            {"name": "tmp", "emptyDir": {}},
                            {
                                # Only the token's key: the gate sends it to the dashboard.
                                "name": "dashboard-token",
                                "secret": {
                                    "secretName": args.dashboard_token_secret,
                                    "items": [
                                        {
                                            "key": DASHBOARD_TOKEN_KEY,
                                            "path": DASHBOARD_TOKEN_NAME,
                                        }
                                    ],
                                },
                            },
                        ],
                    },
                },
            },
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=[script, *args.after],
                custom_timeouts=pulumi.CustomTimeouts(
                    create=f"{plan.timeout_seconds + AWAIT_MARGIN_SECONDS}s",
                    update=f"{plan.timeout_seconds + AWAIT_MARGIN_SECONDS}s",
                ),
            ),
        )
        self.job_name = self.job.metadata.name
        self.register_outputs({"job_name": self.job_name})


class JobNcclGate(GrpoSmokeGate):
    """The job NCCL gate's submitter script and Job (planning.verify_job_nccl)."""

    TYPE = "nemo:verify:JobNcclGate"
