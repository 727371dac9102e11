"""The test bed agent: what containers would have done, where the program relies on it.

Under kwok no container runs. Where the program relies on a container's effect, the agent
produces it, saying so in its log:

- the KubeRay CRD Job's container runs `kubectl apply --server-side ... -f <CRD URLs>`: when
  a pod of a `kuberay-crds-*` Job is scheduled, the agent runs the same apply (same field
  manager, same flags) on the same files, read from the local KubeRay chart's `crds/` folder
  by file name instead of from GitHub;
- the KubeRay operator: once its CRDs exist, the agent starts the real operator on this host
  against the local API server (the operator Deployment's pod does not run under kwok);
- the acceptance gates: it runs each gate pod's script with stand-in GPU tools and reports
  how it ended in the pod's status (testbed.gate_pods);
- the Ray pods KubeRay creates: it runs each as a real Ray node on this host and reports it as
  its kubelet would (testbed.ray_pods); the operator and the gate pods reach Services by their
  cluster DNS names through the cluster network stand-in (testbed.cluster_network).
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from testbed.cluster_network import ClusterNetwork, KubeApi
from testbed.gate_pods import GatePods
from testbed.kueue_host import KueueHost
from testbed.processes import Processes
from testbed.ray_pods import RayPods

CRD_JOB_PREFIX = "kuberay-crds-"


def say(message: str) -> None:
    """One line of the agent's log."""
    print(f"test bed agent: {message}", flush=True)


def crd_apply_args(container: dict[str, Any], crds: Path) -> tuple[list[str], list[str]]:
    """(kubectl arguments for the local files, the URLs they replace) from the Job's args."""
    args: list[str] = list(container.get("args") or [])
    local: list[str] = []
    urls: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "-f" and index + 1 < len(args):
            url = args[index + 1]
            path = crds / url.rsplit("/", 1)[-1]
            if not path.exists():
                raise FileNotFoundError(f"{url} has no local copy at {path}")
            local += ["-f", str(path)]
            urls.append(url)
            index += 2
            continue
        local.append(arg)
        index += 1
    return local, urls


class Agent:
    """Polls the API server and acts for the containers kwok does not run."""

    def __init__(self, options: argparse.Namespace) -> None:
        self.kubectl = options.kubectl
        self.kubeconfig = options.kubeconfig
        self.operator = options.operator
        self.operator_kubeconfig = options.operator_kubeconfig
        self.crds = Path(options.crds)
        self.processes = Processes(Path(options.root))
        self.handled: set[str] = set()
        api = KubeApi(Path(self.kubeconfig))
        self.api = api
        self.ray_pods = RayPods(Path(options.ray_root), api, self.run_kubectl, say)
        # For tests and people (and a restarted agent): the cluster's Services by name.
        address = Path(options.root) / "cluster-network-proxy"
        earlier = address.read_text().rsplit(":", 1)[-1] if address.exists() else "0"
        self.network = ClusterNetwork(api, say, self.ray_pods.host_port).start(int(earlier))
        self.ray_pods.network = self.network
        address.write_text(self.network.url)
        self.gates = GatePods(
            Path(options.root), self.run_kubectl, say, self.network.proxy_env(), api=api
        )
        self.kueue = KueueHost(
            Path(options.root), options.kueue, options.server, Path(options.api_ca),
            self.run_kubectl, say, api=api,
        )  # fmt: skip

    def run_kubectl(self, *args: str) -> subprocess.CompletedProcess[str]:
        """kubectl as the admin."""
        return subprocess.run(
            [self.kubectl, "--kubeconfig", self.kubeconfig, *args],
            capture_output=True,
            text=True,
            check=False,
        )

    def crd_job_pods(self) -> list[dict[str, Any]]:
        """Scheduled pods of the KubeRay CRD Jobs not handled yet."""
        pods = []
        for pod in self.api.labelled("/api/v1/pods", "job-name") or []:
            job = pod["metadata"].get("labels", {}).get("job-name", "")
            if not job.startswith(CRD_JOB_PREFIX) or pod["metadata"]["uid"] in self.handled:
                continue
            if pod.get("spec", {}).get("nodeName"):
                pods.append(pod)
        return pods

    def apply_crds(self, pod: dict[str, Any]) -> None:
        """Do what the Job's kubectl container would do, from the local files."""
        container = pod["spec"]["containers"][0]
        args, urls = crd_apply_args(container, self.crds)
        name = pod["metadata"]["labels"]["job-name"]
        shown = " ".join(Path(a).name if a.startswith("/") else a for a in args)
        say(
            f"the container of Job {name} does not run under kwok; running its command"
            f" `kubectl {shown}` with the files from {self.crds} in place of {', '.join(urls)}"
        )
        proc = self.run_kubectl(*args)
        if proc.returncode != 0:
            say(f"the CRD apply failed: {proc.stderr.strip()}")
            return
        say(proc.stdout.strip().replace("\n", "; "))
        self.handled.add(pod["metadata"]["uid"])

    def ensure_operator(self) -> None:
        """Run the KubeRay operator on this host once all its CRDs are established."""
        if self.processes.alive("ray-operator"):
            return
        crds = [
            f"{kind}.ray.io" for kind in ("rayclusters", "rayjobs", "rayservices", "raycronjobs")
        ]
        if self.run_kubectl("get", "crd", *crds).returncode != 0:
            return
        established = self.run_kubectl(
            "wait", "--for=condition=Established", "--timeout=30s", *[f"crd/{c}" for c in crds]
        )
        if established.returncode != 0:
            return
        pid = self.processes.start(
            "ray-operator",
            [
                self.operator,
                "--metrics-addr=0",
                "--health-probe-bind-address=0",
                "--enable-leader-election=false",
                "--log-stdout-encoder=console",
            ],
            env={
                "KUBECONFIG": self.operator_kubeconfig,
                "PATH": "/usr/bin:/bin",
                # Its dashboard client reaches the head Service by name (cluster DNS).
                **self.network.proxy_env(),
            },
        )
        say(f"started the real KubeRay operator on this host (pid {pid}), local API server")

    def loop(self) -> None:
        """Act until stopped."""
        say(
            "watching for KubeRay CRD Jobs, the RayCluster CRD, Kueue's controller Deployment,"
            " acceptance gate pods and Ray pods"
        )
        while True:
            for pod in self.crd_job_pods():
                self.apply_crds(pod)
            self.ensure_operator()
            self.kueue.step(time.monotonic())
            self.gates.step()
            try:
                self.ray_pods.step()
            except OSError as problem:  # the API server restarting: next round
                say(f"ray pods: {problem}")
            time.sleep(1)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point (started by testbed.local_cluster)."""
    parser = argparse.ArgumentParser(prog="python -m testbed.cluster_agent")
    for flag in (
        "--kubectl",
        "--kubeconfig",
        "--operator",
        "--operator-kubeconfig",
        "--crds",
        "--root",
        "--ray-root",
        "--kueue",
        "--server",
        "--api-ca",
    ):
        parser.add_argument(flag, required=True)
    agent = Agent(parser.parse_args(argv))

    def stop(_signum: int, _frame: object) -> None:
        # Stopped by pid (testbed.processes): take the gate scripts and Ray pods along.
        agent.gates.stop()
        agent.ray_pods.stop_all()
        agent.network.stop()
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    agent.loop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
