"""The kubelet's part for the acceptance gates' pods under kwok, done by the test bed agent.

kwok makes a gate pod Running and never completes it (testbed.local_cluster leaves gate pods
out of kwok's pod-complete stage). Once every pod of a gate Job is Running, this runs each
pod's container command - the real script from the pod's ConfigMap, with the environment
the pod spec gives it (values, fieldRefs, `$(VAR)` references) - on this host, with the tools
of a GPU node replaced by testbed.gate_standins. When a script exits, the pod's status gets
what a kubelet would write: the container terminated with its exit code and its termination
message, phase Succeeded or Failed. The real Job controller and pulumi-kubernetes take it
from there. The only rewrites, logged for every pod: host paths of the node (/usr/local/gib,
/usr/local/nvidia) and the shared volume (/data) point at folders of the test bed.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import signal
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from planning.verify import GATE_LABEL
from testbed.gate_standins import Scenario, install, local_setup
from testbed.node_fs import field_value

if TYPE_CHECKING:
    from testbed.cluster_network import KubeApi

SCENARIO_FILE = "gate-scenario.json"
"""In the local cluster's folder: what the fake hardware measures (default: a healthy node)."""


@dataclass
class Running:
    """A gate script running for one pod."""

    pod: str
    namespace: str
    uid: str
    proc: subprocess.Popen[str]
    termination_log: Path
    started: str
    image: str
    sidecars: list[tuple[str, subprocess.Popen[str]]] = field(default_factory=list)
    """Native sidecars (restartPolicy Always init containers): name and process."""
    ended: str = ""
    """When the main container ended (the sidecars are being stopped); empty while it runs."""

    def kill(self) -> None:
        """Stop the main container and the sidecars."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for _, sidecar in self.sidecars:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(sidecar.pid, signal.SIGKILL)
            sidecar.wait()


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def container_env(pod: dict[str, Any], container: dict[str, Any]) -> dict[str, str]:
    """The container's environment as the kubelet builds it."""
    env: dict[str, str] = {}
    for item in container.get("env", []):
        if "value" in item:
            # `$(NAME)` expands earlier variables, as Kubernetes does.
            env[item["name"]] = re.sub(
                r"\$\((\w+)\)", lambda m: env.get(m.group(1), m.group(0)), item["value"]
            )
        elif "fieldRef" in item.get("valueFrom", {}):
            env[item["name"]] = field_value(pod, item["valueFrom"]["fieldRef"]["fieldPath"])
    return env


class GatePods:
    """Runs gate pods' scripts and reports how they ended."""

    def __init__(
        self,
        root: Path,
        kubectl: Callable[..., subprocess.CompletedProcess[str]],
        say: Callable[[str], None],
        network: dict[str, str] | None = None,
        api: KubeApi | None = None,
    ) -> None:
        self.root = root
        self.api = api
        """Where the agent's API client is given, the round's listing is a GET, not kubectl."""
        self.network = dict(network or {})
        """Environment giving a gate the cluster network stand-in (testbed.cluster_network)."""
        self.work = root / "gate-pods"
        self.kubectl = kubectl
        self.say = say
        self.running: dict[str, Running] = {}
        self.done: set[str] = set()

    def scenario(self) -> Scenario:
        """The scenario file of the local cluster's folder, or a healthy node."""
        path = self.root / SCENARIO_FILE
        return Scenario.from_json(path.read_text(encoding="utf-8")) if path.exists() else Scenario()

    def _gate_pods(self) -> list[dict[str, Any]]:
        if self.api is not None:
            return self.api.labelled("/api/v1/pods", GATE_LABEL) or []
        proc = self.kubectl("get", "pods", "-A", "-l", GATE_LABEL, "-o", "json")
        if proc.returncode != 0:
            return []
        return list(json.loads(proc.stdout).get("items", []))

    def step(self) -> None:
        """One round: start what is ready, report what ended, stop what was deleted."""
        pods = self._gate_pods()
        alive = {p["metadata"]["uid"] for p in pods if not p["metadata"].get("deletionTimestamp")}
        for uid, run in list(self.running.items()):
            if uid not in alive:
                run.kill()
                self.say(f"gate pod {run.pod} was deleted: stopped its script")
                del self.running[uid]
                self.done.add(uid)
            elif run.proc.poll() is not None and not run.ended and run.sidecars:
                # As the kubelet does: the main container has ended, the pod stays Running
                # while its sidecars get SIGTERM and drain.
                run.ended = _now()
                self._report(run, final=False)
                for _, sidecar in run.sidecars:
                    sidecar.send_signal(signal.SIGTERM)
            elif run.proc.poll() is not None and all(p.poll() is not None for _, p in run.sidecars):
                run.kill()
                self._report(run, final=True)
                del self.running[uid]
                self.done.add(uid)
        by_job: dict[str, list[dict[str, Any]]] = {}
        for pod in pods:
            by_job.setdefault(pod["metadata"]["labels"].get("job-name", ""), []).append(pod)
        for job, members in by_job.items():
            fresh = [
                p for p in members if p["metadata"]["uid"] not in self.done | set(self.running)
            ]
            if not fresh:
                continue
            wanted = self._parallelism(members[0])
            running = [p for p in members if p["status"].get("phase") == "Running"]
            # Pods of one gate wait for one another; start them together once all run.
            if len(running) < wanted or any(p not in running for p in fresh):
                continue
            for pod in fresh:
                self._start(job, pod)

    def _parallelism(self, pod: dict[str, Any]) -> int:
        job = pod["metadata"]["labels"].get("job-name", "")
        found = self.kubectl("get", "job", job, "-n", pod["metadata"]["namespace"], "-o", "json")
        if found.returncode != 0:
            return 10**6
        return int(json.loads(found.stdout)["spec"].get("parallelism", 1))

    def _start(self, job: str, pod: dict[str, Any]) -> None:
        meta, spec = pod["metadata"], pod["spec"]
        (container,) = spec["containers"]
        namespace = meta["namespace"]
        hostname = spec.get("hostname") or meta["name"]
        home = self.work / job / hostname
        home.mkdir(parents=True, exist_ok=True)
        gates = home / "gates"
        gates.mkdir(exist_ok=True)
        (volume,) = [v for v in spec["volumes"] if v["name"] == "gates"]
        found = self.kubectl(
            "get", "configmap", volume["configMap"]["name"], "-n", namespace, "-o", "json"
        )
        for name, text in json.loads(found.stdout)["data"].items():
            (gates / name).write_text(text, encoding="utf-8")
        volumes = self._secret_volumes(spec, container, namespace, home)
        if volumes is None:
            return  # the kubelet holds the container back until its Secret exists
        tools = install(home / "node", self.scenario())
        env = container_env(pod, container)
        for mount_path, folder in volumes.items():
            # The container's path of a Secret volume is this host's folder of its files.
            for key, value in env.items():
                if value == mount_path or value.startswith(f"{mount_path}/"):
                    env[key] = str(folder) + value.removeprefix(mount_path)
        if "GPU_SETUP" in env:
            env["GPU_SETUP"] = local_setup(env["GPU_SETUP"], tools)
        if "GATE_DATA" in env:
            # The shared volume: one folder for every pod of the Job, as /data is.
            env["GATE_DATA"] = str(self.work / job / "data" / env["GATE_DATA"].lstrip("/"))
        log = home / "termination-log"
        log.unlink(missing_ok=True)
        env.update(tools)
        env.update(
            {
                "GATES_DIR": str(gates),
                "GATE_TMP": str(home),
                "GATE_STANDIN_PODS": str(self.work / job),
                "TERMINATION_LOG": str(log),
                "PEER_WAIT_SECONDS": "0.5",
                "HOME": str(home),
            }
        )
        interpreter, script = container["command"][:2]
        if "RAY_DASHBOARD" in env:
            # The GRPO smoke calls the RayCluster's real Ray dashboard by its Service's name.
            env.update(self.network)
            self.say(
                f"smoke gate: {env['RAY_DASHBOARD']} is reached through the cluster network"
                f" stand-in ({self.network.get('HTTP_PROXY', 'none')}): the real Ray head"
            )
        argv = [interpreter, str(gates / Path(script).name)]
        out = (home / "container.log").open("w", encoding="utf-8")
        proc = subprocess.Popen(
            argv, env=env, stdout=out, stderr=subprocess.STDOUT, text=True, cwd=home
        )
        sidecars = []
        for init in spec.get("initContainers", []):
            if init.get("restartPolicy") != "Always":
                continue
            # Its own command, as is: it needs nothing of the node.
            sidecar_log = (home / f"{init['name']}.log").open("w", encoding="utf-8")
            argv = [*init.get("command", []), *init.get("args", [])]
            # A session of its own: its children (sleep) go with it when it is killed.
            started = subprocess.Popen(
                argv, stdout=sidecar_log, stderr=subprocess.STDOUT, text=True, cwd=home,
                start_new_session=True,
            )  # fmt: skip
            sidecars.append((init["name"], started))
        self.running[meta["uid"]] = Running(
            meta["name"], namespace, meta["uid"], proc, log, _now(), container["image"],
            sidecars,
        )  # fmt: skip
        self.say(
            f"gate pod {namespace}/{meta['name']}: no container runs under kwok; running its"
            f" command `{interpreter} {script}` from its ConfigMap on this host with stand-in"
            f" GPU, RDMA, nccl-tests, mpirun, ssh and fio tools ({tools['NVIDIA_SMI']} ...),"
            " /usr/local/gib, /usr/local/nvidia and /data pointed at test bed folders"
        )

    def _secret_volumes(
        self, spec: dict[str, Any], container: dict[str, Any], namespace: str, home: Path
    ) -> dict[str, Path] | None:
        """The Secret volumes the container mounts, written as the kubelet projects them (the
        volume's `items`, or every key): mount path -> this host's folder. None while a Secret
        that is not optional is not there yet."""
        secrets = {v["name"]: v["secret"] for v in spec.get("volumes", []) if "secret" in v}
        found: dict[str, Path] = {}
        for mount in container.get("volumeMounts", []):
            volume = secrets.get(mount["name"])
            if volume is None:
                continue
            folder = home / "volumes" / mount["name"]
            folder.mkdir(parents=True, exist_ok=True)
            got = self.kubectl("get", "secret", volume["secretName"], "-n", namespace, "-o", "json")
            if got.returncode != 0 and not volume.get("optional"):
                return None
            if got.returncode == 0:
                data = json.loads(got.stdout).get("data", {})
                items = volume.get("items") or [{"key": k, "path": k} for k in data]
                for item in items:
                    if item["key"] in data:
                        (folder / item["path"]).write_bytes(base64.b64decode(data[item["key"]]))
            found[mount["mountPath"]] = folder
        return found

    def _report(self, run: Running, *, final: bool) -> None:
        """The pod's status as the kubelet writes it: once the main container ended (the pod
        still Running while sidecars drain), and once everything has ended (final)."""
        code = run.proc.returncode
        log = run.termination_log
        message = log.read_text(encoding="utf-8") if log.exists() else ""
        phase = ("Succeeded" if code == 0 else "Failed") if final else "Running"
        reason = "PodCompleted" if final else "ContainersNotReady"
        finished = run.ended or _now()
        sidecars = []
        for name, proc in run.sidecars:
            state: dict[str, Any] = (
                {"terminated": {"exitCode": proc.returncode, "reason": "Completed",
                                "startedAt": run.started, "finishedAt": _now()}}
                if final
                else {"running": {"startedAt": run.started}}
            )  # fmt: skip
            sidecars.append(
                {"name": name, "image": run.image, "imageID": "", "ready": not final,
                 "restartCount": 0, "started": not final, "state": state}
            )  # fmt: skip
        status = {
            "status": {
                "phase": phase,
                # The whole list, as the kubelet keeps it (a merge patch replaces lists):
                # scheduled and initialized stay True; only readiness ends.
                "conditions": [
                    {"type": "PodReadyToStartContainers", "status": "True"},
                    {"type": "Initialized", "status": "True"},
                    {"type": "PodScheduled", "status": "True"},
                    {"type": "Ready", "status": "False", "reason": reason},
                    {"type": "ContainersReady", "status": "False", "reason": reason},
                ],
                "initContainerStatuses": sidecars,
                "containerStatuses": [
                    {
                        "name": "gate",
                        "image": run.image,
                        "imageID": "",
                        "ready": False,
                        "restartCount": 0,
                        "started": False,
                        "state": {
                            "terminated": {
                                "exitCode": code,
                                "reason": "Completed" if code == 0 else "Error",
                                "message": message,
                                "startedAt": run.started,
                                "finishedAt": finished,
                            }
                        },
                    }
                ],
            }
        }
        patched = self.kubectl(
            "patch", "pod", run.pod, "-n", run.namespace, "--subresource=status",
            "--type=merge", "-p", json.dumps(status),
        )  # fmt: skip
        first = message.splitlines()[0] if message else "(no termination message)"
        if final:
            self.say(f"gate pod {run.namespace}/{run.pod} exited {code}: {first}")
        else:
            self.say(f"gate pod {run.namespace}/{run.pod}: gate container ended, sidecars stopping")
        if patched.returncode != 0:
            self.say(f"could not set the status of {run.pod}: {patched.stderr.strip()}")

    def stop(self) -> None:
        """Kill every script still running (the agent is being stopped)."""
        for run in self.running.values():
            run.kill()
        self.running.clear()
