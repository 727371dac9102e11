"""The kubelet's part for the Ray pods the real KubeRay operator creates, done by the agent.

kwok makes pods Running without running anything; Ray pods (label `ray.io/node-type`: heads and
workers of every RayCluster, including the clusters RayJobs bring) are left out of kwok's stages
(testbed.local_cluster) and run here instead, as real Ray 2.55.1 nodes on this host:

- each pod gets a loopback address (127.101.0.0/16 by default, apart from kwok's
  127.100.0.0/16) and host ports of its own (testbed.ray_node), recorded in its status as podIP;
- its init containers, then its Ray container, run the pod's own command, args and env as
  KubeRay generated them (values, downward-API fields, Secret keys resolved as the kubelet does),
  with container paths mapped to the test bed's folders (testbed.node_fs), the cluster DNS names
  in them resolved to the Service's ready endpoint (testbed.cluster_network), and `ray start` told
  its address and ports (testbed.ray_node) - all logged. GPUs come only from what that command
  passes to `ray start`; nothing here declares any;
- every container is a process group of its own, ended by its id when the pod goes; nothing runs
  `ray stop`;
- the pod's status is what a kubelet writes: Pending with podIP while init containers run,
  Running, Ready once the container's readiness probe (KubeRay's HTTP check on the dashboard
  agent) answers, and how the container ended, with its termination message (the log's tail
  under FallbackToLogsOnError). Containers are not restarted.

Native sidecars (init containers with `restartPolicy: Always`, the stack's Ray log shipper) run
as the kubelet runs them: started in their turn among the init containers without being waited
for, with their own mounts of the pod's volumes (ConfigMap volumes hold the ConfigMap's keys),
and stopped after the pod's other containers. Other containers of a Ray pod (the autoscaler
sidecar of an autoscaling RayCluster) are reported running without a process: the Ray autoscaler
needs the in-cluster API, which pods here cannot reach. The log says so.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import signal
import subprocess
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from planning.catalog import GPU_CATALOG
from planning.kube import ACCELERATOR_LABEL
from planning.ray import GATED_MODEL_ORGS
from testbed.cluster_network import SERVICE_NAME, ClusterNetwork, KubeApi
from testbed.hub_server import serve_in_background, write_gsm8k
from testbed.node_fs import (
    NodeFolders,
    NodeFs,
    container_environment,
    install_node_folders,
    pod_fs,
    register_node,
    sidecar_fs,
)
from testbed.ray_node import NodeAddress, allocate, localize_ray_start, start_process

NODE_TYPE_LABEL = "ray.io/node-type"
POD_NETWORK = os.environ.get(POD_NETWORK_ENV := "NEMO_RL_GKE_POD_NETWORK", "127.101")
"""The first two octets of the pods' loopback addresses; a second local cluster running beside
the first (a test module of its own) takes another (testbed.local_cluster.CLUSTER_ENV)."""
STOP_SECONDS = 8.0
SECRET_SYNC_SECONDS = 5.0
TERMINATION_MESSAGE_BYTES = 2048
"""What the kubelet keeps of a log's tail as a termination message (FallbackToLogsOnError)."""


def now() -> str:
    """A Kubernetes timestamp."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Container:
    """One container's process."""

    name: str
    proc: subprocess.Popen[bytes]
    log: Path
    started: str
    ended: str = ""


@dataclass
class RayPod:
    """A Ray pod run by the test bed."""

    uid: str
    name: str
    namespace: str
    pod: dict[str, Any]
    fs: NodeFs
    address: NodeAddress
    host_ip: str
    pending_init: list[dict[str, Any]]
    done_init: list[Container] = field(default_factory=list)
    init: Container | None = None
    main: Container | None = None
    ready: bool = False
    reported_end: bool = False
    started: str = field(default_factory=now)
    next_probe: float = 0.0
    waiting: str = ""
    next_secret_sync: float = 0.0
    sidecars: list[Container] = field(default_factory=list)
    """Native sidecars started so far (init containers with restartPolicy Always)."""

    @property
    def ray_container(self) -> dict[str, Any]:
        """The Ray container (KubeRay's index 0)."""
        container: dict[str, Any] = self.pod["spec"]["containers"][0]
        return container

    def running(self) -> list[Container]:
        """The pod's containers whose process group may still have processes, its native
        sidecars last (the order the kubelet stops them in)."""
        return [*(c for c in (self.init, self.main) if c is not None), *self.sidecars]


GIVEN_SECRETS = "secrets-given.json"
"""Every Secret value the agent put into a container's environment (a JSON list)."""


class RayPods:
    """Runs the Ray pods bound to kwok nodes and reports them as their kubelet."""

    def __init__(
        self,
        root: Path,
        api: KubeApi,
        kubectl: Callable[..., subprocess.CompletedProcess[str]],
        say: Callable[[str], None],
    ) -> None:
        self.root = root
        self.api = api
        self.kubectl = kubectl
        self.say = say
        self.folders = NodeFolders(root / "n")
        install_node_folders(self.folders, GATED_MODEL_ORGS)
        # The Hub the pods reach: GSM8K for the driver's online preparation (real `datasets`).
        write_gsm8k(root / "hub")
        self.hub = serve_in_background(root / "hub")
        self.pods: dict[str, RayPod] = {}
        self.by_ip: dict[str, RayPod] = {}
        self.count = 0
        self.network: ClusterNetwork | None = None

    def host_port(self, ip: str, port: int) -> int | None:
        """The host port of a Ray pod's container port (cluster_network's lookup)."""
        pod = self.by_ip.get(ip)
        return pod.address.host_port(port) if pod else None

    def step(self) -> None:
        """One round: admit new pods, advance the running ones, stop the deleted ones."""
        pods = self.api.items(f"/api/v1/pods?labelSelector={NODE_TYPE_LABEL}")
        alive = {
            p["metadata"]["uid"]: p
            for p in pods
            if p["spec"].get("nodeName") and not p["metadata"].get("deletionTimestamp")
        }
        for uid in [u for u in self.pods if u not in alive]:
            self.stop(self.pods.pop(uid), "was deleted")
        for uid, pod in alive.items():
            if uid not in self.pods:
                self.admit(pod)
            self.advance(self.pods[uid])

    # --- admission -------------------------------------------------------------------------

    def admit(self, pod: dict[str, Any]) -> None:
        """Give a new pod its address and folder; report it Pending with its IP."""
        meta, spec = pod["metadata"], pod["spec"]
        self.count += 1
        index = self.count
        ip = f"{POD_NETWORK}.{index // 250}.{index % 250 + 2}"
        head = meta["labels"].get(NODE_TYPE_LABEL) == "head"
        container = spec["containers"][0]
        fs = pod_fs(self.root / f"p{index}", pod, container, self.folders)
        node = self.api.get(f"/api/v1/nodes/{spec['nodeName']}") or {}
        addresses = node.get("status", {}).get("addresses", [])
        host_ip = next((a["address"] for a in addresses if a["type"] == "InternalIP"), "127.0.0.1")
        accelerator = node.get("metadata", {}).get("labels", {}).get(ACCELERATOR_LABEL, "")
        rdma = any(g.accelerator_type == accelerator and g.rdma_nics for g in GPU_CATALOG.values())
        register_node(
            self.folders.root / "nodes",
            ip,
            {
                "pod": meta["name"],
                "node": spec["nodeName"],
                "rdma": rdma,
                "tmp": str(fs.mounts["/tmp"]),  # noqa: S108 - the container's /tmp
            },
        )
        ray_pod = RayPod(
            uid=meta["uid"],
            name=meta["name"],
            namespace=meta["namespace"],
            pod=pod,
            fs=fs,
            address=allocate(ip, head=head, index=index),
            host_ip=host_ip,
            pending_init=list(spec.get("initContainers", [])),
        )
        self.pods[ray_pod.uid] = ray_pod
        self.by_ip[ip] = ray_pod
        self.say(
            f"ray pod {ray_pod.namespace}/{ray_pod.name} on {spec['nodeName']}: no container"
            f" runs under kwok; the test bed runs it on this host as a Ray node at {ip}"
            f" (folder {fs.root}; container paths {fs.describe()})"
        )
        self.report(ray_pod)

    # --- running ---------------------------------------------------------------------------

    def sync_secrets(self, pod: RayPod) -> None:
        """Secret volumes as the kubelet keeps them: a file per key, following the Secret (the
        kubelet syncs them about once a minute; here every few seconds)."""
        if time.monotonic() < pod.next_secret_sync:
            return
        pod.next_secret_sync = time.monotonic() + SECRET_SYNC_SECONDS
        for volume in pod.pod["spec"].get("volumes", []):
            if "configMap" in volume:
                self.sync_config_map(pod, volume)
            if "secret" not in volume:
                continue
            folder = pod.fs.root / "volumes" / volume["name"]
            folder.mkdir(parents=True, exist_ok=True)
            name = volume["secret"]["secretName"]
            found = self.api.get(f"/api/v1/namespaces/{pod.namespace}/secrets/{name}") or {}
            data = found.get("data") or {}
            for key, value in data.items():
                target = folder / key
                text = base64.b64decode(value)
                if not target.exists() or target.read_bytes() != text:
                    target.write_bytes(text)
                    target.chmod(0o600)
                    self.say(f"ray pod {pod.namespace}/{pod.name}: Secret {name} key {key} in"
                             f" its volume {volume['name']}")  # fmt: skip
            for stale in [f for f in folder.iterdir() if f.name not in data]:
                stale.unlink()

    def sync_config_map(self, pod: RayPod, volume: dict[str, Any]) -> None:
        """A ConfigMap volume as the kubelet keeps it: a file per key."""
        folder = pod.fs.root / "volumes" / volume["name"]
        folder.mkdir(parents=True, exist_ok=True)
        name = volume["configMap"]["name"]
        found = self.api.get(f"/api/v1/namespaces/{pod.namespace}/configmaps/{name}") or {}
        for key, text in (found.get("data") or {}).items():
            target = folder / key
            if not target.exists() or target.read_text(encoding="utf-8") != text:
                target.write_text(text, encoding="utf-8")
                self.say(f"ray pod {pod.namespace}/{pod.name}: ConfigMap {name} key {key} in"
                         f" its volume {volume['name']}")  # fmt: skip

    def advance(self, pod: RayPod) -> None:  # noqa: C901 - a kubelet's steps, in their order
        """Move a pod along: init containers, the Ray container, readiness, its end."""
        self.sync_secrets(pod)
        if pod.init is not None:
            code = pod.init.proc.poll()
            if code is None:
                return
            pod.init.ended = now()
            if code != 0:
                if not pod.reported_end:
                    pod.reported_end = True
                    self.say(
                        f"ray pod {pod.namespace}/{pod.name}: init container"
                        f" {pod.init.name} exited {code}; not restarted by the test bed"
                    )
                    self.report(pod)
                return
            pod.done_init.append(pod.init)
            pod.init = None
            self.report(pod)
        while pod.main is None and pod.pending_init and is_sidecar(pod.pending_init[0]):
            # A native sidecar: started in its turn, never waited for.
            sidecar = self.start(pod, pod.pending_init[0], init=True)
            if sidecar is None:
                return
            pod.sidecars.append(sidecar)
            pod.pending_init.pop(0)
            self.report(pod)
        if pod.main is None and pod.pending_init:
            started = self.start(pod, pod.pending_init[0], init=True)
            if started is not None:
                pod.init = started
                pod.pending_init.pop(0)
                self.report(pod)
            return
        if pod.main is None:
            pod.main = self.start(pod, pod.ray_container, init=False)
            if pod.main is not None:
                probe = pod.ray_container.get("readinessProbe") or {}
                pod.next_probe = time.monotonic() + float(probe.get("initialDelaySeconds", 0))
                self.report(pod)
            return
        code = pod.main.proc.poll()
        if code is not None:
            if not pod.reported_end:
                pod.reported_end = True
                pod.main.ended = now()
                pod.ready = False
                self.say(
                    f"ray pod {pod.namespace}/{pod.name}: its Ray container exited {code}:"
                    f" {self.message(pod.main)[-300:]!r}; not restarted by the test bed"
                )
                self.report(pod)
            return
        if not pod.ready and time.monotonic() >= pod.next_probe:
            probe = pod.ray_container.get("readinessProbe") or {}
            pod.next_probe = time.monotonic() + float(probe.get("periodSeconds", 5))
            if self.probe(pod, probe):
                pod.ready = True
                self.say(f"ray pod {pod.namespace}/{pod.name}: readiness probe passed; Ready")
                self.report(pod)

    def probe(self, pod: RayPod, probe: dict[str, Any]) -> bool:
        """KubeRay's readiness probe, as the kubelet runs an HTTP one."""
        action = probe.get("httpGet")
        if action is None:
            return True  # no probe (or one the test bed does not run): ready once started
        port = action["port"]
        if not isinstance(port, int):
            named = [p for p in pod.ray_container.get("ports", []) if p.get("name") == port]
            port = int(named[0]["containerPort"]) if named else 0
        url = f"http://{pod.address.ip}:{pod.address.host_port(int(port))}{action.get('path', '/')}"
        try:
            with urllib.request.urlopen(url, timeout=float(probe.get("timeoutSeconds", 1))):
                return True
        except OSError:
            return False

    def start(self, pod: RayPod, container: dict[str, Any], *, init: bool) -> Container | None:
        """Start one container's own command; None while a Service it names has no endpoint."""
        argv = [*container.get("command", []), *container.get("args", [])]
        fs = (
            sidecar_fs(pod.fs, pod.pod, container, self.folders)
            if is_sidecar(container)
            else pod.fs
        )
        env = container_environment(pod.pod, container, fs, self.folders, self.secret, self.hub)
        notes: list[str] = []
        try:
            if is_sidecar(container):
                # A kubelet never waits for a name: a native sidecar starts before the pod's
                # Ray container, whose readiness the head Service waits for, so names here
                # stay as written (KubeRay gives every init container the head's address).
                notes.append("cluster DNS names left as written (a sidecar does not wait)")
            else:
                argv = [self.resolve_names(a, notes) for a in argv]
                env = {k: self.resolve_names(v, notes) for k, v in env.items()}
        except LookupError as missing:
            if pod.waiting != str(missing):
                pod.waiting = str(missing)
                self.say(
                    f"ray pod {pod.namespace}/{pod.name}: {container['name']} waits: {missing}"
                )
            return None
        argv = [self.own_loopback(a, pod.address) for a in argv]
        env = {k: self.own_loopback(v, pod.address) for k, v in env.items()}
        if not init:
            script = argv[-1]
            temp_dir = pod.fs.map_text("/tmp/ray")  # noqa: S108 - the container's path
            argv[-1], changes = localize_ray_start(script, pod.address, temp_dir)
            notes.append("ray start: " + ", ".join(changes))
        argv = [fs.map_text(a) for a in argv]
        workdir = container.get("workingDir") or "/opt/nemo-rl"
        cwd = Path(fs.map_text(workdir))
        log = pod.fs.root / f"{container['name']}.log"
        proc = start_process(argv, env, cwd, log)
        kind = "sidecar " if is_sidecar(container) else "init " if init else ""
        self.say(
            f"ray pod {pod.namespace}/{pod.name}: running {kind}container"
            f" {container['name']}'s own command (process group {proc.pid}, log {log})"
            + (f"; {'; '.join(notes)}" if notes else "")
        )
        return Container(container["name"], proc, log, now())

    def resolve_names(self, text: str, notes: list[str]) -> str:
        """Cluster DNS names of Services in `text` -> the address behind them (LookupError while
        a Service has no ready endpoint)."""

        def address(match: re.Match[str]) -> str:
            name, port = match.group("name"), int(match.group("port") or 0)
            # A bare name (FQ_RAY_IP) is the head's address: its GCS port decides readiness.
            found = self.network.resolve(name, port or 6379) if self.network else None
            if found is None:
                raise LookupError(f"no ready endpoint behind {name}:{port or 6379} yet")
            replaced = f"{found[0]}:{found[1]}" if port else found[0]
            notes.append(f"cluster DNS {match.group(0)} -> {replaced}")
            return replaced

        return re.sub(rf"(?P<name>{SERVICE_NAME.pattern})(?::(?P<port>\d+))?", address, text)

    @staticmethod
    def own_loopback(text: str, address: NodeAddress) -> str:
        """`127.0.0.1:<port>` is the pod's own loopback in its network namespace: here, its
        address and host port (KubeRay gives the head RAY_ADDRESS=127.0.0.1:6379)."""
        return re.sub(
            r"(?<![\d.])(?:127\.0\.0\.1|localhost):(\d+)",
            lambda m: (
                f"{address.ip}:{address.host_port(int(m.group(1)))}"
                if int(m.group(1)) in address.ports
                else m.group(0)
            ),
            text,
        )

    def secret(self, namespace: str, name: str, key: str) -> str | None:
        """A Secret's key, as the kubelet resolves a secretKeyRef (None: not there). Every
        value given to a container is recorded in GIVEN_SECRETS under the test bed's folder,
        so a test can look for it where it must never be (logs shipped, files copied)."""
        found = self.api.get(f"/api/v1/namespaces/{namespace}/secrets/{name}")
        value = (found or {}).get("data", {}).get(key)
        if value is None:
            return None
        secret = base64.b64decode(value).decode()
        record = self.root / GIVEN_SECRETS
        given = set(json.loads(record.read_text())) if record.exists() else set()
        if secret not in given:
            record.write_text(json.dumps(sorted(given | {secret})), encoding="utf-8")
        return secret

    @staticmethod
    def message(container: Container) -> str:
        """The termination message under FallbackToLogsOnError: the log's tail."""
        data = container.log.read_bytes() if container.log.exists() else b""
        return data[-TERMINATION_MESSAGE_BYTES:].decode(errors="replace").strip()

    # --- status ----------------------------------------------------------------------------

    def _init_status(self, pod: RayPod, spec: dict[str, Any]) -> dict[str, Any]:
        """One init container's status (a native sidecar's, or a plain one's)."""
        done_by_name = {c.name: c for c in pod.done_init}
        sidecars = {c.name: c for c in pod.sidecars}
        done = done_by_name.get(spec["name"])
        running = pod.init if pod.init and pod.init.name == spec["name"] else None
        sidecar = sidecars.get(spec["name"])
        if sidecar is not None:
            ended = sidecar.proc.poll()
            state: dict[str, Any] = (
                {"running": {"startedAt": sidecar.started}}
                if ended is None
                else {
                    "terminated": {
                        "exitCode": ended,
                        "reason": "Completed" if ended == 0 else "Error",
                        "startedAt": sidecar.started,
                        "finishedAt": now(),
                    }
                }
            )
            return {
                "name": spec["name"],
                "image": spec.get("image", ""),
                "imageID": "",
                "ready": ended is None,
                "restartCount": 0,
                "started": ended is None,
                "state": state,
            }
        if done is not None:
            state = {
                "terminated": {
                    "exitCode": 0,
                    "reason": "Completed",
                    "startedAt": done.started,
                    "finishedAt": done.ended or now(),
                }
            }
        elif running is not None and running.proc.poll() not in (None, 0):
            state = {
                "terminated": {
                    "exitCode": running.proc.returncode,
                    "reason": "Error",
                    "message": self.message(running),
                    "startedAt": running.started,
                    "finishedAt": now(),
                }
            }
        elif running is not None:
            state = {"running": {"startedAt": running.started}}
        else:
            state = {"waiting": {"reason": "PodInitializing"}}
        return {
            "name": spec["name"],
            "image": spec.get("image", ""),
            "imageID": "",
            "ready": done is not None,
            "restartCount": 0,
            "started": running is not None,
            "state": state,
        }

    def _container_status(self, pod: RayPod, spec: dict[str, Any]) -> dict[str, Any]:
        """One container's status (the Ray container's from its process; the others run)."""
        is_ray = spec["name"] == pod.ray_container["name"]
        main = pod.main if is_ray else None
        ready = pod.ready if is_ray else pod.main is not None
        last: dict[str, Any] = {}
        state: dict[str, Any]
        if is_ray and main is not None and main.proc.poll() is not None:
            code = main.proc.returncode
            terminated = {
                "exitCode": code,
                "reason": "Completed" if code == 0 else "Error",
                "message": self.message(main),
                "startedAt": main.started,
                "finishedAt": main.ended or now(),
            }
            restarts = pod.pod["spec"].get("restartPolicy", "Always") != "Never"
            if restarts:
                state = {
                    "waiting": {
                        "reason": "CrashLoopBackOff",
                        "message": "the test bed does not restart containers",
                    }
                }
                last = {"lastState": {"terminated": terminated}}
            else:
                state = {"terminated": terminated}
        elif (is_ray and main is not None) or (not is_ray and pod.main is not None):
            state = {"running": {"startedAt": main.started if main else pod.started}}
        else:
            state = {
                "waiting": {
                    "reason": "PodInitializing"
                    if pod.pending_init or pod.init
                    else "ContainerCreating"
                }
            }
        return {
            "name": spec["name"],
            "image": spec.get("image", ""),
            "imageID": "",
            "ready": ready,
            "restartCount": 0,
            "started": "running" in state,
            "state": state,
            **last,
        }

    def report(self, pod: RayPod) -> None:
        """The pod's status as its kubelet would write it now."""
        init_statuses = [
            self._init_status(pod, spec) for spec in pod.pod["spec"].get("initContainers", [])
        ]
        statuses = [self._container_status(pod, spec) for spec in pod.pod["spec"]["containers"]]
        initialized = pod.main is not None
        ended = pod.main is not None and pod.main.proc.poll() is not None
        never = pod.pod["spec"].get("restartPolicy", "Always") == "Never"
        if ended and never:
            phase = "Succeeded" if pod.main and pod.main.proc.returncode == 0 else "Failed"
        elif pod.init and pod.init.proc.poll() not in (None, 0) and never:
            phase = "Failed"
        else:
            phase = "Running" if initialized else "Pending"
        ready_status = "True" if pod.ready else "False"
        status = {
            "phase": phase,
            "hostIP": pod.host_ip,
            "hostIPs": [{"ip": pod.host_ip}],
            "podIP": pod.address.ip,
            "podIPs": [{"ip": pod.address.ip}],
            "startTime": pod.started,
            "conditions": [
                {"type": "PodReadyToStartContainers", "status": "True"},
                {"type": "Initialized", "status": "True" if initialized else "False"},
                {"type": "Ready", "status": ready_status},
                {"type": "ContainersReady", "status": ready_status},
                {"type": "PodScheduled", "status": "True"},
            ],
            "initContainerStatuses": init_statuses,
            "containerStatuses": statuses,
        }
        patched = self.kubectl(
            "patch",
            "pod",
            pod.name,
            "-n",
            pod.namespace,
            "--subresource=status",
            "--type=merge",
            "-p",
            json.dumps({"status": status}),
        )
        if patched.returncode != 0 and "NotFound" not in patched.stderr:
            self.say(f"could not set the status of {pod.name}: {patched.stderr.strip()}")

    # --- stopping --------------------------------------------------------------------------

    def stop(self, pod: RayPod, why: str) -> None:
        """End every process of a pod: its containers' process groups, then any Ray process of
        its node that Ray put in a session of its own (by pid)."""
        containers = pod.running()
        groups = [c.proc.pid for c in containers]
        # As the kubelet does: the pod's containers first, its native sidecars once those have
        # ended (the log shipper then ships Ray's last lines).
        ended = end_groups([c for c in containers if c not in pod.sidecars])
        sidecar_groups = {c.proc.pid for c in pod.sidecars}
        strays = [
            p
            for p in processes_naming(f"{pod.fs.root}/")
            if p != os.getpid() and process_group(p) not in sidecar_groups
        ]
        for pid in strays:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if pod.sidecars:
            ended += f"; sidecars: {end_groups(pod.sidecars)}"
        self.by_ip.pop(pod.address.ip, None)
        self.say(
            f"ray pod {pod.namespace}/{pod.name} {why}: ended its process groups {groups}"
            f" ({ended})" + (f" and {len(strays)} stray Ray processes" if strays else "")
        )

    def stop_all(self) -> None:
        """End every pod (the agent is being stopped)."""
        end_groups(
            [c for pod in self.pods.values() for c in pod.running() if c not in pod.sidecars]
        )
        for pod in list(self.pods.values()):
            self.stop(pod, "stopped with the test bed")
        self.pods.clear()


def is_sidecar(container: dict[str, Any]) -> bool:
    """A native sidecar: an init container that runs for the pod's life."""
    return container.get("restartPolicy") == "Always"


def process_group(pid: int) -> int | None:
    """A process's group, None when it is gone."""
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


def end_groups(containers: list[Container]) -> str:
    """SIGTERM the containers' process groups, wait a little, SIGKILL what is left."""
    groups = [c.proc.pid for c in containers]
    for group in groups:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGTERM)
    deadline = time.monotonic() + STOP_SECONDS
    alive = list(containers)
    while alive and time.monotonic() < deadline:
        time.sleep(0.2)
        alive = [c for c in alive if group_alive(c)]
    for container in alive:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(container.proc.pid, signal.SIGKILL)
        container.proc.wait()
    return f"{len(groups) - len(alive)} stopped, {len(alive)} killed"


def group_alive(container: Container) -> bool:
    """Whether any process of the container's group still runs (its leader reaped first)."""
    container.proc.poll()
    try:
        os.killpg(container.proc.pid, 0)
    except ProcessLookupError:
        return False
    return True


def _state(pid: int) -> str:
    """A process's state letter (empty when it is gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


def processes_naming(text: str) -> list[int]:
    """Live processes whose command line names `text` (a pod's folder: Ray's workers carry their
    node's temp folder on the command line)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if text in cmdline and _state(int(entry.name)) not in ("Z", ""):
            found.append(int(entry.name))
    return found
