"""One Ray pod as one real Ray node on this host: its own loopback address and its own ports.

In a cluster each Ray pod has its own network namespace: its IP, and the ports KubeRay's command
names (GCS 6379, dashboard 8265, client 10001, metrics 8080, the dashboard agent's 52365) are its
own. Here every pod shares the host's, so the test bed gives each pod an address of the loopback
network and host ports of its own, and tells `ray start` about them - the only change made to the
command KubeRay generated, logged with the pod:

- `--node-ip-address=<pod IP>` (Ray would otherwise pick the host's address);
- each port flag KubeRay wrote, and each port Ray would take by default, pointed at a free host
  port outside the kernel's ephemeral range (testbed.host_ports; kept in the pod's port map, which
  the cluster network stand-in and the readiness probe use: container port -> host port);
- a worker port range of its own (Ray's workers of every node would otherwise draw from the same
  10002-19999);
- `--temp-dir` at the pod's own /tmp/ray (Ray's default, which a worker otherwise takes from the
  head: a path of the head's folder here, where every worker's sockets would then collide);
- an object store of OBJECT_STORE_BYTES instead of the pod's (hundreds of GB on B200): this host's
  /dev/shm cannot hold it, and Ray refuses a store over 10 GB that /dev/shm cannot hold
  (tests/planning/test_ray_object_store.py judges the pod's own numbers with Ray's own code).
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from testbed.host_ports import free_port

PORTS = {
    "port": 6379,
    "dashboard-port": 8265,
    "ray-client-server-port": 10001,
    "metrics-export-port": 8080,
    "dashboard-agent-listen-port": 52365,
}
"""`ray start` flags that name a fixed port, with Ray's (or KubeRay's) value."""
HEAD_ONLY = ("port", "dashboard-port", "ray-client-server-port")
WORKER_PORTS = 200
"""Ports per node for Ray's worker processes (a node here runs at most a few dozen)."""
OBJECT_STORE_BYTES = 200 * 2**20
"""The test bed's object store per node (Ray's minimum is 75 MiB; the runs here store little)."""
WORKER_PORT_BASE = 20000
"""Worker port blocks start here and stay below Linux's ephemeral range (32768-60999 by default)."""


@dataclass
class NodeAddress:
    """Where one Ray node of the test bed listens."""

    ip: str
    ports: dict[int, int] = field(default_factory=dict)
    """Container port -> host port."""
    worker_ports: tuple[int, int] = (0, 0)

    def host_port(self, port: int) -> int:
        """The host port behind a container port (the same when it was not remapped)."""
        return self.ports.get(port, port)


def allocate(ip: str, head: bool, index: int) -> NodeAddress:
    """Fresh host ports for a node; `index` picks its worker port block."""
    flags = [f for f in PORTS if head or f not in HEAD_ONLY]
    low = WORKER_PORT_BASE + (index % 60) * WORKER_PORTS
    return NodeAddress(
        ip=ip,
        ports={PORTS[f]: free_port() for f in flags},
        worker_ports=(low, low + WORKER_PORTS - 1),
    )


def localize_ray_start(script: str, address: NodeAddress, temp_dir: str) -> tuple[str, list[str]]:
    """The container's script with `ray start` told its node's address and ports; and what was
    changed, for the log."""
    at = script.find("ray start ")
    if at < 0:
        raise ValueError("the container runs no `ray start`")
    head, start = script[:at], script[at:]
    head_node = " --head" in start
    changes = []
    for flag, default in PORTS.items():
        if not head_node and flag in HEAD_ONLY:
            continue
        host = address.host_port(default)
        match = re.search(rf"--{flag}=(\d+)", start)
        if match:
            container = int(match.group(1))
            host = address.ports.setdefault(container, host)
            start = start.replace(match.group(0), f"--{flag}={host}", 1)
            changes.append(f"--{flag}={container} -> {host}")
        else:
            changes.append(f"--{flag} (default {default}) -> {host}")
            start += f" --{flag}={host}"
    store = re.search(r"--object-store-memory=(\d+)", start)
    if store:
        start = start.replace(store.group(0), f"--object-store-memory={OBJECT_STORE_BYTES}", 1)
        changes.append(f"--object-store-memory={store.group(1)} -> {OBJECT_STORE_BYTES}")
    low, high = address.worker_ports
    added = (
        f" --node-ip-address={address.ip} --min-worker-port={low} --max-worker-port={high}"
        f" --temp-dir={temp_dir}"
    )
    start = "ray start" + added + start[len("ray start") :]
    changes.append(added.strip())
    return head + start, changes


def start_process(
    argv: list[str], env: dict[str, str], cwd: Path, log: Path
) -> subprocess.Popen[bytes]:
    """A container's process, in a process group of its own (ended by its id)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    out = log.open("ab")
    try:
        return subprocess.Popen(
            argv,
            env=env,
            cwd=cwd,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    finally:
        out.close()


def kuberay_ray_start(
    group: dict[str, Any], container: dict[str, Any], *, head: bool, address: str = ""
) -> str:
    """What KubeRay v1.6.2's pod builder appends to a Ray container's args (`common/pod.go`):
    `ulimit -n 65536; ray start` with the group's start parameters, its typed resources (GPU
    keys to --num-gpus, the others to --resources), CPUs and memory from the limits, the head's
    dashboard host or the worker's head address, the metrics and dashboard agent ports, --block.
    For runs without a Kubernetes API (the one-node test, the benchmark); the engine tests run
    the operator's own."""
    limits = container["resources"]["limits"]
    params: dict[str, str] = {
        **group.get("rayStartParams", {}),
        "metrics-export-port": "8080",
        "dashboard-agent-listen-port": "52365",
        "num-cpus": str(limits["cpu"]),
        "memory": str(int(str(limits["memory"]).removesuffix("Gi")) * 2**30),
    }
    if head:
        params.setdefault("dashboard-host", "0.0.0.0")  # noqa: S104 - KubeRay's default
    else:
        params["address"] = address
    custom: dict[str, float] = {}
    for name, value in group.get("resources", {}).items():
        if name.lower().endswith("gpu"):
            params["num-gpus"] = str(value)
        else:
            custom[name] = float(value)
    if custom:
        params["resources"] = f"'{json.dumps(custom, separators=(',', ':'))}'"
    flags = " ".join(f"--{k}={v}" for k, v in sorted(params.items()))
    return f"ulimit -n 65536; ray start{' --head' if head else ''} --block {flags}"
