"""Ray's own log files shipped out of its pods: the sidecar, where the copies go, how to read them.

Ray keeps every process's log (raylet, GCS, each worker's and actor's stdout and stderr, the job
driver's) as files in the pod's session folder; GKE's agent sends container output only, and the
files go with the pod. Each Ray pod of the stack (the RayCluster's, and the cluster a RayJob or
a queued run brings) gets a native sidecar running workload/ray_logs.py: the lines to Cloud
Logging as structured entries, the bytes to the shared volume (operations-facts §5: KubeRay's
and Google's samples add a Fluent Bit sidecar for the first; its image is one more to pin and
pull, where this runs in the NeMo RL image the node already has).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, Final, Literal

from planning.ray import DATA_DIR, WORKLOAD_DIR, GrpoRun

LogTarget = Literal["cloudLogging", "volume"]
LOG_TARGETS: Final[tuple[LogTarget, ...]] = ("cloudLogging", "volume")
"""Where Ray's log files go (`ray.shipLogs`): Cloud Logging, the run's folder on /data."""

SHIPPER_CONTAINER: Final = "ray-logs"
SHIPPER_SCRIPT: Final = "ray_logs.py"
SHIPPER_CONFIG_MAP: Final = "nemo-rl-gke-ray-logs"
SHIPPER_VOLUME: Final = "ray-logs-shipper"
SHIPPER_MOUNT: Final = "/opt/nemo-rl-gke/ray-logs"
NO_TOKEN_VOLUME: Final = "ray-logs-no-token"  # noqa: S105 - a volume name
TOKEN_MOUNT: Final = "/var/run/secrets/kubernetes.io/serviceaccount"  # noqa: S105 - a folder
"""Where Kubernetes mounts the pod's service-account token in every container that has nothing
mounted there: an autoscaling head has one (for Ray's autoscaler); the sidecar does not."""
STATE_VOLUME: Final = "ray-logs-state"
STATE_DIR: Final = "/var/lib/nemo-rl-gke/ray-logs"
"""The sidecar's read positions: an emptyDir lives as long as the pod, so a restarted sidecar
goes on where it stopped instead of sending and copying every file again."""
RAY_TEMP_VOLUME: Final = "ray-logs"
"""The Ray container's /tmp/ray emptyDir, which the sidecar reads."""
RAY_TEMP_DIR: Final = "/tmp/ray"  # noqa: S108 - Ray's temp folder inside the pod
SHIPPER_CPU_MILLIS: Final = 100
SHIPPER_MEMORY_MIB: Final = 128
"""The sidecar's requests (= limits, so a worker pod stays Guaranteed): what KubeRay's Fluent Bit
sample asks for. Kueue and the scheduler add them to the pod's (native sidecars count)."""
SHIPPER_INTERVAL_SECONDS: Final = 5
RUN_LABEL: Final = "run"
"""The Cloud Logging label the sidecar gives a run's lines (workload/ray_logs.py)."""


@dataclass(frozen=True)
class LogShipping:
    """Where the sidecar sends Ray's log files."""

    cloud_logging: bool
    volume: bool

    @property
    def on(self) -> bool:
        """Whether Ray pods get the sidecar at all."""
        return self.cloud_logging or self.volume


def log_shipping(targets: tuple[LogTarget, ...]) -> LogShipping:
    """`ray.shipLogs` as a plan."""
    return LogShipping(cloud_logging="cloudLogging" in targets, volume="volume" in targets)


def shipper_script() -> str:
    """workload/ray_logs.py, the sidecar's program (a ConfigMap key)."""
    return (WORKLOAD_DIR / SHIPPER_SCRIPT).read_text(encoding="utf-8")


def cluster_log_dir(runs_dir: str, cluster: str) -> str:
    """Where the stack's RayCluster's pods copy Ray's logs: beside the runs' folders (the
    cluster outlives every run on it; a run's files carry its Ray job id)."""
    return str(PurePosixPath(runs_dir).parent / "ray-logs" / cluster)


def run_log_dir(run: GrpoRun) -> str:
    """Where the pods of a cluster that a run brings copy Ray's logs: in the run's folder."""
    return f"{run.log_dir}/ray"


def shipper_container(
    image: str, shipping: LogShipping, copy_dir: str | None, run: str | None
) -> dict[str, Any]:
    """The sidecar (an init container that runs for the pod's life, Kubernetes' native
    sidecar: it starts before Ray and is stopped after it, so it ships Ray's last lines). It
    reads Ray's temp folder read-only, writes only under `copy_dir`, and never holds the pod's
    token (an empty folder is mounted where Kubernetes would put it)."""
    resources = {"cpu": f"{SHIPPER_CPU_MILLIS}m", "memory": f"{SHIPPER_MEMORY_MIB}Mi"}
    env: list[dict[str, Any]] = [
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "RAY_LOGS_RAY_DIR", "value": RAY_TEMP_DIR},
        {"name": "RAY_LOGS_CLOUD", "value": "1" if shipping.cloud_logging else "0"},
        {"name": "RAY_LOGS_INTERVAL_SECONDS", "value": str(SHIPPER_INTERVAL_SECONDS)},
        {"name": "RAY_LOGS_STATE_DIR", "value": STATE_DIR},
    ]
    mounts: list[dict[str, Any]] = [
        {"name": RAY_TEMP_VOLUME, "mountPath": RAY_TEMP_DIR, "readOnly": True},
        {"name": STATE_VOLUME, "mountPath": STATE_DIR},
        {"name": SHIPPER_VOLUME, "mountPath": SHIPPER_MOUNT, "readOnly": True},
        {"name": NO_TOKEN_VOLUME, "mountPath": TOKEN_MOUNT, "readOnly": True},
    ]
    if shipping.volume and copy_dir is not None:
        env.append({"name": "RAY_LOGS_COPY_DIR", "value": copy_dir})
        mounts.append({"name": "data", "mountPath": DATA_DIR})
    if run:
        env.append({"name": "RAY_LOGS_RUN", "value": run})
    return {
        "name": SHIPPER_CONTAINER,
        "image": image,
        "restartPolicy": "Always",
        "command": ["python3", f"{SHIPPER_MOUNT}/{SHIPPER_SCRIPT}"],
        "env": env,
        "resources": {"requests": resources, "limits": resources},
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            # Root, as Ray in the same image, without any capability: it writes only in the
            # folders Ray (root) made for the run and in those it makes itself.
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "volumeMounts": mounts,
    }


def shipper_volumes() -> list[dict[str, Any]]:
    """The pod volumes of the sidecar: its program, the empty folder over the token's, and its
    read positions."""
    return [
        {"name": SHIPPER_VOLUME, "configMap": {"name": SHIPPER_CONFIG_MAP}},
        {"name": NO_TOKEN_VOLUME, "emptyDir": {"sizeLimit": "1Mi"}},
        {"name": STATE_VOLUME, "emptyDir": {"sizeLimit": "16Mi"}},
    ]


def logging_filter(namespace: str, cluster: str | None = None, run: str | None = None) -> str:
    """A Cloud Logging filter for the Ray log lines the sidecars sent: of one RayCluster (its
    pods carry `ray.io/cluster`) or of one run (the `run` label the sidecar sets)."""
    parts = [
        'resource.type="k8s_container"',
        f'resource.labels.namespace_name="{namespace}"',
        f'resource.labels.container_name="{SHIPPER_CONTAINER}"',
    ]
    if cluster is not None:
        parts.append(f'labels."k8s-pod/ray_io/cluster"="{cluster}"')
    if run is not None:
        parts.append(f'labels.{RUN_LABEL}="{run}"')
    return " AND ".join(parts)


def logs_command(project: str, namespace: str, cluster: str) -> str:
    """Reads the last day's Ray log lines of the stack's RayCluster from Cloud Logging."""
    query = logging_filter(namespace, cluster=cluster)
    return (
        f"gcloud logging read {shlex.quote(query)} --project {shlex.quote(project)}"
        " --freshness 1d --order asc --format 'value(timestamp,labels.ray_log,jsonPayload.message)'"
    )
