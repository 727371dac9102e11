"""Reaching a run: its curves, the dashboard and its token, another submission."""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from typing import Any

from planning.ray.driver import grpo_script_text
from planning.ray.pods import NEMO_RL_DIR
from planning.ray.run import GIB_RESOURCE, GrpoRun

TENSORBOARD_PORT = 6006
TENSORBOARD_PID = "/tmp/nemo-rl-gke-tensorboard.pid"
TENSORBOARD_LOG = "/tmp/nemo-rl-gke-tensorboard.log"
TENSORBOARD_READY_SECONDS = 60


def curves_board_script() -> str:
    """What runs in the Ray head for the curves: TensorBoard over the folder given as $1, on
    the pod's loopback. One server at a time: the one an earlier call started (its process
    group, from the PID file) is stopped first, otherwise the new one cannot bind the port and
    the port-forward shows the old run. It returns once the new server listens, or fails with
    its log."""
    wait = TENSORBOARD_READY_SECONDS * 5
    return (
        f"if [ -s {TENSORBOARD_PID} ]; then old=$(cat {TENSORBOARD_PID});"
        ' kill -- "-$old" 2>/dev/null;'
        f' for _ in $(seq {wait}); do kill -0 -- "-$old" 2>/dev/null || break; sleep 0.2; done;'
        " fi;"
        f" cd {NEMO_RL_DIR} && : > {TENSORBOARD_LOG} &&"
        ' { setsid nohup uv run tensorboard --logdir "$1" --host 127.0.0.1'
        f" --port {TENSORBOARD_PORT} > {TENSORBOARD_LOG} 2>&1 < /dev/null &"
        f" echo $! > {TENSORBOARD_PID}; }};"
        f" for _ in $(seq {wait}); do grep -q 'at http://127.0.0.1:{TENSORBOARD_PORT}'"
        f' {TENSORBOARD_LOG} && exit 0; kill -0 "$(cat {TENSORBOARD_PID})" 2>/dev/null || break;'
        f" sleep 0.2; done; cat {TENSORBOARD_LOG} >&2; exit 1"
    )


def curves_command(namespace: str, cluster: str, run: GrpoRun) -> str:
    """TensorBoard over a run's logs (the stack's run, or RUN_LOGS), started on the Ray head
    (the image has it: NeMo RL's logger writes with it) on the pod's loopback only, reached
    through a port-forward: nothing is opened to the cluster."""
    head = f"ray.io/cluster={cluster},ray.io/node-type=head"
    return (
        f'RUN_LOGS="${{RUN_LOGS:-{run.log_dir}}}" && HEAD=$(kubectl -n {namespace} get pod -l'
        f" {head} -o name) && kubectl -n {namespace} exec"
        f' "$HEAD" -c ray-head -- bash -c {shlex.quote(curves_board_script())} curves'
        f' "$RUN_LOGS" && kubectl -n {namespace} port-forward "$HEAD"'
        f" {TENSORBOARD_PORT}:{TENSORBOARD_PORT}"
    )


DASHBOARD_PORT = 8265


def port_forward_command(namespace: str, service: str) -> str:
    """Reach the Ray dashboard on localhost:8265."""
    return f"kubectl -n {namespace} port-forward svc/{service} {DASHBOARD_PORT}:{DASHBOARD_PORT}"


OPERATOR_POD_LABELS = {"app.kubernetes.io/name": "kuberay-operator"}
"""The KubeRay chart's labels on its operator pod (nameOverride in its values)."""
RAY_POD_SELECTOR = {"matchExpressions": [{"key": "ray.io/node-type", "operator": "Exists"}]}
"""Every pod KubeRay makes for a Ray cluster (head and workers, any cluster of the namespace)."""


def dashboard_ingress(operator_namespace: str | None, smoke_labels: Mapping[str, str]) -> Any:
    """The NetworkPolicy spec over the Ray pods: every port among themselves; the dashboard
    (8265) only for the KubeRay operator and the smoke gate's pods. Without the operator's
    namespace (GKE's add-on) the dashboard port is open to the cluster, as its token guards it."""
    dashboard: dict[str, Any] = {"ports": [{"port": DASHBOARD_PORT, "protocol": "TCP"}]}
    if operator_namespace is not None:
        dashboard["from"] = [
            {
                "namespaceSelector": {
                    "matchLabels": {"kubernetes.io/metadata.name": operator_namespace}
                },
                "podSelector": {"matchLabels": dict(OPERATOR_POD_LABELS)},
            },
            {"podSelector": {"matchLabels": dict(smoke_labels)}},
        ]
    return {
        "podSelector": RAY_POD_SELECTOR,
        "policyTypes": ["Ingress"],
        "ingress": [{"from": [{"podSelector": RAY_POD_SELECTOR}]}, dashboard],
    }


DASHBOARD_TOKEN_KEY = "auth_token"  # noqa: S105 - a key name, not a token
"""The key of the token Secret KubeRay 1.7 generates for a RayCluster in token mode."""


def dashboard_token_command(namespace: str, cluster: str) -> str:
    """Print the Ray dashboard's token: with `authOptions.mode: token`, KubeRay 1.7 generates it
    into a Secret named after the RayCluster."""
    return (
        f"kubectl -n {namespace} get secret {cluster}"
        f" -o jsonpath='{{.data.{DASHBOARD_TOKEN_KEY}}}' | base64 -d"
    )


def submit_command(run: GrpoRun, token_command: str) -> str:
    """`ray job submit` of the same GRPO run through a dashboard port-forward.

    The dashboard asks for its token, which Ray's client sends when RAY_AUTH_MODE is `token`;
    the run's own tokens are not on the command line (the Ray pods read them from the
    Kubernetes Secret). On RDMA GPUs the driver asks for the gIB worker resource, as the RayJob
    does.
    """
    placement = (
        f" --entrypoint-resources {shlex.quote(json.dumps({GIB_RESOURCE: 1}))}" if run.rdma else ""
    )
    return (
        f'RAY_AUTH_MODE=token RAY_AUTH_TOKEN="$({token_command})"'
        f" ray job submit --address http://localhost:8265{placement}"
        f" -- bash -c {shlex.quote(grpo_script_text(run))}"
    )
