"""`python -m testbed.local_cluster up|down|status [--stack S]`: a Kubernetes control plane here.

etcd, kube-apiserver, kube-controller-manager and kube-scheduler (built from Go modules, see
testbed.cluster_pieces) listen on 127.0.0.1 only; kwok plays the nodes and pods, and fake nodes
are shaped like a stack's pools. The test bed agent (testbed.cluster_agent) does what the
containers of the program would have done where the program depends on it, and runs the real
KubeRay operator on this host once its CRDs exist. `down` stops every process by its pid.

Everything lives in `.tools/local-cluster/`: `kubeconfig` (admin), `env` (sourced by
`.tools/engine/env`), pid files, logs, certificates.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from planning.catalog import GpuProfile
from planning.kube import ACCELERATOR_LABEL, GKE_AUTH_PLUGIN, GPU_TAINT_KEY
from planning.network import DEFAULT_MAX_PODS_PER_NODE
from planning.rdma import RDMA_DEVICE_CLASS
from planning.verify import GATE_LABEL
from testbed.cluster_pieces import build_all
from testbed.dranet_standin import dranet_objects
from testbed.host_ports import free_port
from testbed.kueue_host import exclude_controller_from_kwok
from testbed.node_topology import topology_labels
from testbed.pki import Pki, ensure_pki, write_trust_bundle
from testbed.processes import Processes
from testbed.ray_pods import NODE_TYPE_LABEL as RAY_NODE_LABEL
from testbed.ray_pods import processes_naming
from testbed.shared import shared_dir

if TYPE_CHECKING:
    from stack_config import StackConfig

REPO = Path(__file__).resolve().parent.parent
CLUSTER_ENV = "NEMO_RL_GKE_LOCAL_CLUSTER"
"""The cluster's folder, when not the checkout's `.tools/local-cluster`: a test module that
runs its own cluster beside another names one (and a pod network, ray_pods.POD_NETWORK_ENV)."""
ROOT = Path(os.environ.get(CLUSTER_ENV) or REPO / ".tools" / "local-cluster")
KUBECONFIG = ROOT / "kubeconfig"
ENV_FILE = ROOT / "env"
STATE_FILE = ROOT / "cluster.json"
BIN = ROOT / "bin"
RAY_PODS_LINK = ROOT / "ray-pods"
"""Where the Ray pods' folders are (a link to a short folder under /tmp: Ray's socket paths,
inside each pod's /tmp, must stay under 108 characters)."""
TESTBED_CRDS = Path(__file__).resolve().parent / "crds"
FAKE_NODE_ANNOTATION = "kwok.x-k8s.io/node"
RDMA_NICS = "nemo-rl-gke/rdma-nics"
"""Test-bed annotation of a fake node: its machine's RDMA NICs (the DRA stand-in's slices)."""
STOP_ORDER = [
    "ray-operator",
    "agent",
    "kueue",
    "kwok",
    "kube-scheduler",
    "kube-controller-manager",
    "kube-apiserver",
    "etcd",
]
POOL_LABEL = "nemo-rl-gke/pool"
NODEPOOL_LABEL = "cloud.google.com/gke-nodepool"
GIB_PER_GB = 1 / 1.073741824


def kuberay_chart() -> Path:
    """The local KubeRay chart the test bed installs instead of the public repository."""
    return shared_dir() / "charts" / "kuberay-operator-1.7.0"


def kueue_chart() -> Path:
    """The local Kueue chart the test bed installs instead of the OCI registry."""
    from planning.versions import VERSIONS

    return shared_dir() / "charts" / f"kueue-{VERSIONS.kueue_chart.value}"


@dataclass(frozen=True)
class Cluster:
    """A running local control plane, as recorded in cluster.json."""

    api_port: int
    etcd_port: int
    bins: dict[str, str]

    @property
    def endpoint(self) -> str:
        """`host:port` of the API server, as GKE reports a cluster endpoint."""
        return f"127.0.0.1:{self.api_port}"

    def binary(self, name: str) -> str:
        """Path of one built binary."""
        return self.bins[name]


def _kubeconfig(server: str, ca: Path, token: str) -> str:
    ca_data = __import__("base64").b64encode(ca.read_bytes()).decode()
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "local",
                    "cluster": {"server": server, "certificate-authority-data": ca_data},
                }
            ],
            "users": [{"name": "user", "user": {"token": token}}],
            "contexts": [{"name": "local", "context": {"cluster": "local", "user": "user"}}],
            "current-context": "local",
        }
    )


def _wait(url: str, pki: Pki, token: str, what: str, timeout: float = 90) -> None:
    context = ssl.create_default_context(cafile=str(pki.ca)) if url.startswith("https") else None
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            # Only the local control plane's loopback URLs, built by this module.
            request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})  # noqa: S310
            with urllib.request.urlopen(request, timeout=5, context=context) as response:  # noqa: S310
                if response.status == 200:
                    return
        except OSError as err:
            last = err
        time.sleep(0.5)
    raise SystemExit(f"local cluster: {what} did not become healthy at {url}: {last}")


def kubectl(cluster: Cluster, *args: str, input: str | None = None, check: bool = True) -> str:
    """Run the test bed's kubectl as the admin."""
    proc = subprocess.run(
        [cluster.binary("kubectl"), "--kubeconfig", str(KUBECONFIG), *args],
        input=input,
        capture_output=True,
        text=True,
        check=False,
    )
    if check and proc.returncode != 0:
        raise SystemExit(f"kubectl {' '.join(args)} failed: {proc.stderr.strip()}")
    return proc.stdout


def load(root: Path = ROOT) -> Cluster | None:
    """The cluster recorded in `root`, when its API server process still runs."""
    state = root / STATE_FILE.name
    if not state.exists() or not Processes(root).alive("kube-apiserver"):
        return None
    data = json.loads(state.read_text(encoding="utf-8"))
    return Cluster(api_port=data["api_port"], etcd_port=data["etcd_port"], bins=data["bins"])


def machine_shape(machine_type: str) -> tuple[int, int]:
    """(vCPUs, memory GiB) of a Compute Engine machine type of the standard families."""
    _, kind, size = [*machine_type.split("-"), "", ""][:3]
    per_cpu = {"highmem": 8, "standard": 4, "highcpu": 1}.get(kind, 4)
    cpus = int(size) if size.isdigit() else 16
    return cpus, cpus * per_cpu


def _node(
    name: str,
    labels: dict[str, str],
    cpu: int,
    memory_gib: int,
    gpus: int = 0,
    taints: list[dict[str, str]] | None = None,
    pods: int = DEFAULT_MAX_PODS_PER_NODE,
    rdma_nics: int = 0,
) -> dict[str, Any]:
    capacity = {
        "cpu": str(cpu),
        "memory": f"{memory_gib}Gi",
        # What the pool's maxPodsPerNode makes GKE's kubelet report.
        "pods": str(pods),
        "ephemeral-storage": "500Gi",
    }
    if gpus:
        capacity["nvidia.com/gpu"] = str(gpus)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {FAKE_NODE_ANNOTATION: "fake", RDMA_NICS: str(rdma_nics)},
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "type": "kwok",
                **labels,
            },
        },
        "spec": {"taints": taints or []},
        "status": {"capacity": capacity, "allocatable": capacity},
    }


def stack_config(stack: str) -> StackConfig:
    """The stack's own config, read from its stack file (secrets left out)."""
    from pulumi_offline.stackfiles import read_project, read_stack
    from stack_config import load_stack_config

    values = read_stack(read_project(REPO), REPO / f"Pulumi.{stack}.yaml").values
    return load_stack_config(
        {k: v for k, v in values.items() if not k.endswith(("hfToken", "wandbApiKey"))}, stack
    )


def stack_nodes(stack: str) -> list[dict[str, Any]]:
    """Fake nodes shaped like the stack's system and GPU pools (from its own config)."""
    cfg = stack_config(stack)
    system = cfg.cluster.system_pool
    cpu, memory = machine_shape(system.machine_type)
    nodes = [
        _node(f"{stack}-system-{i}", {POOL_LABEL: "system", NODEPOOL_LABEL: "system"}, cpu, memory)
        for i in range(system.max)
    ]
    gpu: GpuProfile = cfg.gpu.profile
    for i in range(cfg.gpu.max_nodes):
        labels = {
            POOL_LABEL: "gpu",
            NODEPOOL_LABEL: f"gpu-{gpu.key}",
            ACCELERATOR_LABEL: gpu.accelerator_type,
            "node.kubernetes.io/instance-type": gpu.machine_type,
            **topology_labels(gpu, i),
        }
        taint = {"key": GPU_TAINT_KEY, "value": "present", "effect": "NoSchedule"}
        nodes.append(
            _node(
                f"{stack}-gpu-{i}",
                labels,
                gpu.vcpus,
                int(gpu.memory_gb * GIB_PER_GB),
                gpus=gpu.gpus_per_node,
                taints=[taint],
                pods=cfg.gpu.max_pods_per_node,
                rdma_nics=gpu.rdma_nics,
            )
        )
    return nodes


def _write_env(cluster: Cluster, pki: Pki) -> None:
    """What `.tools/engine/env` sources: the stand-ins' endpoint, CA and auth plugin."""
    BIN.mkdir(parents=True, exist_ok=True)
    plugin = BIN / GKE_AUTH_PLUGIN
    token = pki.token("admin")
    credential = json.dumps(
        {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "kind": "ExecCredential",
            "status": {"token": token},
        }
    )
    plugin.write_text(
        "#!/bin/sh\n"
        "# nemo-rl-gke engine test bed: STAND-IN for gke-gcloud-auth-plugin. It hands kubectl and\n"
        "# the Kubernetes provider a token of the LOCAL control plane; it never talks to Google.\n"
        f"echo '{credential}'\n",
        encoding="utf-8",
    )
    plugin.chmod(0o700)
    kubectl_link = BIN / "kubectl"
    if kubectl_link.is_symlink() or kubectl_link.exists():
        kubectl_link.unlink()
    kubectl_link.symlink_to(cluster.binary("kubectl"))
    ENV_FILE.write_text(
        "# Written by `make local-cluster`: the local control plane's stand-ins.\n"
        f'export PATH="{BIN}:$PATH"\n'
        f"export NEMO_RL_GKE_STANDIN_ENDPOINT={cluster.endpoint}\n"
        f'export NEMO_RL_GKE_STANDIN_CA_FILE="{pki.ca}"\n'
        "# The stand-in's DNS endpoint is this API server; GKE's has a public certificate.\n"
        f'export SSL_CERT_FILE="{write_trust_bundle(pki)}"\n',
        encoding="utf-8",
    )


def local_environ(base: dict[str, str] | None = None, root: Path = ROOT) -> dict[str, str]:
    """What the env file of the cluster in `root` sets, applied to `base` (default:
    os.environ)."""
    env = dict(os.environ if base is None else base)
    cluster = load(root)
    if cluster is None:
        raise SystemExit("the local cluster is not running: make local-cluster")
    env["PATH"] = f"{root / BIN.name}{os.pathsep}{env.get('PATH', '')}"
    env["NEMO_RL_GKE_STANDIN_ENDPOINT"] = cluster.endpoint
    pki = Pki(root / "pki")
    env["NEMO_RL_GKE_STANDIN_CA_FILE"] = str(pki.ca)
    env["SSL_CERT_FILE"] = str(write_trust_bundle(pki))
    return env


def up(stack: str) -> Cluster:
    """Start the control plane (or find it running) and add the stack's fake nodes."""
    processes = Processes(ROOT)
    cluster = load()
    if cluster is not None:
        print(f"local cluster: already running at https://{cluster.endpoint}", flush=True)
    else:
        cluster = _start(processes)
    nodes = stack_nodes(stack)
    created = kubectl(cluster, "apply", "-f", "-", input=yaml.safe_dump_all(nodes))
    print(f"local cluster: nodes for stack {stack}:\n{created.rstrip()}", flush=True)
    nics = [
        (n["metadata"]["name"], int(n["metadata"].get("annotations", {}).get(RDMA_NICS, 0)))
        for n in nodes
    ]
    if any(count for _, count in nics):
        published = kubectl(
            cluster, "apply", "-f", "-", input=yaml.safe_dump_all(dranet_objects(nics))
        )
        print(
            "local cluster: STAND-IN for GKE's networking DRA driver (dra.net): published the"
            f" {RDMA_DEVICE_CLASS} DeviceClass and each RDMA GPU node's NICs as a ResourceSlice:"
            f"\n{published.rstrip()}",
            flush=True,
        )
    kubectl(cluster, "wait", "--for=condition=Ready", "node", "--all", "--timeout=120s")
    shown = KUBECONFIG.relative_to(REPO) if KUBECONFIG.is_relative_to(REPO) else KUBECONFIG
    print(f"local cluster: ready; kubeconfig {shown}", flush=True)
    return cluster


def _start(processes: Processes) -> Cluster:
    if processes.recorded():
        print("local cluster: cleaning up after a partial start", flush=True)
        for line in processes.stop_all(STOP_ORDER):
            print(f"  {line}", flush=True)
    bins = {name: str(folder / name) for folder in build_all().values() for name in _names(folder)}
    pki = ensure_pki(ROOT / "pki")
    etcd_port, peer_port, api_port = free_port(), free_port(), free_port()
    data = ROOT / "etcd-data"
    shutil.rmtree(data, ignore_errors=True)
    processes.start("etcd", [
        bins["etcd"], "--data-dir", str(data), "--name", "local",
        f"--listen-client-urls=http://127.0.0.1:{etcd_port}",
        f"--advertise-client-urls=http://127.0.0.1:{etcd_port}",
        f"--listen-peer-urls=http://127.0.0.1:{peer_port}",
        f"--initial-advertise-peer-urls=http://127.0.0.1:{peer_port}",
        f"--initial-cluster=local=http://127.0.0.1:{peer_port}",
        # KubeRay's RayJob CRD is 1.4 MB; etcd's default request limit is 1.5 MiB.
        "--max-request-bytes=10485760", "--quota-backend-bytes=4294967296",
    ])  # fmt: skip
    _wait(f"http://127.0.0.1:{etcd_port}/health", pki, "", "etcd")
    processes.start("kube-apiserver", [
        bins["kube-apiserver"],
        f"--etcd-servers=http://127.0.0.1:{etcd_port}",
        "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", f"--secure-port={api_port}",
        f"--tls-cert-file={pki.serving_cert}", f"--tls-private-key-file={pki.serving_key}",
        f"--token-auth-file={pki.tokens}", "--authorization-mode=RBAC",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        f"--service-account-key-file={pki.sa_pub}",
        f"--service-account-signing-key-file={pki.sa_key}",
        "--service-cluster-ip-range=10.96.0.0/16",
        # The gIB installer DaemonSet is privileged on the host network, as on GKE.
        "--allow-privileged=true", "--profiling=false",
        # The kubernetes Service cannot point at a loopback address; nothing here needs it.
        "--endpoint-reconciler-type=none",
    ])  # fmt: skip
    admin = pki.token("admin")
    _wait(f"https://127.0.0.1:{api_port}/readyz", pki, admin, "kube-apiserver")
    server = f"https://127.0.0.1:{api_port}"
    KUBECONFIG.write_text(_kubeconfig(server, pki.ca, admin), encoding="utf-8")
    KUBECONFIG.chmod(0o600)
    configs = ROOT / "kubeconfigs"
    configs.mkdir(exist_ok=True)
    for user in (
        "system:kube-controller-manager",
        "system:kube-scheduler",
        "kwok",
        "kuberay-operator",
    ):
        path = configs / user.rsplit(":", 1)[-1]
        path.write_text(_kubeconfig(server, pki.ca, pki.token(user)), encoding="utf-8")
        path.chmod(0o600)
    processes.start("kube-controller-manager", [
        bins["kube-controller-manager"], f"--kubeconfig={configs / 'kube-controller-manager'}",
        f"--service-account-private-key-file={pki.sa_key}", f"--root-ca-file={pki.ca}",
        "--use-service-account-credentials=true", "--leader-elect=false",
        "--bind-address=127.0.0.1", "--secure-port=0",
    ])  # fmt: skip
    processes.start("kube-scheduler", [
        bins["kube-scheduler"], f"--kubeconfig={configs / 'kube-scheduler'}",
        "--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=0",
    ])  # fmt: skip
    stages = kwok_config(Path(bins["kwok"]).parent / "kwok-stages.yaml", ROOT / "kwok-stages.yaml")
    processes.start("kwok", [
        bins["kwok"], f"--kubeconfig={configs / 'kwok'}", f"--config={stages}",
        f"--manage-nodes-with-annotation-selector={FAKE_NODE_ANNOTATION}=fake",
        # Fake pod and node addresses stay on loopback: nothing may dial a real network.
        "--cidr=127.100.0.0/16", "--node-ip=127.0.0.1", "--server-address=127.0.0.1:0",
        # Nodes heartbeat through Leases, as kubelets do. kwok defaults this only when its
        # config file holds a KwokConfiguration (ours holds Stages); without it no Lease is
        # kept, the node controller marks every node NotReady and the pods on them not Ready,
        # which kwok never undoes: Deployments then never become available.
        "--node-lease-duration-seconds=40",
    ])  # fmt: skip
    cluster = Cluster(api_port=api_port, etcd_port=etcd_port, bins=bins)
    STATE_FILE.write_text(
        json.dumps({"api_port": api_port, "etcd_port": etcd_port, "bins": bins}), encoding="utf-8"
    )
    kubectl(cluster, "apply", "-f", str(TESTBED_CRDS))
    print(
        "local cluster: installed test-bed-only CRDs for networking.gke.io (GKE serves them"
        " itself; they are never shipped to a real cluster)",
        flush=True,
    )
    # Before Kueue starts: without it Kueue skips its ProvisioningRequest admission checks.
    kubectl(cluster, "apply", "--server-side", "-f", provisioning_request_crd(bins["kueue"]))
    print(
        "local cluster: installed the ProvisioningRequest CRD of the cluster autoscaler's API"
        " module (GKE serves it itself; test bed only)",
        flush=True,
    )
    _write_env(cluster, pki)
    ray_root = Path(tempfile.mkdtemp(prefix="nrg-", dir="/tmp"))
    if RAY_PODS_LINK.is_symlink():
        RAY_PODS_LINK.unlink()
    RAY_PODS_LINK.symlink_to(ray_root)
    processes.start("agent", [
        sys.executable, "-m", "testbed.cluster_agent",
        "--kubectl", bins["kubectl"], "--kubeconfig", str(KUBECONFIG),
        "--operator", bins["ray-operator"],
        "--operator-kubeconfig", str(configs / "kuberay-operator"),
        "--crds", str(kuberay_chart() / "crds"), "--root", str(ROOT),
        "--ray-root", str(ray_root),
        "--kueue", bins["kueue"], "--server", server, "--api-ca", str(pki.ca),
    ], env={**os.environ, "PYTHONPATH": str(REPO)})  # fmt: skip
    print(
        f"local cluster: started etcd, kube-apiserver (https://{cluster.endpoint}),"
        " kube-controller-manager, kube-scheduler, kwok and the test bed agent",
        flush=True,
    )
    return cluster


def kwok_config(shipped: Path, out: Path) -> Path:
    """kwok's own stages, except that pods of the acceptance gates are not completed by kwok,
    and Ray pods are neither started nor completed by it: the test bed agent runs them and sets
    their status (testbed.gate_pods, testbed.ray_pods)."""
    documents = [yaml.safe_load(d) for d in shipped.read_text(encoding="utf-8").split("\n---\n")]
    exclude_controller_from_kwok(documents)
    for stage in documents:
        expressions = stage["spec"]["selector"]["matchExpressions"]
        if stage["metadata"]["name"] == "pod-complete":
            expressions.append(
                {"key": f'.metadata.labels["{GATE_LABEL}"]', "operator": "DoesNotExist"}
            )
        if stage["metadata"]["name"] in ("pod-ready", "pod-complete"):
            expressions.append(
                {"key": f'.metadata.labels["{RAY_NODE_LABEL}"]', "operator": "DoesNotExist"}
            )
    out.write_text(yaml.safe_dump_all(documents, sort_keys=False), encoding="utf-8")
    return out


def provisioning_request_crd(kueue_binary: str) -> str:
    """The ProvisioningRequest CRD the Kueue build copied next to its binary."""
    return str(
        Path(kueue_binary).parent / "crds" / "autoscaling.x-k8s.io_provisioningrequests.yaml"
    )


def _names(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.is_file() and os.access(p, os.X_OK)]


def down() -> None:
    """Stop every recorded process by pid; forget the cluster's data."""
    processes = Processes(ROOT)
    stopped = processes.stop_all(STOP_ORDER)
    if not stopped:
        print("local cluster: nothing was running", flush=True)
    for line in stopped:
        print(f"local cluster: {line}", flush=True)
    for path in (STATE_FILE, ENV_FILE):
        path.unlink(missing_ok=True)
    shutil.rmtree(ROOT / "etcd-data", ignore_errors=True)
    if RAY_PODS_LINK.is_symlink():
        ray_root = RAY_PODS_LINK.resolve()
        # The agent ended every Ray pod's process groups; a Ray process left in a session of
        # its own (a job's driver) names its node's folder on its command line: end it by pid.
        for pid in processes_naming(f"{ray_root}/"):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
                print(f"local cluster: ended stray Ray process {pid}", flush=True)
        shutil.rmtree(ray_root, ignore_errors=True)
        RAY_PODS_LINK.unlink()


def status() -> int:
    """Print what runs; 0 when the API server is up."""
    processes = Processes(ROOT)
    for record in processes.recorded():
        state = "running" if processes.alive(record.name) else "dead"
        print(f"{record.name}: pid {record.pid} {state}", flush=True)
    return 0 if load() is not None else 1


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(prog="python -m testbed.local_cluster", description=__doc__)
    parser.add_argument("action", choices=["up", "down", "status"])
    parser.add_argument("--stack", default="dev", help="shape the fake nodes like this stack")
    args = parser.parse_args(argv)
    if args.action == "up":
        up(args.stack)
        return 0
    if args.action == "down":
        down()
        return 0
    return status()


if __name__ == "__main__":
    sys.exit(main())
