"""Scheduled health checks: the gates as CronJobs through the job queue, reporting on nodes.

Each check's Job is the gate's own Job (components.verify.gates) with three changes: the gate
runs as an init container that always ends well and leaves its results and exit status in
a shared folder; a small reporter container then labels the measured nodes (and taints a
failed one), and exits with the check's status; and the Job carries the queue's label, so
Kueue admits it only when the GPUs are free, at the lowest priority. Only the reporter holds a
token; RBAC lets it patch nodes, and an admission policy the API server enforces narrows that
to the checks' own labels and taints.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.verify.gates import (
    MEASURE_SECURITY,
    NON_ROOT,
    VerificationArgs,
    gate_job_spec,
    scripts_config_map,
)
from planning.health import (
    CHECK_LABEL,
    HEALTH_ACCOUNT,
    HEALTH_CHECKS,
    HISTORY_FAILED,
    HISTORY_SUCCEEDED,
    REPORT_DIR,
    REPORT_SCRIPT,
    STARTING_DEADLINE_SECONDS,
    TOKEN_DIR,
    HealthCheckPlan,
    node_report_policy,
    taint_key,
)
from planning.queue import QUEUE_LABEL
from planning.verify import GATE_LABEL, GATE_MOUNT

TOKEN_SECONDS = 3600
"""Lifetime of the reporter's projected token (the kubelet renews it; the pod lives minutes)."""
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"


@dataclass(frozen=True, kw_only=True)
class HealthCheckArgs:
    """Inputs of the scheduled checks."""

    checks: Sequence[HealthCheckPlan]
    gates: VerificationArgs
    """How the gates' Jobs are built on this stack (pool, networks, claims)."""
    local_queue: str
    placement: Mapping[str, Mapping[str, str]]
    """Check -> the pod set's topology annotations (one domain for NCCL's pair)."""
    reporter_image: str
    priority_class: str
    after: Sequence[pulumi.Resource] = ()
    labels: Mapping[str, str] = field(default_factory=dict)


REPORT_ROLE = "nemo-rl-gke-health-report"


def role_for_account(
    name: str,
    *,
    rules: Sequence[Mapping[str, Any]],
    namespace: pulumi.Input[str],
    cluster_wide: bool,
    labels: Mapping[str, str],
    opts: pulumi.ResourceOptions,
) -> pulumi.Resource:
    """A (Cluster)Role with `rules` bound to the reporter's account; returns the binding (the
    grant is in force once it exists)."""
    meta: dict[str, Any] = {"name": REPORT_ROLE, "labels": labels}
    if not cluster_wide:
        meta["namespace"] = namespace
    kind = "ClusterRole" if cluster_wide else "Role"
    role_type = k8s.rbac.v1.ClusterRole if cluster_wide else k8s.rbac.v1.Role
    role = role_type(f"{name}-role", metadata=meta, rules=rules, opts=opts)
    binding_type = k8s.rbac.v1.ClusterRoleBinding if cluster_wide else k8s.rbac.v1.RoleBinding
    return binding_type(
        f"{name}-binding",
        metadata=meta,
        role_ref={
            "api_group": "rbac.authorization.k8s.io",
            "kind": kind,
            "name": role.metadata.name,
        },
        subjects=[{"kind": "ServiceAccount", "name": HEALTH_ACCOUNT, "namespace": namespace}],
        opts=opts,
    )


class HealthChecks(pulumi.ComponentResource):
    """The reporter's account and its limits, the scripts, and one CronJob per check."""

    cronjobs: pulumi.Output[dict[str, str]]
    """Check -> CronJob name."""

    def __init__(
        self, name: str, args: HealthCheckArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("nemo:verify:HealthChecks", name, None, opts)
        labels = {"app.kubernetes.io/part-of": "nemo-rl-gke", **args.labels}
        child = pulumi.ResourceOptions(parent=self, depends_on=list(args.after))
        namespace = args.gates.namespace
        account = k8s.core.v1.ServiceAccount(
            f"{name}-reporter",
            metadata={"name": HEALTH_ACCOUNT, "namespace": namespace, "labels": labels},
            automount_service_account_token=False,
            opts=child,
        )
        node_binding = role_for_account(
            f"{name}-node",
            rules=[{"api_groups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]}],
            namespace=namespace,
            cluster_wide=True,
            labels=labels,
            opts=child,
        )
        # A two-node NCCL result is about both nodes: the reporter finds them from its Job's pods.
        pod_binding = role_for_account(
            f"{name}-pod",
            rules=[{"api_groups": [""], "resources": ["pods"], "verbs": ["list"]}],
            namespace=namespace,
            cluster_wide=False,
            labels=labels,
            opts=child,
        )
        policy = k8s.admissionregistration.v1.ValidatingAdmissionPolicy(
            f"{name}-policy",
            metadata={"name": "nemo-rl-gke-health-report", "labels": labels},
            spec=pulumi.Output.from_input(namespace).apply(node_report_policy),
            opts=child,
        )
        policy_binding = k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding(
            f"{name}-policy-binding",
            metadata={"name": "nemo-rl-gke-health-report", "labels": labels},
            spec={"policy_name": policy.metadata.name, "validation_actions": ["Deny"]},
            opts=child,
        )
        scripts = scripts_config_map(
            f"{name}-scripts", "health-checks", args.gates.scripts, namespace, labels, child
        )
        # The token may touch a node only once its limits are in force.
        ready = [account, node_binding, pod_binding, policy_binding, scripts]
        names: dict[str, pulumi.Output[str]] = {}
        for plan in args.checks:
            peers: list[pulumi.Resource] = []
            if plan.gate.peers:
                peers = [
                    k8s.core.v1.Service(
                        f"{name}-{plan.check}-peers",
                        metadata={"name": plan.name, "namespace": namespace, "labels": labels},
                        spec={
                            "cluster_ip": "None",
                            "publish_not_ready_addresses": True,
                            "selector": {CHECK_LABEL: plan.check},
                            "ports": [{"name": "ssh", "port": 222, "protocol": "TCP"}],
                        },
                        opts=child,
                    )
                ]
            cronjob = k8s.batch.v1.CronJob(
                f"{name}-{plan.check}",
                metadata={
                    "name": plan.name,
                    "namespace": namespace,
                    "labels": {**labels, CHECK_LABEL: plan.check},
                    "annotations": {"nemo-rl-gke/fingerprint": plan.gate.fingerprint},
                },
                spec={
                    "schedule": plan.schedule,
                    "time_zone": plan.time_zone,
                    # One run of a check at a time; one waiting in the queue is the next.
                    "concurrency_policy": "Forbid",
                    "starting_deadline_seconds": STARTING_DEADLINE_SECONDS,
                    "successful_jobs_history_limit": HISTORY_SUCCEEDED,
                    "failed_jobs_history_limit": HISTORY_FAILED,
                    "job_template": {
                        "metadata": {
                            "labels": {
                                **labels,
                                CHECK_LABEL: plan.check,
                                QUEUE_LABEL: args.local_queue,
                            }
                        },
                        "spec": check_job_spec(
                            args,
                            plan,
                            scripts.metadata.name,
                            args.placement.get(plan.check, {}),
                        ),
                    },
                },
                opts=pulumi.ResourceOptions(parent=self, depends_on=[*ready, *peers]),
            )
            names[plan.check] = cronjob.metadata.name
        self.cronjobs = pulumi.Output.all(**names).apply(lambda found: dict(found))
        self.register_outputs({"cronjobs": self.cronjobs})


def check_job_spec(
    args: HealthCheckArgs,
    plan: HealthCheckPlan,
    scripts: pulumi.Input[str],
    placement: Mapping[str, str],
) -> dict[str, Any]:
    """The gate's Job spec, turned into a check that reports on its nodes (module docstring)."""
    spec = gate_job_spec(args.gates, plan.gate, scripts)  # built afresh: ours to change
    template = spec["template"]
    pod = template["spec"]
    gate = pod["containers"][0]
    env = [e for e in gate["env"] if e["name"] != "GATE_JOB"]
    job_name = {"fieldRef": {"fieldPath": f"metadata.labels['{JOB_NAME_LABEL}']"}}
    env += [
        # Each run of the CronJob is a new Job: its pods learn its name from their labels.
        {"name": "GATE_JOB", "valueFrom": job_name},
        {"name": "GATE_TMP", "value": REPORT_DIR},
        {"name": "TERMINATION_LOG", "value": f"{REPORT_DIR}/message"},
    ]
    if plan.gate.peers:
        env = [e for e in env if e["name"] != "GATE_DOMAIN"]
        env.append(
            {"name": "GATE_DOMAIN", "value": f"{plan.name}.$(POD_NAMESPACE).svc.cluster.local"}
        )
        pod["subdomain"] = plan.name
    report = {"name": "report", "mountPath": REPORT_DIR}
    # The gate's verdict is the reporter's to act on: the check container always ends well.
    script = f"{GATE_MOUNT}/{plan.gate.script}"
    wrapped = f"{plan.gate.interpreter} {script}; echo $? > {REPORT_DIR}/status; exit 0"
    check = {
        **gate,
        "name": "check",
        "command": ["/bin/sh", "-c", wrapped],
        "env": env,
        "volume_mounts": [*gate["volume_mounts"], report],
    }
    check.pop("termination_message_path", None)
    reporter = {
        "name": "report",
        "image": args.reporter_image,
        "command": ["python3", f"{GATE_MOUNT}/{REPORT_SCRIPT}"],
        "env": [
            {"name": "CHECK_NAME", "value": plan.check},
            {"name": "CHECK_HEADLINE", "value": plan.headline},
            {"name": "CHECK_PEERS", "value": "1" if plan.gate.peers else "0"},
            {"name": "CHECK_JOB", "valueFrom": job_name},
            {"name": "REPORT_DIR", "value": REPORT_DIR},
            {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
            {
                "name": "POD_NAMESPACE",
                "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}},
            },
        ],
        "resources": {
            "requests": {"cpu": "50m", "memory": "64Mi"},
            "limits": {"cpu": "200m", "memory": "128Mi"},
        },
        "volume_mounts": [
            {"name": "gates", "mountPath": GATE_MOUNT, "readOnly": True},
            {**report, "readOnly": True},
            {"name": "token", "mountPath": TOKEN_DIR, "readOnly": True},
        ],
        "image_pull_policy": "Always",
        "security_context": {**MEASURE_SECURITY, **NON_ROOT},
    }
    volumes = [
        *pod["volumes"],
        {"name": "report", "emptyDir": {"sizeLimit": "64Mi"}},
        {
            # The token, in the reporter only: the check's own container never sees it.
            "name": "token",
            "projected": {
                "sources": [
                    {
                        "serviceAccountToken": {
                            "path": "token",
                            "expirationSeconds": TOKEN_SECONDS,
                        }
                    },
                    {
                        "configMap": {
                            "name": "kube-root-ca.crt",
                            "items": [{"key": "ca.crt", "path": "ca.crt"}],
                        }
                    },
                ]
            },
        },
    ]
    # A node an earlier check tainted can be measured again (a person clears the taint).
    tolerations = pulumi.Output.from_input(pod["tolerations"]).apply(
        lambda given: [
            *given,
            *(
                {"key": taint_key(c), "operator": "Exists", "effect": "NoSchedule"}
                for c in HEALTH_CHECKS
            ),
        ]
    )
    # A check is not a gate: `make verify` and the gates' selectors never see its pods.
    template["metadata"]["labels"] = {
        **{k: v for k, v in template["metadata"]["labels"].items() if k != GATE_LABEL},
        CHECK_LABEL: plan.check,
    }
    template["metadata"]["annotations"] = {**template["metadata"]["annotations"], **placement}
    template["spec"] = {
        **pod,
        "service_account_name": HEALTH_ACCOUNT,
        "automount_service_account_token": False,
        "priority_class_name": args.priority_class,
        "tolerations": tolerations,
        "init_containers": [check],
        "containers": [reporter],
        "volumes": volumes,
    }
    return spec
