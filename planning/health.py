"""Pure planning of the scheduled health checks: the acceptance gates, run again on a schedule.

A check is a CronJob whose Jobs go through the job queue like any workload: Kueue admits one
only when the GPUs it asks for are free, at the lowest priority, never preempting a run (the
stack's RayCluster holds the GPUs while it exists, so a check waits behind it as a queued run
does). A check runs its gate's own script with the gate's own floors (planning.verify); a
second container then reports the verdict on the nodes it measured: labels with the result,
the metric and the value, and on failure a `NoSchedule` taint that keeps new runs off the
node until a person clears it. Only that container holds a token, and the token may change
nothing of a node but the checks' own labels and taints (an admission policy the API server
enforces, below).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final, Literal, get_args

from planning.verify import GATES_DIR, GateName, GatePlan, GateSettings, VerifyInputs, plan_gates

HealthCheck = Literal["gpu-health", "rdma", "nccl"]
HEALTH_CHECKS: Final[tuple[HealthCheck, ...]] = get_args(HealthCheck)
"""The gates that watch the GPU pool after day one (storage is Lustre's, watched by Google)."""
HEALTH_PREFIX: Final = "health.nemo-rl-gke"
"""Prefix of every node label and taint a check writes (and the only ones it may write)."""
CHECK_LABEL: Final = "nemo-rl-gke/health-check"
"""Label of a check's CronJob, Jobs and pods (value: the check)."""
HEALTH_ACCOUNT: Final = "nemo-rl-health"
"""The reporting container's Kubernetes service account."""
REPORT_SCRIPT: Final = "health_report.py"
"""Python 3, standard library only: it reads the check's results and patches the nodes."""
REPORT_DIR: Final = "/report"
"""Where the check container leaves its results and exit status for the reporter."""
TOKEN_DIR: Final = "/var/run/secrets/kubernetes.io/serviceaccount"  # noqa: S105 - a folder
HISTORY_FAILED: Final = 3
"""Failed check Jobs (and their pods' logs) kept by the CronJob controller."""
HISTORY_SUCCEEDED: Final = 1
STARTING_DEADLINE_SECONDS: Final = 3600
"""A schedule missed by more than this (the controller was down) is skipped, not caught up."""


def result_label(check: str) -> str:
    """`pass` or `fail`: the node's last result of `check`."""
    return f"{HEALTH_PREFIX}/{check}"


def metric_label(check: str) -> str:
    """The metric the result is about (the first that failed, or the check's headline)."""
    return f"{HEALTH_PREFIX}/{check}-metric"


def value_label(check: str) -> str:
    """The metric's measured value, as the check printed it."""
    return f"{HEALTH_PREFIX}/{check}-value"


def time_label(check: str) -> str:
    """When the result was written (Unix seconds)."""
    return f"{HEALTH_PREFIX}/{check}-at"


def taint_key(check: str) -> str:
    """The `NoSchedule` taint a failed check puts on the node (value `failed`)."""
    return f"{HEALTH_PREFIX}/{check}"


@dataclass(frozen=True)
class HealthCheckPlan:
    """One scheduled check: a CronJob repeating one gate."""

    check: HealthCheck
    schedule: str
    time_zone: str
    gate: GatePlan
    """The gate it repeats: script, image, environment, floors and node count."""

    @property
    def name(self) -> str:
        """The CronJob's name (its Jobs are <name>-<minute>; at most 52 characters)."""
        return f"health-{self.check}"

    @property
    def headline(self) -> str:
        """The metric a passing node is labelled with."""
        return {
            "gpu-health": "gpus",
            "rdma": "rdma_devices",
            "nccl": "all_gather_avg_busbw",
        }[self.check]


def plan_health_checks(
    inputs: VerifyInputs,
    settings: GateSettings,
    checks: Sequence[HealthCheck],
    schedule: str,
    time_zone: str,
) -> list[HealthCheckPlan]:
    """The checks a pool can run, in the gates' order, with the gates' floors. A check the
    pool cannot run (RDMA on a pool without RDMA NICs, NCCL on one node) is planned by no
    gate and so by no check; the stack's rules refuse asking for one."""
    wanted = set(checks)
    forced = replace(
        settings,
        gpu_health="gpu-health" in wanted,
        rdma="rdma" in wanted,
        nccl="nccl" in wanted,
        storage=False,
    )
    by_gate: dict[GateName, GatePlan] = {g.gate: g for g in plan_gates(inputs, forced)}
    return [
        HealthCheckPlan(check=c, schedule=schedule, time_zone=time_zone, gate=by_gate[c])
        for c in HEALTH_CHECKS
        if c in by_gate
    ]


def health_scripts(gate_scripts: Mapping[str, str]) -> dict[str, str]:
    """ConfigMap data of the checks: the gates' scripts and the reporter."""
    return {**gate_scripts, REPORT_SCRIPT: (GATES_DIR / REPORT_SCRIPT).read_text("utf-8")}


def report_script_path() -> Path:
    """The reporter as shipped (tests run it against a real API server)."""
    return GATES_DIR / REPORT_SCRIPT


def node_report_policy(namespace: str, account: str = HEALTH_ACCOUNT) -> dict[str, Any]:
    """A ValidatingAdmissionPolicy: the reporter's account may change a node's health labels
    and taints and nothing else (RBAC can only grant `patch` on every node, whole)."""
    prefix = f"'{HEALTH_PREFIX}/'"

    def others(side: str, field: str) -> str:
        return f"{side}.{field}.orValue({{}}).filter(k, !k.startsWith({prefix}))"

    return {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "resourceRules": [
                {
                    "apiGroups": [""],
                    "apiVersions": ["v1"],
                    "operations": ["UPDATE"],
                    "resources": ["nodes", "nodes/status"],
                }
            ]
        },
        "matchConditions": [
            {
                "name": "health-reporter",
                "expression": f"request.userInfo.username =="
                f" 'system:serviceaccount:{namespace}:{account}'",
            }
        ],
        "validations": [
            {
                "expression": f"{others('object', 'metadata.?labels')}.all(k,"
                " k in oldObject.metadata.?labels.orValue({}) &&"
                " oldObject.metadata.labels[k] == object.metadata.labels[k])"
                f" && {others('oldObject', 'metadata.?labels')}.all(k,"
                " k in object.metadata.?labels.orValue({}))",
                "message": f"the health reporter may change only {HEALTH_PREFIX}/ labels",
                "reason": "Forbidden",
            },
            {
                "expression": "object.spec.?taints.orValue([]).filter(t,"
                f" !t.key.startsWith({prefix})) == oldObject.spec.?taints.orValue([]).filter(t,"
                f" !t.key.startsWith({prefix}))",
                "message": f"the health reporter may change only {HEALTH_PREFIX}/ taints",
                "reason": "Forbidden",
            },
            {
                "expression": "object.metadata.?annotations.orValue({}) =="
                " oldObject.metadata.?annotations.orValue({})"
                " && object.spec.?unschedulable.orValue(false) =="
                " oldObject.spec.?unschedulable.orValue(false)"
                " && object.spec.?providerID.orValue('') =="
                " oldObject.spec.?providerID.orValue('')",
                "message": "the health reporter may not change a node's annotations or spec",
                "reason": "Forbidden",
            },
            {
                # An empty subResource is absent from the request (the real API server: "no
                # such key"), hence the optional read.
                "expression": "request.?subResource.orValue('') == ''",
                "message": "the health reporter may not change a node's status",
                "reason": "Forbidden",
            },
        ],
    }


def health_status_command(checks: Sequence[str]) -> str:
    """Every GPU node with its checks' results and taints."""
    columns = ",".join(
        col for c in checks for col in (result_label(c), metric_label(c), value_label(c))
    )
    taints = '\'{range .items[*]}{.metadata.name}{"\\t"}{.spec.taints}{"\\n"}{end}\''
    return (
        f"kubectl get nodes -l nemo-rl-gke/pool=gpu -L {columns} && kubectl get nodes"
        f" -l nemo-rl-gke/pool=gpu -o jsonpath={taints}"
    )
