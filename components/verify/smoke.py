"""The GRPO smoke gate: a Job that runs a few NeMo RL steps on the RayCluster and waits.

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
    SMOKE_GATE,
    SMOKE_SCRIPT,
    SmokePlan,
    smoke_env,
)


@dataclass(frozen=True, kw_only=True)
class SmokeGateArgs:
    """Inputs of the smoke gate."""

    namespace: pulumi.Input[str]
    plan: SmokePlan
    script: str
    """verify/gates/grpo_smoke.py."""
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


class GrpoSmokeGate(pulumi.ComponentResource):
    """The smoke script (a ConfigMap) and the Job that runs it."""

    job: k8s.batch.v1.Job
    """What the GRPO RayJob waits for."""
    job_name: pulumi.Output[str]
    """The Job's name, once it completed (what `make verify` reads)."""

    def __init__(
        self, name: str, args: SmokeGateArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("nemo:verify:GrpoSmokeGate", name, None, opts)
        plan = args.plan
        labels = {"app.kubernetes.io/part-of": "nemo-rl-gke", **args.labels}
        script = scripts_config_map(
            f"{name}-script",
            f"verify-{SMOKE_GATE}",
            {SMOKE_SCRIPT: args.script},
            args.namespace,
            labels,
            pulumi.ResourceOptions(parent=self),
        )
        env = smoke_env(plan, args.dashboard_service)
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
                "labels": {**labels, GATE_LABEL: SMOKE_GATE},
                "annotations": {
                    # A failed smoke runs again on the next up (a new submission to Ray).
                    "pulumi.com/replaceUnready": "true",
                    "nemo-rl-gke/fingerprint": plan.fingerprint,
                    "nemo-rl-gke/run": plan.run.name,
                    "nemo-rl-gke/log-dir": plan.run.log_dir,
                },
            },
            spec={
                "backoff_limit": 0,
                "active_deadline_seconds": plan.timeout_seconds,
                "template": {
                    "metadata": {"labels": {GATE_LABEL: SMOKE_GATE}},
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
