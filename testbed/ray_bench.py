"""`python -m testbed.ray_bench`: what a Ray pod of the test bed costs on this machine.

Starts the b200 stack's Ray head and one of its GPU workers as the engine test bed runs them
(the rendered pod specs, the `ray start` KubeRay generates, testbed.node_fs and testbed.ray_node,
no Kubernetes), waits for each node's readiness as KubeRay's probe checks it (the dashboard
agent's /api/healthz), and prints per node the seconds to ready and the memory (PSS) of its
processes; then submits the rendered GRPO smoke to the head's job API and prints its wall time
and the memory after. Everything is stopped by its process group. It prints numbers and asserts
nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from planning.ray import GATED_MODEL_ORGS
from preflight.cli import preflight
from testbed.node_fs import (
    NodeFolders,
    container_environment,
    install_node_folders,
    pod_fs,
    register_node,
)
from testbed.ray_node import NodeAddress, allocate, kuberay_ray_start, localize_ray_start
from testbed.ray_node import start_process as start

REPO = Path(__file__).resolve().parents[1]


def rendered(tmp: Path) -> dict[str, Any]:
    """The b200 stack's records (job and smoke gate on), by logical name."""
    config = yaml.safe_load((REPO / "Pulumi.b200.yaml").read_text())["config"]
    config["nemo-rl-gke:ray"] = {"job": {"enabled": True}}
    config["nemo-rl-gke:verify"] = {"grpoSmoke": {"enabled": True}}
    config["nemo-rl-gke:hfToken"] = {"secure": "v1:x"}
    stack_file = tmp / "Pulumi.b200.yaml"
    stack_file.write_text(yaml.safe_dump({"config": config}))
    result = preflight(stack_file, project_dir=REPO, known=True)
    return {r.name: r.inputs for r in result.run.records}


def pss_mib(session: int) -> float:
    """Proportional set size of every process of a session (a node's container), in MiB."""
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[3]) != session:
                continue
            for line in (entry / "smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return total / 1024


def wait_ready(address: NodeAddress, since: float) -> float:
    """Seconds from `since` until the node's dashboard agent answers /api/healthz."""
    url = f"http://{address.ip}:{address.host_port(52365)}/api/healthz"
    while time.monotonic() - since < 600:
        try:
            with urllib.request.urlopen(url, timeout=1):
                return time.monotonic() - since
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"no answer from {url} in 600 s")


def main() -> int:
    """Start, measure, print, stop."""
    root = Path(tempfile.mkdtemp(prefix="nrg-", dir="/tmp"))
    records = rendered(root)
    spec = records["ray-cluster"]["spec"]
    folders = NodeFolders(root / "n")
    install_node_folders(folders, GATED_MODEL_ORGS)
    nodes: list[tuple[str, Any]] = []
    try:
        head_address = ""
        for index, (name, group) in enumerate(
            [("head", spec["headGroupSpec"]), ("worker", spec["workerGroupSpecs"][0])], start=1
        ):
            container = group["template"]["spec"]["containers"][0]
            pod = {**group["template"], "metadata": {"name": name, "namespace": "nemo-rl"}}
            fs = pod_fs(root / f"p{index}", pod, container, folders)
            address = allocate(f"127.103.0.{index + 1}", head=name == "head", index=index)
            start_cmd = kuberay_ray_start(group, container, head=name == "head",
                                          address=head_address)  # fmt: skip
            setup = container.get("args", [])
            script = f"{setup[0]} && {start_cmd}" if setup else start_cmd
            script, _ = localize_ray_start(script, address, fs.map_text("/tmp/ray"))  # noqa: S108
            env = container_environment(pod, container, fs, folders, lambda *_: "hf_bench")
            tmp = str(fs.mounts["/tmp"])  # noqa: S108 - the container's /tmp
            register_node(folders.root / "nodes", address.ip,
                          {"pod": name, "rdma": name == "worker", "tmp": tmp})  # fmt: skip
            began = time.monotonic()
            proc = start(["/bin/bash", "-c", "--", fs.map_text(script)], env, folders.nemo_rl,
                         fs.root / "container.log")  # fmt: skip
            nodes.append((name, proc))
            seconds = wait_ready(address, began)
            time.sleep(5)  # let the node settle before measuring
            print(f"{name}: ready in {seconds:.1f} s; {pss_mib(proc.pid):.0f} MiB PSS idle")
            if name == "head":
                head_address = f"{address.ip}:{address.host_port(6379)}"
                dashboard = f"http://{address.ip}:{address.host_port(8265)}"
        smoke = records["ray-smoke-job"]["spec"]["template"]["spec"]["containers"][0]
        env_of = {e["name"]: e.get("value") for e in smoke["env"]}
        from ray.job_submission import JobStatus, JobSubmissionClient

        client = JobSubmissionClient(dashboard)
        began = time.monotonic()
        job = client.submit_job(
            entrypoint=env_of["ENTRYPOINT"],
            entrypoint_resources=json.loads(env_of["ENTRYPOINT_RESOURCES"]),
        )
        while client.get_job_status(job) not in (
            JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.STOPPED
        ):  # fmt: skip
            time.sleep(0.5)
        print(
            f"GRPO smoke (NeMo RL stand-in, 1 GPU): {client.get_job_status(job)} in"
            f" {time.monotonic() - began:.1f} s; after it: "
            + ", ".join(f"{name} {pss_mib(proc.pid):.0f} MiB PSS" for name, proc in nodes)
        )
        print(f"on {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    finally:
        for _, proc in nodes:
            os.killpg(proc.pid, signal.SIGTERM)
        for _, proc in nodes:
            proc.wait(timeout=30)
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
