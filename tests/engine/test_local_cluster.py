"""The Kubernetes half for real: `pulumi up` and `destroy` against a local control plane.

Real: kube-apiserver, controller-manager and scheduler (v1.36.3), etcd, the pulumi-kubernetes
provider and its awaits, Helm (inside the provider) installing the local KubeRay chart, the
KubeRay operator reconciling the RayCluster and the RayJobs, and Ray 2.55.1 running the pods
KubeRay creates (testbed.ray_pods) with the NeMo RL stand-in at /opt/nemo-rl. Stand-ins: kwok's
nodes and its other pods (no container runs), the GCP provider (it hands out this API server as
the cluster endpoint), gke-gcloud-auth-plugin, cluster DNS (testbed.cluster_network). The tests
use the commands anyone can run: `make local-cluster`, `make engine-up STACK=...`,
`make engine-down STACK=...`, `make local-cluster-down`. They run in this checkout (like a user),
in order, and restore every stack file (and program file) they touch.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from planning.health import (
    CHECK_LABEL,
    HEALTH_ACCOUNT,
    metric_label,
    report_script_path,
    result_label,
    taint_key,
    time_label,
    value_label,
)
from planning.kube import SCHEDULED_MAINTENANCE_LABEL
from planning.queue import QUEUE_LABEL
from planning.ray import IMAGE_CUDA
from planning.verify import GATE_ORDER
from preflight import changes as preflight_changes
from preflight.cli import main as preflight_main
from preflight.cli import preflight
from program.guard import REPLACEMENT_EXPORT
from testbed import local_cluster
from testbed.engine import STATE
from testbed.engine_stack import environ
from testbed.gate_pods import SCENARIO_FILE
from testbed.gate_standins import Scenario
from testbed.gcp_standin.invokes import DEFAULT_FIXTURES
from testbed.gobuild import cache_root
from testbed.pki import Pki
from testbed.processes import Processes
from testbed.ray_pods import GIVEN_SECRETS, processes_naming
from tests.day2 import IN_PLACE, REPLACING, Case
from tests.engine.realcli import (
    REPO,
    Events,
    Workspace,
    copy_project,
    make_workspace,
    run_in_own_group,
)
from tests.stack_config.test_health import ACCEPTED as ACCEPTED_SCHEDULES
from tests.stack_config.test_health import NEVER as NEVER_FIRES
from tests.stack_config.test_health import REFUSED as REFUSED_SCHEDULES

ROOT = local_cluster.ROOT


# The module's stacks run in a copy of the project (tests never change the checkout: `make
# engine-up` writes the local cluster's settings into the stack file, and one test changes the
# program). Its .venv and .tools are the checkout's, so the engine, the local cluster and the
# state are the ones `make engine` and `make local-cluster-build` made. Set by `project`;
# until then a path that does not exist, so nothing can reach the checkout by mistake.
PROJECT = Path("/nonexistent/project-copy")


@pytest.fixture(scope="module", autouse=True)
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The module's copy of the project."""
    global PROJECT
    PROJECT = copy_project(tmp_path_factory.mktemp("engine") / "project", tools=True)
    return PROJECT


def make(*args: str, timeout: float = 1500) -> subprocess.CompletedProcess[str]:
    """`make ARGS` in the project, as a user runs it."""
    return subprocess.run(
        ["make", *args], cwd=PROJECT, capture_output=True, text=True, timeout=timeout, check=False
    )


def must(proc: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert proc.returncode == 0, (
        f"{proc.args}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
    )
    return proc


def kube(*args: str) -> Any:
    """`kubectl get ... -o json` against the local cluster, as the admin."""
    cluster = local_cluster.load()
    assert cluster is not None, "the local cluster is not running"
    out = local_cluster.kubectl(cluster, *args, "-o", "json", check=False)
    return json.loads(out) if out.strip() else None


def items(*args: str) -> list[dict[str, Any]]:
    found = kube("get", *args)
    return list(found.get("items", [])) if found else []


def pulumi(
    stack: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """A real `pulumi ARGS -s STACK` in the project, as after `source .tools/engine/env`."""
    return run_in_own_group(
        [
            str(REPO / ".tools" / "engine" / "bin" / "pulumi"),
            *args,
            "-s",
            stack,
            "--non-interactive",
        ],
        cwd=PROJECT,
        env=env or environ(),
        timeout=900,
    )


def state(stack: str) -> list[dict[str, Any]]:
    exported = json.loads(must(pulumi(stack, "stack", "export")).stdout)
    return list(exported["deployment"].get("resources") or [])


def kubernetes_objects(stack: str) -> list[dict[str, Any]]:
    """The Kubernetes objects the stack's state holds (outputs as the provider recorded them)."""
    return [
        r
        for r in state(stack)
        if r["type"].startswith("kubernetes:")
        and not r["type"].startswith(("pulumi:providers:", "kubernetes:helm.sh/"))
    ]


def wait_until(what: str, check: Any, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(1)
    raise AssertionError(f"timed out waiting for {what}")


def our_processes() -> list[str]:
    """Every live process running a binary of the test bed's build cache for this checkout.

    The build cache is shared by every checkout on the machine, so a process counts as ours
    when it runs in this checkout or names it on its command line (its data and kubeconfigs
    live under `.tools/local-cluster`)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            exe = os.readlink(proc / "exe")
            cwd = os.readlink(proc / "cwd")
            cmdline = (proc / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        mine = any(
            cwd == str(root) or cwd.startswith(f"{root}/") or str(root) in cmdline
            for root in (REPO, PROJECT)
        )
        if exe.startswith(str(cache_root() / "go-builds")) and mine:
            found.append(f"{proc.name} {exe}")
    return found


def gate_scripts_running() -> list[str]:
    """Processes running a gate script of the test bed agent."""
    found = []
    marker = str(ROOT / "gate-pods")
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline:
            found.append(f"{proc.name} {cmdline}")
    return found


def cluster_http(url: str, timeout: float = 30, headers: dict[str, str] | None = None) -> Any:
    """GET a Service by its cluster DNS name, through the test bed's cluster network."""
    proxy = (ROOT / "cluster-network-proxy").read_text().strip()
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": proxy}))
    request = urllib.request.Request(url, headers=headers or {})  # noqa: S310 - a test URL
    with opener.open(request, timeout=timeout) as answer:
        return json.loads(answer.read())


def dashboard_headers(cluster: str = "nemo-rl", namespace: str = "nemo-rl") -> dict[str, str]:
    """The Ray dashboard's token from the Secret KubeRay generated for the cluster, as the
    README's rayDashboardTokenCommand reads it."""
    secret = kube("get", "secret", cluster, "-n", namespace)
    token = base64.b64decode(secret["data"]["auth_token"]).decode()
    return {"Authorization": f"Bearer {token}"}


def ray_pods(namespace: str = "nemo-rl", cluster: str = "") -> list[dict[str, Any]]:
    """The Ray pods (of one RayCluster, or all) in a namespace."""
    selector = f"ray.io/cluster={cluster}" if cluster else "ray.io/node-type"
    return items("pods", "-n", namespace, "-l", selector)


def ready(pod: dict[str, Any]) -> bool:
    return any(
        c["type"] == "Ready" and c["status"] == "True"
        for c in pod.get("status", {}).get("conditions", [])
    )


def wait_for_rayjob(name: str, namespace: str = "nemo-rl", timeout: float = 600) -> dict[str, Any]:
    """The RayJob once Ray's verdict is in it (SUCCEEDED, FAILED or STOPPED)."""
    found: dict[str, Any] = {}

    def final() -> bool:
        nonlocal found
        found = kube("get", "rayjobs.ray.io", name, "-n", namespace) or {}
        return found.get("status", {}).get("jobStatus") in ("SUCCEEDED", "FAILED", "STOPPED")

    try:
        wait_until(f"RayJob {name} to finish", final, timeout=timeout)
    except AssertionError:
        raise AssertionError(json.dumps(found.get("status"), indent=1)) from None
    return found


def run_workers(run: str) -> list[dict[str, Any]]:
    """What the NeMo RL stand-in's workers of a run reported (in the run's logs on /data)."""
    (report,) = (ROOT / "ray-pods").glob(f"n/volumes/*/*/nemo-rl/runs/{run}/logs/*.json")
    found: list[dict[str, Any]] = json.loads(report.read_text())
    return found


def sidecar_entries(label: str, value: str) -> list[dict[str, Any]]:
    """The structured entries the Ray pods' log sidecars printed (what GKE's agent would send
    to Cloud Logging) whose Cloud Logging label `label` is `value`."""
    entries = []
    for log in (ROOT / "ray-pods").glob("p*/ray-logs.log"):
        for line in log.read_text(errors="replace").splitlines():
            entry = json.loads(line)
            if entry.get("logging.googleapis.com/labels", {}).get(label) == value:
                entries.append(entry)
    return entries


def ships_ray_logs(run: str, cluster: str, workers: list[str]) -> None:
    """Each pod of the run's own cluster, deleted by KubeRay, left Ray's log files in the
    run's folder on /data (its sidecar's last shipping after Ray stopped), and its lines went
    out as structured entries labelled with the run, the Ray job and the actor."""
    (folder,) = (ROOT / "ray-pods").glob(f"n/volumes/*/*/nemo-rl/runs/{run}/logs/ray")
    pods = {p.name: p for p in folder.iterdir()}
    heads = [name for name in pods if name.startswith(f"{cluster}-head")]
    assert set(workers) <= set(pods), sorted(pods)
    assert len(heads) == 1, sorted(pods)
    for name in workers:
        (session,) = pods[name].iterdir()
        assert (session / "raylet.out").stat().st_size > 0
        outputs = "".join(f.read_text() for f in session.glob("worker-*.out"))
        assert "reporting GPUs ['0']" in outputs, sorted(f.name for f in session.iterdir())
        assert not list(session.glob("debug_state*"))
    (head_session,) = pods[heads[0]].iterdir()
    (driver,) = head_session.glob("job-driver-*.log")
    assert "done: 2 workers" in driver.read_text()

    entries = sidecar_entries("run", run)
    actors = [e for e in entries if e["logging.googleapis.com/labels"].get("ray_actor")]
    assert any("reporting GPUs" in e["message"] for e in actors), entries[-20:]
    # The stand-in's workers, and Ray's own job supervisor on the head (it runs the entrypoint).
    names = {e["logging.googleapis.com/labels"]["ray_actor"] for e in actors}
    assert {"_Worker", "JobSupervisor"} <= names, names
    assert all(e["logging.googleapis.com/labels"].get("ray_job_id") for e in actors)
    drivers = [e for e in entries if "submission_id" in e["logging.googleapis.com/labels"]]
    assert any("done: 2 workers" in e["message"] for e in drivers)
    assert {e["severity"] for e in entries} >= {"INFO", "DEFAULT"}
    labels = {e["logging.googleapis.com/labels"]["ray_log"] for e in entries}
    assert "raylet.out" in labels
    assert not [name for name in labels if name.startswith("python-core-")]
    no_secret_shipped(folder)


def no_secret_shipped(*copies: Path, also: tuple[str, ...] = ()) -> None:
    """No Secret value a Ray container got (KubeRay's dashboard token, the stack's tokens; the
    agent records each; `also`: values given as files) is in any line a sidecar printed for
    Cloud Logging or in any file it copied: Ray's runtime-env agent logs every runtime env NeMo
    RL fills with the driver's environment."""
    given = json.loads((ROOT / "ray-pods" / GIVEN_SECRETS).read_text()) + list(also)
    assert given, "the agent gave no Secret value to any Ray container"
    shipped = list((ROOT / "ray-pods").glob("p*/ray-logs.log"))
    copied = [f for folder in copies for f in folder.rglob("*") if f.is_file()]
    assert any(f.name.startswith("runtime_env_agent") for f in copied)
    for path in [*shipped, *copied]:
        text = path.read_bytes()
        assert not [s for s in given if s.encode() in text], f"a Secret's value in {path}"


@contextlib.contextmanager
def program_changed(path: str, old: str, new: str) -> Iterator[None]:
    """The project copy's program with `old` replaced by `new` in `path`, restored afterwards
    (to show what a defect the change fixed does under the real engine)."""
    file = PROJECT / path
    text = file.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{old!r} is not in {path} once"
    file.write_text(text.replace(old, new), encoding="utf-8")
    try:
        yield
    finally:
        file.write_text(text, encoding="utf-8")


@pytest.fixture(scope="module")
def cluster(engine: None) -> Iterator[None]:
    """`make local-cluster` for the module; `make local-cluster-down` after, nothing left over."""
    must(make("local-cluster", "STACK=b200"))
    ray_root = f"{local_cluster.RAY_PODS_LINK.resolve()}/"
    try:
        yield
    finally:
        for stack in ("b200", "dev"):
            make("engine-down", f"STACK={stack}")
        down = must(make("local-cluster-down"))
        assert "stopped" in down.stdout or "killed" in down.stdout
        assert our_processes() == [], "a test bed process outlived the run"
        assert gate_scripts_running() == [], "a gate script outlived the run"
        assert processes_naming(ray_root) == [], "a Ray process outlived the run"
        assert "ended stray Ray process" not in down.stdout, down.stdout
        assert Processes(ROOT).recorded() == []


@pytest.fixture(scope="module")
def b200(cluster: None) -> str:
    """`make engine-up STACK=b200`: the real up, once for the tests below."""
    up = make("engine-up", "STACK=b200")
    assert up.returncode == 0, up.stdout[-6000:] + up.stderr[-3000:]
    assert "engine-up b200: done" in up.stdout
    return "b200"


def test_every_kubernetes_object_exists_as_declared(b200: str) -> None:
    objects = kubernetes_objects(b200)
    assert len(objects) > 20
    for resource in objects:
        outputs = resource["outputs"]
        meta = outputs["metadata"]
        where = ["-n", meta["namespace"]] if meta.get("namespace") else []
        group = outputs["apiVersion"].rsplit("/", 1)[0] if "/" in outputs["apiVersion"] else ""
        kind = outputs["kind"].lower() + (f".{group}" if group else "")
        live = kube("get", kind, meta["name"], *where)
        assert live is not None, f"{outputs['kind']} {meta['name']} is not in the API server"
        for key, value in (resource["inputs"].get("metadata", {}).get("labels") or {}).items():
            assert live["metadata"]["labels"][key] == value
    # The provider's awaits passed: the claim is bound to the stack's PV, the CRD Job ran, the
    # Helm release (with the local chart) is deployed.
    (pv,) = items("pv")
    assert pv["metadata"]["name"] == "nemo-rl-b200-lustre"
    assert pv["status"]["phase"] == "Bound"
    (claim,) = items("pvc", "-n", "nemo-rl")
    assert claim["spec"]["volumeName"] == "nemo-rl-b200-lustre"
    (job,) = items("jobs", "-n", "kuberay-system")
    assert job["metadata"]["name"] == "kuberay-crds-v1-7-0"
    assert any(c["type"] == "Complete" for c in job["status"]["conditions"])
    releases = items("secrets", "-n", "kuberay-system", "-l", "owner=helm,name=kuberay-operator")
    assert [r["metadata"]["labels"]["status"] for r in releases] == ["deployed"]
    crds = {c["metadata"]["name"] for c in items("crd")}
    assert {"rayclusters.ray.io", "rayjobs.ray.io"} <= crds
    assert "applied" in (ROOT / "logs" / "agent.log").read_text()


def test_kuberay_reconciles_the_raycluster_onto_the_right_nodes(b200: str) -> None:
    # Each pod is a real Ray node; the agent reports it Ready once KubeRay's probe answers.
    wait_until(
        "the Ray pods to be Ready",
        lambda: len(ray_pods()) == 3 and all(ready(p) for p in ray_pods()),
        300,
    )
    pods = {p["metadata"]["name"]: p for p in items("pods", "-n", "nemo-rl")}
    nodes = {n["metadata"]["name"]: n for n in items("nodes")}
    workers = [
        p for p in pods.values() if p["metadata"]["labels"].get("ray.io/node-type") == "worker"
    ]
    heads = [p for p in pods.values() if p["metadata"]["labels"].get("ray.io/node-type") == "head"]
    assert len(heads) == 1
    assert len(workers) == 2  # one per GPU node of the pool
    assert {w["spec"]["nodeName"] for w in workers} == {"b200-gpu-0", "b200-gpu-1"}
    head_node = nodes[heads[0]["spec"]["nodeName"]]
    assert head_node["metadata"]["labels"]["nemo-rl-gke/pool"] == "system"
    for worker in workers:
        annotation = json.loads(worker["metadata"]["annotations"]["networking.gke.io/interfaces"])
        assert [i["network"] for i in annotation] == [
            "default",
            "gvnic-1",
            *[f"rdma-{n}" for n in range(8)],
        ]
        (container,) = [
            c for c in worker["spec"]["containers"] if c["name"] != "gke-gcsfuse-sidecar"
        ]
        assert container["resources"]["limits"]["nvidia.com/gpu"] == "8"
        # KubeRay ran our gIB setup before its own `ray start`, in one bash (the raylet's env).
        assert container["command"] == ["/bin/bash", "-c", "--"]
        (script,) = container["args"]
        setup, generated = script.split(" && ulimit -n 65536; ", 1)
        assert "source /usr/local/gib/scripts/set_nccl_env.sh" in setup
        assert "export NCCL_TUNER_CONFIG_PATH=/usr/local/gib/configs/tuner_config_a4.txtpb" in setup
        assert setup.rstrip().endswith(" || exit 1")  # a failed setup ends the container
        assert generated.startswith("ray start")
        # KubeRay read the group's typed resources and kept the GPUs (it dropped --num-gpus
        # when it could not parse the doubly encoded JSON of before).
        assert " --resources='{\"nemo_rl_gib\":1}' " in generated
        assert " --num-gpus=8 " in generated
        volumes = {v["name"]: v for v in worker["spec"]["volumes"]}
        assert volumes["data"]["persistentVolumeClaim"]["claimName"] == "lustre-data"
        assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in worker[
            "spec"
        ]["tolerations"]
        selector = worker["spec"]["nodeSelector"]
        assert selector["cloud.google.com/gke-accelerator"] == "nvidia-b200"
        # The queue's topology-aware placement pins each worker to the node it chose.
        assert selector.get("kubernetes.io/hostname") == worker["spec"]["nodeName"]
        assert worker["status"]["phase"] == "Running"
    (service,) = items("svc", "-n", "nemo-rl", "-l", "ray.io/node-type=head")
    exported = json.loads(must(pulumi(b200, "stack", "output", "--json")).stdout)
    assert service["metadata"]["name"] == exported["rayHeadService"]
    wait_until(
        "KubeRay to call the RayCluster ready",
        lambda: (
            kube("get", "rayclusters.ray.io", "nemo-rl", "-n", "nemo-rl")["status"].get("state")
            == "ready"
        ),
    )
    # The head Service reaches the real dashboard, which wants the token KubeRay generated
    # (token mode): refused without it; with it, Ray's own view of its nodes.
    (owner,) = kube("get", "secret", "nemo-rl", "-n", "nemo-rl")["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"]) == ("RayCluster", "nemo-rl")
    head = f"http://{service['metadata']['name']}.nemo-rl.svc.cluster.local:8265"
    with pytest.raises(urllib.error.HTTPError) as refused:
        cluster_http(f"{head}/api/v0/nodes?detail=1")
    assert refused.value.code == 401
    answer = cluster_http(f"{head}/api/v0/nodes?detail=1", headers=dashboard_headers())
    nodes = answer["data"]["result"]["result"]
    alive = [n for n in nodes if n["state"] == "ALIVE"]
    assert len(alive) == 3
    workers_seen = [n for n in alive if not n["is_head_node"]]
    ips = {w["status"]["podIP"] for w in workers}
    assert {n["node_ip"] for n in workers_seen} == ips  # each pod its own node and address
    for node in workers_seen:
        # GPUs only from what KubeRay's command passed to `ray start`.
        assert node["resources_total"]["GPU"] == 8
        assert node["resources_total"]["nemo_rl_gib"] == 1
    (head_node,) = [n for n in alive if n["is_head_node"]]
    assert "GPU" not in head_node["resources_total"]


def test_fake_nodes_heartbeat_through_leases(b200: str) -> None:
    # A node without a fresh Lease is marked NotReady by the real node controller (and its
    # pods not Ready) 50 s (its grace period) after its last heartbeat: look past that.
    born = min(datetime.fromisoformat(n["metadata"]["creationTimestamp"]) for n in items("nodes"))
    time.sleep(max(0.0, 70 - (datetime.now(UTC) - born).total_seconds()))
    leases = {
        lease["metadata"]["name"]: lease for lease in items("leases", "-n", "kube-node-lease")
    }
    for node in items("nodes"):
        name = node["metadata"]["name"]
        assert name in leases, f"node {name} keeps no Lease"
        spec = leases[name]["spec"]
        age = datetime.now(UTC) - datetime.fromisoformat(spec["renewTime"])
        assert age.total_seconds() < spec["leaseDurationSeconds"], f"{name}'s Lease is stale"
        ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"]
        assert [c["status"] for c in ready] == ["True"], f"node {name} is not Ready"
    for pod in items("pods", "-A"):
        ready = [c["status"] for c in pod["status"]["conditions"] if c["type"] == "Ready"]
        succeeded = pod["status"].get("phase") == "Succeeded"
        assert succeeded or ready == ["True"], f"pod {pod['metadata']['name']} is not Ready"


def test_a_second_preview_and_a_refresh_plan_nothing(b200: str) -> None:
    """The program is deterministic and the real Kubernetes provider reads back what it
    applied, so an unchanged program plans nothing, before and after a refresh. The GCP half
    of the refresh reads the stand-in, which returns the state it was given: this cannot show
    a field GCP would report back differently (that drift is what `ignore_changes` on the GPU
    pool is for, from Cluster Toolkit's experience, not from a test here)."""
    must(pulumi(b200, "preview", "--expect-no-changes"))
    must(pulumi(b200, "refresh", "--yes"))
    must(pulumi(b200, "preview", "--expect-no-changes"))


LOCAL_CLUSTER_ENV = (
    "PATH",
    "NEMO_RL_GKE_STANDIN_ENDPOINT",
    "NEMO_RL_GKE_STANDIN_CA_FILE",
    "SSL_CERT_FILE",
)
"""What a workspace's CLI runs need of the local cluster's environment: the test bed's binaries
first on PATH, the stand-in's cluster endpoint and CA, and the trust bundle (the kubeconfig
names the cluster's DNS endpoint and no CA; the bundle makes the local API server trusted)."""


def on_the_local_cluster(workspace: Workspace, env: dict[str, str]) -> None:
    """Point `workspace`'s CLI runs at the local cluster (`env`'s LOCAL_CLUSTER_ENV values)."""
    for key in LOCAL_CLUSTER_ENV:
        workspace.extra_env[key] = env[key]


def workspace_on_b200(tmp_path: Path) -> Workspace:
    """A project copy that previews the module's running b200 stack: the same backend and
    stack (a copy of its stack file, so `pulumi config set` there leaves this checkout's
    alone) with the local cluster's environment. A preview writes no state."""
    workspace = make_workspace(tmp_path)
    shutil.copy2(PROJECT / "Pulumi.b200.yaml", workspace.root / "Pulumi.b200.yaml")
    workspace.backend = STATE
    env = environ()
    on_the_local_cluster(workspace, env)
    workspace.extra_env["PULUMI_CONFIG_PASSPHRASE"] = env["PULUMI_CONFIG_PASSPHRASE"]
    # The reservations the day-2 changes name exist, as a user would have them before the
    # change (the program reads the pool's reservation at every preview, and a missing one
    # stops it before any plan): another reservation in the zone, and b200's in the zone it
    # moves to.
    described = json.loads(DEFAULT_FIXTURES.read_text())
    (b200_reservation,) = [
        r for r in described["reservations"] if r["name"] == "my-b200-reservation-placeholder"
    ]
    described["reservations"] += [
        {**b200_reservation, "name": "another-reservation"},
        {**b200_reservation, "zone": "us-central1-c"},
    ]
    description = tmp_path / "reservations.json"
    description.write_text(json.dumps(described))
    workspace.extra_env["NEMO_RL_GKE_STANDIN_RESERVATIONS"] = str(description)
    return workspace


def _without_ciphertext(value: Any) -> Any:
    if isinstance(value, dict):
        if "ciphertext" in value:
            return "[secret]"
        return {k: _without_ciphertext(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_ciphertext(v) for v in value]
    return value


def resources_by_urn(stack: str) -> dict[str, Any]:
    """urn -> (id, inputs) of the stack's state."""
    return {r["urn"]: (r.get("id"), _without_ciphertext(r.get("inputs"))) for r in state(stack)}


def configure(workspace: Workspace, edits: list[tuple[str, str | None]]) -> None:
    for key, value in edits:
        if value is None:
            workspace.pulumi("config", "rm", "--path", key, "-s", "b200")
        else:
            workspace.pulumi("config", "set", "--path", key, value, "-s", "b200")


def ops_of(events: Events, name: str) -> list[str]:
    return [s.op for s in events.steps if s.name == name]


@pytest.mark.parametrize("case", REPLACING + IN_PLACE, ids=lambda c: c.key)
def test_a_day2_change_plans_exactly_what_the_table_says(
    b200: str, tmp_path: Path, case: Case, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each change, previewed on the running b200 stack: the GCP stand-in plans from the
    shared table of what the real provider replaces on, the real engine cascades to what
    depends on it, and the real Kubernetes provider decides for its objects. The replaced
    resources are the README table's row (planning.replacements) and nothing else, and
    preflight --previous, offline, lists the same. Recreating changes are previewed with
    protect off (a protected stack refuses them: the next test)."""
    workspace = workspace_on_b200(tmp_path)
    if case.lift_cuda_check:
        image = workspace.root / "planning" / "ray" / "image.py"
        text = image.read_text()
        assert text.count('"v0.7.0": (13, 2)') == 1, "IMAGE_CUDA moved: update this test"
        image.write_text(text.replace('"v0.7.0": (13, 2)', '"v0.7.0": (12, 9)'))
        monkeypatch.setitem(IMAGE_CUDA, "v0.7.0", (12, 9))
    edits = case.cli_edits()
    if case in REPLACING:
        edits = [("nemo-rl-gke:protect", "false"), *edits]
    configure(workspace, edits)
    events = workspace.events("preview", "-s", "b200")
    assert events.returncode == 0, events.text()
    replaced = {s.name for s in events.steps if s.op == "replace"}
    assert replaced == case.expected
    if "gpu-pool" in replaced:  # deleted first: its reservation is free for the new pool
        pool = ops_of(events, "gpu-pool")
        assert pool.index("delete-replaced") < pool.index("create-replacement"), pool
    if "lustre-instance" in replaced:  # deleted first: its instance id is fixed
        lustre = ops_of(events, "lustre-instance")
        assert lustre.index("delete-replaced") < lustre.index("create-replacement"), lustre
    # Preflight, from the stack file alone, plans the same replacements (the current side
    # reads the previous side's exports, as the program reads its last outputs: the Lustre
    # claim keeps the size it was created at).
    before = preflight_changes.snapshot(
        preflight(PROJECT / "Pulumi.b200.yaml", project_dir=PROJECT, known=True).run, "known"
    )
    after = preflight(
        workspace.root / "Pulumi.b200.yaml",
        project_dir=REPO,
        known=True,
        previous_outputs={REPLACEMENT_EXPORT: dict(before.replacement_config)},
    )
    offline = preflight_changes.compare(
        before, preflight_changes.snapshot(after.run, "known"), "Pulumi.b200.yaml"
    )
    assert preflight_changes.replaced_names(offline) == replaced
    updated = {s.name for s in events.steps if s.op == "update"} - {"gke-k8s"}
    # Offline, a Helm release whose inputs differ is a "change" (the provider decides how; it
    # updates a release in place): the Kueue release under network.rdma, whose configuration
    # maps the DRANET device class.
    offline_updates = {p.resource.name for p in (*offline.of("update"), *offline.of("change"))}
    assert offline_updates - {"gke-k8s"} == updated


def test_a_protected_stack_refuses_a_change_that_recreates_the_gpu_pool(
    b200: str, tmp_path: Path
) -> None:
    """The program reads its own last outputs (readStackOutputs, as a StackReference does,
    from the file backend) and stops before it registers anything: the preview fails naming
    the key and the way to do it on purpose, and `up --skip-preview` changes nothing."""
    workspace = workspace_on_b200(tmp_path)
    before = resources_by_urn(b200)
    configure(workspace, [("nemo-rl-gke:gpu.reservation", "another-reservation")])
    preview = workspace.events("preview", "-s", "b200")
    assert preview.returncode != 0
    (message,) = [m for m in preview.errors() if "replacement refused" in m]
    assert message.strip().startswith(
        "replacement refused: nemo-rl-gke:gpu.reservation: changing it from"
        " my-b200-reservation-placeholder to another-reservation recreates the GPU node pool"
    )
    assert (
        "pulumi config set nemo-rl-gke:protect false && pulumi config set"
        " nemo-rl-gke:protectionLift WHY && pulumi up" in message
    )
    assert "Traceback" not in preview.text()
    assert [s for s in preview.steps if s.op not in ("same",) and "Stack" not in s.type] == []
    up = workspace.events("up", "-s", "b200", "--yes", "--skip-preview")
    assert up.returncode != 0
    # The same resources with the same ids and inputs (a failed update still rewrites the
    # checkpoint, re-encrypting secrets with a fresh nonce: those are compared as present).
    assert resources_by_urn(b200) == before
    # Preflight, given the stack file as it was, stops the same change the same way.
    code = preflight_main(
        ["--stack-file", str(workspace.root / "Pulumi.b200.yaml"), "--previous",
         str(PROJECT / "Pulumi.b200.yaml"), "--quiet"]
    )  # fmt: skip
    assert code == 1


def test_a_zone_change_under_the_running_gpu_pool_stops_and_names_the_steps(
    b200: str, tmp_path: Path
) -> None:
    """The real pulumi-gcp panics previewing a zone change under an RDMA pool (its node-pool
    CustomizeDiff on unknown additional networks). The program asks the cluster (getCluster,
    answered by the stand-in from a description of the running pool) and stops, protected or
    not, naming the key and the two steps; `up --skip-preview` changes nothing. The first
    step's command, as the message gives it, resolves the pool's URN and takes what runs on
    it with it (previewed only: the module's later tests need the pool)."""
    workspace = workspace_on_b200(tmp_path)
    description = Path(workspace.extra_env["NEMO_RL_GKE_STANDIN_RESERVATIONS"])
    described = json.loads(description.read_text())
    described["clusters"] = [
        {
            "name": "nemo-rl-b200",
            "location": "us-central1",
            "pools": [{"name": "gpu-b200", "nodes": 2, "zones": ["us-central1-b"]}],
        }
    ]
    description.write_text(json.dumps(described))
    before = resources_by_urn(b200)
    configure(workspace, [("nemo-rl-gke:protect", "false"), ("nemo-rl-gke:zone", "us-central1-c")])
    preview = workspace.events("preview", "-s", "b200")
    assert preview.returncode != 0
    text = preview.text()
    assert "nemo-rl-gke:zone: moving the stack from us-central1-b to us-central1-c in one" in text
    assert "Traceback" not in text
    up = workspace.events("up", "-s", "b200", "--yes", "--skip-preview")
    assert up.returncode != 0
    assert resources_by_urn(b200) == before
    # The first step, word for word from the message (STACK -> b200), previewed.
    command = text.split("first remove the GPU pool and what runs on it: ", 1)[1]
    command = command.split("; then set", 1)[0].replace("STACK", "b200")
    command += " --preview-only --non-interactive"
    env = workspace.env()
    path = f"{REPO / '.tools' / 'engine' / 'bin'}:{env['PATH']}"
    proc = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", command],
        cwd=workspace.root, env={**env, "PATH": path}, capture_output=True, text=True,
        check=False, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert "gpu-pool" in proc.stdout
    assert "ray-cluster" in proc.stdout  # what runs on the pool goes with it
    assert "lustre-instance" not in proc.stdout  # the data stays
    assert resources_by_urn(b200) == before
    # With the pool gone (described so), the same change is planned.
    described["clusters"][0]["pools"] = []
    description.write_text(json.dumps(described))
    moved = workspace.events("preview", "-s", "b200")
    assert moved.returncode == 0, moved.text()[-4000:]


def test_a_system_pool_machine_change_waits_for_the_user_to_name_the_shape(
    b200: str, tmp_path: Path
) -> None:
    """In place for pulumi-gcp, but GKE recreates every system node and the Ray head with
    them: the preview stops naming the key until the stack names the new shape, then plans an
    update of the system pool only."""
    workspace = workspace_on_b200(tmp_path)
    key = "nemo-rl-gke:cluster.systemPool"
    configure(workspace, [(f"{key}.machineType", "n2-highmem-32")])
    stopped = workspace.events("preview", "-s", "b200")
    assert stopped.returncode != 0
    assert (
        "nemo-rl-gke:cluster.systemPool.machineType: changing the system pool from"
        " n2-highmem-16/200gb to n2-highmem-32/200gb recreates every system node" in stopped.text()
    ), stopped.text()[-4000:]
    assert [s for s in stopped.steps if s.op != "same" and "Stack" not in s.type] == []
    configure(workspace, [(f"{key}.recreateNodesAs", "n2-highmem-32/200gb")])
    consented = workspace.events("preview", "-s", "b200")
    assert consented.returncode == 0, consented.text()[-4000:]
    assert ops_of(consented, "system-pool") == ["update"]
    assert {s.name for s in consented.steps if s.op in ("replace", "create-replacement")} == set()


def test_a_move_to_a_full_reservation_stops_before_the_running_pool_is_deleted(
    b200: str, tmp_path: Path
) -> None:
    """The GPU pool is replaced delete-first, and its nodes sit in the old reservation: a
    target without room for the whole pool would leave no pool at all (GKE's 429). The program
    reads the running pool (getCluster, described to the stand-in) and the target, and stops
    the preview naming gpu.reservation and the safe order; with room the same move plans the
    pool's replacement (the day-2 test above) and `up --skip-preview` of the full one changes
    nothing."""
    workspace = workspace_on_b200(tmp_path)
    description = Path(workspace.extra_env["NEMO_RL_GKE_STANDIN_RESERVATIONS"])
    described = json.loads(description.read_text())
    current = "my-b200-reservation-placeholder"
    for reservation in described["reservations"]:
        if reservation["name"] in (current, "another-reservation"):
            reservation["inUse"] = reservation[
                "count"
            ]  # the old one holds the pool; the new is full
    described["clusters"] = [
        {
            "name": "nemo-rl-b200",
            "location": "us-central1",
            "pools": [
                {"name": "gpu-b200", "nodes": 2, "zones": ["us-central1-b"], "reservation": current}
            ],
        }
    ]
    description.write_text(json.dumps(described))
    before = resources_by_urn(b200)
    configure(
        workspace,
        [("nemo-rl-gke:protect", "false"), ("nemo-rl-gke:gpu.reservation", "another-reservation")],
    )
    stopped = workspace.events("preview", "-s", "b200")
    assert stopped.returncode != 0
    text = stopped.text()
    assert "nemo-rl-gke:gpu.reservation" in text
    assert f"the pool's 2 nodes consume {current}" in text
    assert "GKE deletes the pool before it creates the new one" in text
    assert [s for s in stopped.steps if s.op != "same" and "Stack" not in s.type] == []
    up = workspace.events("up", "-s", "b200", "--yes", "--skip-preview")
    assert up.returncode != 0
    assert resources_by_urn(b200) == before


def test_a_gke_upgrade_moves_the_control_plane_then_the_pools_and_stops_on_an_unoffered_version(
    b200: str, tmp_path: Path
) -> None:
    """GKE offers 1.35 and 1.36 (the stand-in answers getEngineVersions from the description):
    a two-minor step, and a version it does not offer, stop the preview naming
    cluster.minVersion before anything is planned; the three keys of an upgrade, moved
    together, update the cluster, the system pool and the GPU pool in place, in that order,
    and replace nothing."""
    workspace = workspace_on_b200(tmp_path)
    description = Path(workspace.extra_env["NEMO_RL_GKE_STANDIN_RESERVATIONS"])
    described = json.loads(description.read_text())
    offered = ["1.36.2-gke.1000", "1.35.8-gke.1036000"]
    described["engineVersions"] = {
        "validMasterVersions": offered,
        "validNodeVersions": offered,
        "channelLatest": {"REGULAR": offered[0]},
    }
    description.write_text(json.dumps(described))
    # Two minors at once: GKE moves a control plane one minor at a time.
    configure(workspace, [("nemo-rl-gke:cluster.minVersion", "1.37")])
    stopped = workspace.events("preview", "-s", "b200")
    assert stopped.returncode != 0
    assert "nemo-rl-gke:cluster.minVersion: 1.35 to 1.37 is 2 minors in one step" in stopped.text()
    assert [s for s in stopped.steps if s.op != "same" and "Stack" not in s.type] == []
    # One minor up, to a patch GKE does not offer.
    configure(workspace, [("nemo-rl-gke:cluster.minVersion", "1.36.1-gke.5")])
    stopped = workspace.events("preview", "-s", "b200")
    assert stopped.returncode != 0
    assert "nemo-rl-gke:cluster.minVersion: 1.36.1-gke.5 is not offered by GKE here" in (
        stopped.text()
    )
    assert [s for s in stopped.steps if s.op != "same" and "Stack" not in s.type] == []
    configure(
        workspace,
        [
            ("nemo-rl-gke:cluster.minVersion", "1.36"),
            ("nemo-rl-gke:cluster.systemPool.version", offered[0]),
            ("nemo-rl-gke:gpu.version", offered[0]),
        ],
    )
    upgrade = workspace.events("preview", "-s", "b200")
    assert upgrade.returncode == 0, upgrade.text()[-4000:]
    moved = [s.name for s in upgrade.steps if s.op == "update" and s.type.startswith("gcp:")]
    assert moved == ["gke-cluster", "system-pool", "gpu-pool"], moved
    assert [s.name for s in upgrade.steps if "replace" in s.op] == []


def test_a_changed_kubeconfig_replaces_no_kubernetes_object(b200: str, tmp_path: Path) -> None:
    """The cluster's endpoints change form (its IP endpoint localhost instead of 127.0.0.1,
    as after an IP rotation, and its DNS endpoint - the one the kubeconfig names - 127.0.0.1
    instead of localhost): the kubeconfig changes, the provider is updated, nothing is
    replaced."""
    cluster = local_cluster.load()
    assert cluster is not None
    env = environ()
    env["NEMO_RL_GKE_STANDIN_ENDPOINT"] = f"localhost:{cluster.api_port}"
    env["NEMO_RL_GKE_STANDIN_DNS_ENDPOINT"] = f"127.0.0.1:{cluster.api_port}"
    must(pulumi(b200, "refresh", "--yes", env=env))
    log = tmp_path / "events.jsonl"
    env["PULUMI_DEBUG_COMMANDS"] = "true"
    proc = pulumi(b200, "preview", "--event-log", str(log), env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    events = Events.parse(proc, log.read_text().splitlines())
    ops = {(s.op, s.type) for s in events.steps if s.op != "same"}
    assert ("update", "pulumi:providers:kubernetes") in ops
    assert not [s for s in events.steps if "replace" in s.op], ops
    must(pulumi(b200, "up", "--yes", env=env))
    must(pulumi(b200, "preview", "--expect-no-changes", env=env))


SECRETS = {"hfToken": "hf_fake_not_real", "wandbApiKey": "wandb_fake_not_real"}
"""The run's tokens in the RayJob test: neither may reach a log, a copy or the State API."""


def test_the_grpo_rayjob_succeeds_with_every_worker_on_a_gpu_with_gib(b200: str) -> None:
    """KubeRay submits the RayJob to the real head; NeMo RL's stand-in places a worker on each of
    the 16 GPUs with the driver's environment; every one must see its GPU and the gIB setup."""
    env = environ()
    must(pulumi(b200, "config", "set", "--path", "nemo-rl-gke:ray.job.enabled", "true", env=env))
    must(pulumi(b200, "config", "set", "--path", "nemo-rl-gke:ray.job.wandb", "true", env=env))
    for key, value in SECRETS.items():
        must(pulumi(b200, "config", "set", "--secret", f"nemo-rl-gke:{key}", value, env=env))
    try:
        must(pulumi(b200, "up", "--yes", env=env))

        run = json.loads(must(pulumi(b200, "stack", "output", "--json", env=env)).stdout)["grpoRun"]
        job = wait_for_rayjob(run)
        assert job["metadata"]["annotations"]["nemo-rl-gke/checkpoint-dir"].startswith(
            f"/data/nemo-rl/runs/{run}/"
        )
        assert "examples/run_grpo.py" in job["spec"]["entrypoint"]
        assert not [v for v in SECRETS.values() if v in json.dumps(job)]
        assert job["status"]["jobStatus"] == "SUCCEEDED", json.dumps(job["status"], indent=1)
        assert job["status"]["jobDeploymentStatus"] == "Complete"
        workers = run_workers(run)
        assert len(workers) == 16
        by_pod: dict[str, list[str]] = {}
        for worker in workers:
            by_pod.setdefault(worker["pod"], []).extend(worker["gpu_ids"])
            assert worker["rdma_node"] is True
            assert worker["nccl"]["NCCL_NET"] == "gIB"
            assert worker["gib_plugin_present"] is True
            assert worker["nccl"]["NCCL_TUNER_CONFIG_PATH"].endswith("tuner_config_a4.txtpb")
            # The pod network, set by the platform (the gIB script's stand-in sets no interface).
            assert worker["nccl"]["NCCL_SOCKET_IFNAME"] == "eth0"
            assert worker["gloo_socket_ifname"] == "eth0"
            assert worker["model_cached"] is True  # the driver's download, before the workers
            assert worker["numa"].split(":")[0] == worker["gpu_ids"][0]  # NeMo RL's NUMA map
        # Both workers, each GPU of each once.
        assert sorted(map(sorted, by_pod.values())) == [[str(g) for g in range(8)]] * 2
        checkpoints = (ROOT / "ray-pods").glob(f"n/volumes/*/*/nemo-rl/runs/{run}/checkpoints/*")
        assert [c.name for c in checkpoints] == ["step_10"]
        # The driver's output is kept with the run, beside NeMo RL's logs.
        (log,) = (ROOT / "ray-pods").glob(f"n/volumes/*/*/nemo-rl/runs/{run}/logs/driver.log")
        assert "step 10/10" in log.read_text()

        # The RayCluster's pods copy Ray's own files beside the runs (their sidecars, every
        # 5 s while they run): each worker's actors' output of this run is there, no token is.
        copies = ROOT / "ray-pods" / "n" / "volumes"

        def shipped() -> bool:
            found = copies.glob("*/*/nemo-rl/ray-logs/nemo-rl/*/*/worker-*.out")
            pods = {f.parent.parent.name for f in found if "reporting GPUs" in f.read_text()}
            return pods == set(by_pod)

        wait_until("the workers' Ray logs on /data", shipped, 60)
        copied = [f for f in copies.glob("*/*/nemo-rl/ray-logs/nemo-rl/*/*/*") if f.is_file()]
        for value in SECRETS.values():
            assert not [f for f in copied if value in f.read_text(errors="replace")]
        # NeMo RL copied the driver's environment into every actor, which the State API
        # serves to whoever has the dashboard's token: the run's token is in none of them.
        head = "http://nemo-rl-head-svc.nemo-rl.svc.cluster.local:8265"
        listing = json.dumps(
            cluster_http(f"{head}/api/v0/actors?detail=1&limit=1000", headers=dashboard_headers())
        )
        assert listing.count('"class_name": "_Worker"') >= 16
        assert not [v for v in SECRETS.values() if v in listing]
        # Nor the dashboard's own token (the driver connects from a file), in the State API,
        # in any line the sidecars printed for Cloud Logging or in any file they copied.
        assert dashboard_headers()["Authorization"].split()[-1] not in listing
        no_secret_shipped(copies, also=tuple(SECRETS.values()))
    finally:
        must(
            pulumi(b200, "config", "set", "--path", "nemo-rl-gke:ray.job.enabled", "false", env=env)
        )
        must(pulumi(b200, "config", "rm", "--path", "nemo-rl-gke:ray.job.wandb", env=env))
        for key in SECRETS:
            must(pulumi(b200, "config", "rm", f"nemo-rl-gke:{key}", env=env))
        must(pulumi(b200, "up", "--yes", env=env))
    assert kube("get", "rayjobs.ray.io", "-n", "nemo-rl")["items"] == []


def submit_run(stack: str, name: str, hours: float) -> subprocess.CompletedProcess[str]:
    """The README's `python -m tools.submit_run` with the engine's CLI and the cluster's kubectl."""
    cluster = local_cluster.load()
    assert cluster is not None
    return subprocess.run(
        [
            sys.executable, "-m", "tools.submit_run", "--stack", stack, "--name", name,
            "--hours", str(hours),
            "--pulumi", str(REPO / ".tools" / "engine" / "bin" / "pulumi"),
            "--kubectl", cluster.bins["kubectl"],
        ],
        cwd=PROJECT, env=environ(), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def run_verify(stack: str) -> subprocess.CompletedProcess[str]:
    """`make verify STACK=...` as after `source .tools/engine/env` (the engine's CLI)."""
    cluster = local_cluster.load()
    assert cluster is not None
    return subprocess.run(
        [
            sys.executable, "-m", "verify", "--stack", stack,
            "--pulumi", str(REPO / ".tools" / "engine" / "bin" / "pulumi"),
            "--kubectl", cluster.bins["kubectl"],
        ],
        cwd=PROJECT, env=environ(), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def completed_at(job: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(job["status"]["completionTime"])


def test_up_waited_for_every_gate_before_the_raycluster(b200: str) -> None:
    jobs = {
        j["metadata"]["labels"]["nemo-rl-gke/gate"]: j
        for j in items("jobs", "-n", "nemo-rl", "-l", "nemo-rl-gke/gate")
    }
    assert list(jobs) == sorted([*GATE_ORDER, "job-nccl"])
    for gate in [*GATE_ORDER, "job-nccl"]:
        conditions = {c["type"]: c["status"] for c in jobs[gate]["status"]["conditions"]}
        assert conditions.get("Complete") == "True", gate
    # One after another, then the RayCluster.
    starts = [datetime.fromisoformat(jobs[g]["status"]["startTime"]) for g in GATE_ORDER]
    ends = [completed_at(jobs[g]) for g in GATE_ORDER]
    for earlier_end, later_start in zip(ends, starts[1:], strict=False):
        assert earlier_end <= later_start
    raycluster = kube("get", "rayclusters.ray.io", "nemo-rl", "-n", "nemo-rl")
    created = datetime.fromisoformat(raycluster["metadata"]["creationTimestamp"])
    assert created >= ends[-1]
    # The job NCCL gate ran on the RayCluster once it existed.
    assert datetime.fromisoformat(jobs["job-nccl"]["status"]["startTime"]) >= created
    log = (ROOT / "logs" / "agent.log").read_text()
    assert "gate pod nemo-rl/verify-nccl-" in log
    assert "stand-in" in log


def test_make_verify_prints_every_measurement_against_its_threshold(b200: str) -> None:
    proc = run_verify(b200)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = {tuple(line.split()[:3]): line.split() for line in proc.stdout.splitlines()}
    assert rows[("nccl", "2", "nodes")]  # measured across both GPU nodes
    lines = proc.stdout.splitlines()
    busbw = next(line.split() for line in lines if "all_gather_busbw_8GiB" in line)
    assert busbw[-5:] == ["344.46", "GB/s", ">=", "292.8", "PASS"]
    # NCCL with the run's own image: 16 ranks of real Ray actors over both workers, in one
    # group over real sockets, gIB where the worker's setup gave NCCL its plugin.
    job_nccl = {line.split()[6]: line.split()[7:] for line in lines
                if line.startswith("job-nccl  ")}  # fmt: skip
    assert job_nccl["ranks_formed"] == ["16", "ranks", ">=", "16", "PASS"], proc.stdout
    assert job_nccl["ranks_on_gib"] == ["16", "ranks", ">=", "16", "PASS"], proc.stdout
    assert job_nccl["nodes_spanned"] == ["2", "nodes", ">=", "2", "PASS"], proc.stdout
    assert job_nccl["all_gather_busbw"][2:] == [">=", "292.8", "PASS"], proc.stdout
    storage = next(line.split() for line in lines if "write_throughput" in line)
    # Two nodes at the stand-in's 6 GB/s each, against half of 18000 GiB x 500 MB/s/TiB.
    assert storage[-5:] == ["12000", "MB/s", ">=", "4394", "PASS"]
    # One table row per GPU node (the verdict line under the table names the metric again).
    ecc_rows = [row for row in rows.values() if row[2:3] == ["gpus_with_uncorrected_ecc"]]
    gpu_nodes = {
        n["metadata"]["name"]
        for n in items("nodes", "-l", "cloud.google.com/gke-accelerator=nvidia-b200")
    }
    assert len(gpu_nodes) == 2
    assert {row[1] for row in ecc_rows} == gpu_nodes, proc.stdout
    assert len(ecc_rows) == 2, proc.stdout


def test_a_failing_gate_fails_the_update_with_its_measurement(b200: str) -> None:
    """The storage gate: it takes no GPU, so it can run again beside the RayCluster (a GPU
    gate would wait for the workers' GPUs; docs/runbook.md, Verify)."""
    env = environ()
    scenario = ROOT / SCENARIO_FILE
    slow = Scenario(fio_bw_bytes={"write": 1_000_000_000, "read": 3_000_000_000})
    scenario.write_text(slow.to_json(), encoding="utf-8")
    key = "nemo-rl-gke:verify.storage.minFraction"
    try:
        # A stricter threshold is a change to what the storage gate proves: it runs again.
        must(pulumi(b200, "config", "set", "--path", key, "0.6", env=env))
        failed = pulumi(b200, "up", "--yes", env=env)
        assert failed.returncode != 0
        output = failed.stdout + failed.stderr
        assert (
            "storage gate FAILED on 2 nodes: write_throughput 2000 MB/s (needs >= 5273)" in output
        ), output[-4000:]
        verdict = run_verify(b200)
        assert verdict.returncode == 1, verdict.stdout + verdict.stderr
        assert "FAIL" in verdict.stdout
        # The volume is fixed: the next up replaces the failed gate Job and passes.
        scenario.unlink()
        passed = pulumi(b200, "up", "--yes", env=env)
        assert passed.returncode == 0, (passed.stdout + passed.stderr)[-4000:]
        (storage,) = items("jobs", "-n", "nemo-rl", "-l", "nemo-rl-gke/gate=storage")
        assert {c["type"] for c in storage["status"]["conditions"]} >= {"Complete"}
        assert run_verify(b200).returncode == 0
    finally:
        scenario.unlink(missing_ok=True)
        pulumi(b200, "config", "rm", "--path", key, env=env)
        must(pulumi(b200, "up", "--yes", env=env))


def free_the_gpus(stack: str, env: dict[str, str]) -> None:
    """The README's way to let a GPU gate run again on a running platform, word for word:
    destroy the RayCluster (and what depends on it) with --target; the next up creates it
    after the gates."""
    readme = (PROJECT / "docs" / "runbook.md").read_text(encoding="utf-8")
    block = readme.split("pulumi destroy -s b200 --target-dependents", 1)[1].split("```", 1)[0]
    command = "pulumi destroy -s b200 --target-dependents" + block.split("\npulumi up", 1)[0]
    assert stack == "b200"
    path = f"{REPO / '.tools' / 'engine' / 'bin'}:{env['PATH']}"
    proc = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", command],
        cwd=PROJECT, env={**env, "PATH": path}, capture_output=True, text=True, check=False,
    )  # fmt: skip
    must(proc)


def test_a_gpu_gate_runs_again_once_the_raycluster_is_destroyed(b200: str) -> None:
    env = environ()
    scenario = ROOT / SCENARIO_FILE
    slow = Scenario(busbw_8g={"all_gather": 250.0, "all_reduce": 200.0})
    scenario.write_text(slow.to_json(), encoding="utf-8")
    key = "nemo-rl-gke:verify.nccl.minBusBandwidthGBPerSecond"
    try:
        must(pulumi(b200, "config", "set", "--path", key, "300", env=env))
        free_the_gpus(b200, env)
        assert kube("get", "rayclusters.ray.io", "-n", "nemo-rl")["items"] == []
        failed = pulumi(b200, "up", "--yes", env=env)
        output = failed.stdout + failed.stderr
        assert failed.returncode != 0, output[-4000:]
        assert (
            "nccl gate FAILED on 2 nodes: all_gather_busbw_8GiB 250.00 GB/s (needs >= 300)"
            in output
        ), output[-4000:]
        assert kube("get", "rayclusters.ray.io", "-n", "nemo-rl")["items"] == []
        scenario.unlink()
        passed = pulumi(b200, "up", "--yes", env=env)
        assert passed.returncode == 0, (passed.stdout + passed.stderr)[-4000:]
        (nccl,) = items("jobs", "-n", "nemo-rl", "-l", "nemo-rl-gke/gate=nccl")
        raycluster = kube("get", "rayclusters.ray.io", "nemo-rl", "-n", "nemo-rl")
        created = datetime.fromisoformat(raycluster["metadata"]["creationTimestamp"])
        assert created >= completed_at(nccl)
    finally:
        scenario.unlink(missing_ok=True)
        pulumi(b200, "config", "rm", "--path", key, env=env)
        free_the_gpus(b200, env)
        must(pulumi(b200, "up", "--yes", env=env))


def test_the_grpo_smoke_gates_the_rayjob(b200: str) -> None:
    """The smoke runs on the real RayCluster. With the driver's environment as it was before
    (what Ray gives a placed driver forwarded by NeMo RL), Ray fails the run in `ray.init` and
    `pulumi up` fails with the driver's own error; fixed, it passes and the RayJob follows."""
    env = environ()
    settings = {
        "nemo-rl-gke:verify.grpoSmoke.enabled": "true",
        "nemo-rl-gke:ray.job.enabled": "true",
    }
    for key, value in settings.items():
        must(pulumi(b200, "config", "set", "--path", key, value, env=env))
    must(pulumi(b200, "config", "set", "--secret", "nemo-rl-gke:hfToken", "hf_fake", env=env))
    try:
        wait_until("the Ray pods to be Ready", lambda: all(ready(p) for p in ray_pods()), 300)
        with program_changed(
            "planning/ray/driver.py", "f\"unset {' '.join(DRIVER_CLEAN_ENV)}\",", ""
        ):
            failed = pulumi(b200, "up", "--yes", env=env)
        output = failed.stdout + failed.stderr
        assert failed.returncode != 0, output[-4000:]
        assert (
            "grpo-smoke gate FAILED on 1 GPU: job_status FAILED name (needs = SUCCEEDED) - Job"
            " entrypoint command failed with exit code 1: ValueError: Failed to merge the Job's"
            " runtime env" in output
        ), output[-4000:]
        # The RayJob waits for the smoke: a failed smoke starts no training.
        assert kube("get", "rayjobs.ray.io", "-n", "nemo-rl")["items"] == []

        passed = pulumi(b200, "up", "--yes", env=env)
        assert passed.returncode == 0, (passed.stdout + passed.stderr)[-4000:]
        smokes = items("jobs", "-n", "nemo-rl", "-l", "nemo-rl-gke/gate=grpo-smoke")
        (smoke,) = [j for j in smokes if "Complete" in {c["type"] for c in j["status"].get(
            "conditions", [])}]  # fmt: skip
        (rayjob,) = kube("get", "rayjobs.ray.io", "-n", "nemo-rl")["items"]
        created = datetime.fromisoformat(rayjob["metadata"]["creationTimestamp"])
        assert created >= completed_at(smoke)
        log = (ROOT / "logs" / "agent.log").read_text()
        assert (
            "smoke gate: http://nemo-rl-head-svc.nemo-rl.svc.cluster.local:8265 is reached" in log
        )
        verdict = run_verify(b200)
        assert verdict.returncode == 0, verdict.stdout + verdict.stderr
        row = next(line.split() for line in verdict.stdout.splitlines()
                   if line.startswith("grpo-smoke") and "job_status" in line)  # fmt: skip
        assert row[-4:] == ["SUCCEEDED", "=", "SUCCEEDED", "PASS"], verdict.stdout
    finally:
        for key in settings:
            pulumi(b200, "config", "rm", "--path", key, env=env)
        pulumi(b200, "config", "rm", "nemo-rl-gke:hfToken", env=env)
        must(pulumi(b200, "up", "--yes", env=env))
    assert items("jobs", "-n", "nemo-rl", "-l", "nemo-rl-gke/gate=grpo-smoke") == []


def test_an_unchanged_up_runs_no_gate_again_and_applies_only_the_reviewed_plan(
    b200: str, tmp_path: Path
) -> None:
    """The deploy workflow's two commands on the real CLI: the preview saves its plan, `up
    --plan` applies it (an unchanged stack: no gate runs again). A change made after the
    review (the system pool's maximum) is refused by `up --plan` and changes nothing."""
    before = {
        j["metadata"]["uid"] for j in items("jobs", "-n", "nemo-rl", "-l", "nemo-rl-gke/gate")
    }
    plan = tmp_path / "plan.json"
    must(pulumi(b200, "preview", "--save-plan", str(plan)))
    must(pulumi(b200, "up", "--yes", "--plan", str(plan)))
    after = {j["metadata"]["uid"] for j in items("jobs", "-n", "nemo-rl", "-l", "nemo-rl-gke/gate")}
    assert after == before
    deployed = resources_by_urn(b200)
    stack_file = PROJECT / "Pulumi.b200.yaml"
    reviewed = stack_file.read_text()
    try:
        must(pulumi(b200, "config", "set", "--path", "nemo-rl-gke:cluster.systemPool.max", "4"))
        unreviewed = pulumi(b200, "up", "--yes", "--plan", str(plan))
    finally:
        stack_file.write_text(reviewed)
    assert unreviewed.returncode != 0
    assert "plan" in (unreviewed.stdout + unreviewed.stderr), unreviewed.stdout[-3000:]
    assert resources_by_urn(b200) == deployed


# --- the job queue: the real Kueue controller, topology-aware scheduling -------------------------

SUBBLOCK = "cloud.google.com/gce-topology-subblock"


QUOTA_WAIT_ON_TAS = ("WaitingForQuota", "NoMatchingFlavor")
"""Kueue 0.19.2's reasons for a workload that waits for GPUs another one holds, on a TAS flavor:
either, from one run to the next (measured: test_queued_runs_wait_for_gpus_and_topology read
NoMatchingFlavor in one run and WaitingForQuota in the next; the message names the quota)."""


def workloads() -> list[dict[str, Any]]:
    return items("workloads.kueue.x-k8s.io", "-n", "nemo-rl")


def workload_of(kind: str, name: str) -> dict[str, Any] | None:
    """The Kueue Workload a RayCluster or RayJob `name` is admitted as."""
    for workload in workloads():
        owners = workload["metadata"].get("ownerReferences") or []
        if any(o["kind"] == kind and o["name"] == name for o in owners):
            return workload
    return None


def condition(obj: dict[str, Any] | None, kind: str) -> dict[str, Any]:
    for found in (obj or {}).get("status", {}).get("conditions") or []:
        if found["type"] == kind:
            return dict(found)
    return {}


def run_pods(cluster_prefix: str, node_type: str = "worker") -> list[dict[str, Any]]:
    """The Ray pods of one node type of the RayClusters whose names start with the prefix."""
    return [
        p
        for p in items("pods", "-n", "nemo-rl", "-l", f"ray.io/node-type={node_type}")
        if p["metadata"]["labels"].get("ray.io/cluster", "").startswith(cluster_prefix)
    ]


def subblocks_of(pods: list[dict[str, Any]]) -> set[str]:
    nodes = {n["metadata"]["name"]: n for n in items("nodes")}
    return {nodes[p["spec"]["nodeName"]]["metadata"]["labels"][SUBBLOCK] for p in pods}


def running(pods: list[dict[str, Any]], count: int) -> bool:
    return len(pods) == count and all(p["status"].get("phase") == "Running" for p in pods)


def placed(pods: list[dict[str, Any]], count: int) -> bool:
    """`count` pods, each bound to a node by the scheduler."""
    return len(pods) == count and all(p["spec"].get("nodeName") for p in pods)


def test_kueue_runs_as_the_chart_installed_it(b200: str) -> None:
    """pulumi up installed the chart and created the queue through Kueue's own webhooks; the
    test bed runs the real controller with the chart's config and permissions."""
    log = (ROOT / "logs" / "agent.log").read_text()
    assert "started the real Kueue controller on this host" in log
    assert "permissions of ServiceAccount kueue-controller-manager" in log
    assert "webhooks of kueue-mutating-webhook-configuration at https://127.0.0.1:" in log
    assert "Kueue's controller is ready (/readyz): reporting its pod Ready" in log
    controller = (ROOT / "logs" / "kueue.log").read_text()
    assert "v0.19.2" in controller  # the pinned release, built from Go modules
    (deployment,) = items("deployments", "-n", "kueue-system")
    assert deployment["status"].get("readyReplicas") == 1
    hooks = kube("get", "mutatingwebhookconfiguration", "kueue-mutating-webhook-configuration")
    urls = {h["clientConfig"].get("url", "") for h in hooks["webhooks"]}
    assert all(u.startswith("https://127.0.0.1:") for u in urls), urls
    assert all(h["clientConfig"].get("caBundle") for h in hooks["webhooks"])  # Kueue injected it
    queue = kube("get", "clusterqueues.kueue.x-k8s.io", "nemo-rl-b200")
    assert condition(queue, "Active")["status"] == "True", queue["status"]
    usage = {
        r["name"]: r["total"]
        for f in queue["status"]["flavorsUsage"]
        if f["name"] == "gpu-b200"
        for r in f["resources"]
    }
    assert usage["nvidia.com/gpu"] == "16"  # the RayCluster holds every GPU of the pool
    local = kube("get", "localqueues.kueue.x-k8s.io", "nemo-rl", "-n", "nemo-rl")
    assert condition(local, "Active")["status"] == "True"
    (topology,) = items("topologies.kueue.x-k8s.io")
    assert [level["nodeLabel"] for level in topology["spec"]["levels"]][1] == SUBBLOCK
    classes = {c["metadata"]["name"]: c for c in items("priorityclasses")}
    assert classes["nemo-rl-training"]["value"] > classes["nemo-rl-verify"]["value"]
    # The webhooks answer over TLS from the test bed's CA: a queued RayJob is suspended by
    # Kueue's mutating webhook, and one that would keep its cluster is refused by validation.
    exported = json.loads(must(pulumi(b200, "stack", "output", "--json")).stdout)
    run = json.loads(exported["grpoQueuedRunManifest"])
    cluster = local_cluster.load()
    assert cluster is not None
    dry = local_cluster.kubectl(
        cluster, "create", "--dry-run=server", "-o", "json", "-f", "-", input=json.dumps(run)
    )
    assert json.loads(dry)["spec"]["suspend"] is True
    run["spec"]["shutdownAfterJobFinishes"] = False
    refused = subprocess.run(
        [cluster.binary("kubectl"), "--kubeconfig", str(local_cluster.KUBECONFIG), "create",
         "--dry-run=server", "-f", "-"],
        input=json.dumps(run), capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert refused.returncode != 0
    assert "shutdownAfterJobFinishes" in refused.stderr, refused.stderr


def test_kueue_admits_the_raycluster_whole_inside_one_subblock(b200: str) -> None:
    workload = workload_of("RayCluster", "nemo-rl")
    assert workload is not None, [w["metadata"]["name"] for w in workloads()]
    assert condition(workload, "Admitted")["status"] == "True", workload["status"]
    assignments = {a["name"]: a for a in workload["status"]["admission"]["podSetAssignments"]}
    assert set(assignments) == {"head", "gpu-workers"}  # one workload, head and workers
    assert assignments["head"]["flavors"] == {"cpu": "system", "memory": "system"}
    workers = assignments["gpu-workers"]
    assert workers["count"] == 2
    assert workers["flavors"]["nvidia.com/gpu"] == "gpu-b200"
    assert workers["topologyAssignment"]["levels"] == ["kubernetes.io/hostname"]
    pods = run_pods("nemo-rl")
    assert running(pods, 2)
    assert len(subblocks_of(pods)) == 1
    for pod in pods:
        # Kueue's ungater placed each pod on the node TAS chose, then the real scheduler bound it.
        assert not pod["spec"].get("schedulingGates")
        assert pod["spec"]["nodeSelector"]["kubernetes.io/hostname"] == pod["spec"]["nodeName"]
        assert pod["spec"]["priorityClassName"] == "nemo-rl-training"
        assert pod["metadata"]["labels"]["kueue.x-k8s.io/podset"] == "gpu-workers"


def create(manifest: dict[str, Any]) -> None:
    cluster = local_cluster.load()
    assert cluster is not None
    local_cluster.kubectl(cluster, "create", "-f", "-", input=json.dumps(manifest))


def queued_run(template: dict[str, Any], name: str, **spec: Any) -> dict[str, Any]:
    """The stack's queued-run manifest under another name (the README's second run)."""
    run: dict[str, Any] = json.loads(json.dumps(template))
    run["metadata"]["name"] = name
    run["spec"].update(spec)
    return run


def relabel(node: str, subblock: str) -> None:
    cluster = local_cluster.load()
    assert cluster is not None
    local_cluster.kubectl(cluster, "label", "node", node, "--overwrite", f"{SUBBLOCK}={subblock}")


def test_queued_runs_wait_for_gpus_and_topology(b200: str) -> None:
    """The README's second run, for real: with the RayCluster gone, run A is admitted whole in
    one sub-block; run B waits (not admitted, no pod) until A ends, then starts; with the pool
    split into two one-node sub-blocks a two-node run is not admitted while it requires a
    sub-block, and is admitted (across both) when a block will do."""
    env = environ()
    exported = json.loads(must(pulumi(b200, "stack", "output", "--json", env=env)).stdout)
    template = json.loads(exported["grpoQueuedRunManifest"])
    assert template["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "nemo-rl"
    free_the_gpus(b200, env)
    wait_until(
        "the RayCluster's workload to go", lambda: workload_of("RayCluster", "nemo-rl") is None
    )
    try:
        # This test is about admission and placement: a run's pods count once the real
        # scheduler has bound them (their Ray nodes start meanwhile; the RayJob tests above
        # prove Ray itself). Each run ends when the test deletes it.
        create(queued_run(template, "run-a", entrypoint="sleep 900"))
        wait_until("run A to be placed", lambda: placed(run_pods("run-a"), 2), timeout=240)
        assert len(subblocks_of(run_pods("run-a"))) == 1
        create(queued_run(template, "run-b", entrypoint="sleep 900"))

        def refused(run: str) -> str:
            """Why Kueue keeps `run` waiting ("" until it said so)."""
            reserved = condition(workload_of("RayJob", run), "QuotaReserved")
            return "" if reserved.get("status") != "False" else str(reserved.get("message", ""))

        # Kueue's message grows as it tries each pod set's flavors (first the head's): wait
        # until it names the quota.
        wait_until(
            "Kueue to say run B waits for quota",
            lambda: "insufficient unused quota for nvidia.com/gpu" in refused("run-b"),
        )
        # With UnadmittedWorkloadsObservability on, the reason is Kueue's own, not Pending, and
        # the stack's queueStatusCommand lists it beside the run. On a TAS flavor Kueue 0.19.2
        # says WaitingForQuota or NoMatchingFlavor for a run that waits for GPUs another run
        # holds (its flavor assigner marks a TAS flavor that cannot place the pods as no match,
        # pkg/scheduler/flavorassigner/flavorassigner.go); the message names the quota.
        reason = condition(workload_of("RayJob", "run-b"), "QuotaReserved")["reason"]
        assert reason in QUOTA_WAIT_ON_TAS, reason
        command = must(pulumi(b200, "stack", "output", "queueStatusCommand")).stdout.strip()
        listing = subprocess.run(
            ["bash", "-c", command.split(" && ")[0]],
            env={**local_cluster.local_environ(), "KUBECONFIG": str(local_cluster.KUBECONFIG)},
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        (line,) = [row for row in listing.stdout.splitlines() if row.startswith("run-b ")]
        assert "RayJob" in line, listing.stdout + listing.stderr
        # Kueue re-evaluates the waiting run: the listing may show the other of its two reasons.
        assert any(r in line for r in QUOTA_WAIT_ON_TAS), listing.stdout + listing.stderr
        assert "couldn't assign flavors" in line, listing.stdout + listing.stderr
        assert kube("get", "rayjobs.ray.io", "run-b", "-n", "nemo-rl")["spec"]["suspend"] is True
        assert run_pods("run-b", "head") == []
        assert run_pods("run-b") == []
        # Time in the queue is not time to start: a run with a 10 s start deadline (the stack's
        # is ray.job.preRunningDeadlineSeconds, 1 h) waits behind A for longer, and KubeRay
        # neither fails nor starts it while Kueue keeps it suspended.
        assert template["spec"]["preRunningDeadlineSeconds"] == 3600
        create(queued_run(template, "run-e", entrypoint="sleep 900", preRunningDeadlineSeconds=10))
        wait_until("run E's workload to queue", lambda: workload_of("RayJob", "run-e") is not None)
        time.sleep(20)
        assert condition(workload_of("RayJob", "run-e"), "Admitted").get("status") != "True"
        queued = kube("get", "rayjobs.ray.io", "run-e", "-n", "nemo-rl")
        assert queued["spec"]["suspend"] is True
        assert queued.get("status", {}).get("jobDeploymentStatus") != "Failed", queued["status"]
        assert queued.get("status", {}).get("reason") != "PreRunningDeadlineExceeded"
        assert run_pods("run-e") == []
        kubectl_delete("rayjobs.ray.io", "run-e")
        # A ends (deleted); its workload goes and B is admitted.
        kubectl_delete("rayjobs.ray.io", "run-a")
        wait_until(
            "run B to be admitted once A ended",
            lambda: condition(workload_of("RayJob", "run-b"), "Admitted").get("status") == "True",
            timeout=300,
        )
        wait_until("run B to be placed", lambda: placed(run_pods("run-b"), 2), timeout=240)
        assert len(subblocks_of(run_pods("run-b"))) == 1
        kubectl_delete("rayjobs.ray.io", "run-a", "run-b")
        wait_until(
            "runs A and B to go", lambda: not run_pods("run-") and not workloads(), timeout=180
        )

        # Two one-node sub-blocks (a layout the test chooses): a 2-node run fits no sub-block.
        relabel("b200-gpu-1", "block-0-sb-1")
        create(queued_run(template, "run-c", entrypoint="sleep 900"))
        wait_until("Kueue to say why run C waits", lambda: "topology" in refused("run-c").lower())
        # Not for quota (the pool is free): the topology has no sub-block of two nodes.
        assert "insufficient unused quota" not in refused("run-c"), refused("run-c")
        assert "topology" in refused("run-c").lower(), refused("run-c")
        assert run_pods("run-c") == []
        assert run_pods("run-c", "head") == []
        block = queued_run(template, "run-d", entrypoint="sleep 900")
        (group,) = block["spec"]["rayClusterSpec"]["workerGroupSpecs"]
        group["template"]["metadata"]["annotations"]["kueue.x-k8s.io/podset-required-topology"] = (
            "cloud.google.com/gce-topology-block"
        )
        kubectl_delete("rayjobs.ray.io", "run-c")
        create(block)
        wait_until(
            "run D (one block) to be placed", lambda: placed(run_pods("run-d"), 2), timeout=240
        )
        assert subblocks_of(run_pods("run-d")) == {"block-0-sb-0", "block-0-sb-1"}
    finally:
        kubectl_delete("rayjobs.ray.io", "run-a", "run-b", "run-c", "run-d", "run-e")
        relabel("b200-gpu-1", "block-0-sb-0")
        wait_until("the runs' workloads to go", lambda: not workloads(), timeout=120)
        must(pulumi(b200, "up", "--yes", env=env))
    wait_until(
        "the RayCluster to be admitted again",
        lambda: condition(workload_of("RayCluster", "nemo-rl"), "Admitted").get("status") == "True",
    )


def test_the_api_server_reads_a_schedule_as_preflight_does(b200: str) -> None:
    """Every schedule of the health config's tests, sent to the real API server (server-side
    dry run of a CronJob with a time zone, as the stack creates them): it takes what preflight
    takes and refuses what preflight refuses; the schedules preflight refuses beyond the API
    server (ones that never fire, periods that are not positive) are taken by it."""
    cluster = local_cluster.load()
    assert cluster is not None

    def server_takes(schedule: str) -> bool:
        manifest = {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": {"name": "schedule-probe", "namespace": "nemo-rl"},
            "spec": {
                "schedule": schedule,
                "timeZone": "Etc/UTC",
                "jobTemplate": {
                    "spec": {
                        "template": {
                            "spec": {
                                "restartPolicy": "Never",
                                "containers": [{"name": "c", "image": "busybox"}],
                            }
                        }
                    }
                },
            },
        }
        proc = subprocess.run(
            [cluster.binary("kubectl"), "--kubeconfig", str(local_cluster.KUBECONFIG),
             "create", "--dry-run=server", "-f", "-"],
            input=json.dumps(manifest), capture_output=True, text=True, check=False,
        )  # fmt: skip
        return proc.returncode == 0

    disagree = [s for s in ACCEPTED_SCHEDULES if not server_takes(s)]
    disagree += [s for s, _ in REFUSED_SCHEDULES if server_takes(s)]
    assert disagree == [], disagree
    for schedule in (*NEVER_FIRES, "@every -5m"):
        assert server_takes(schedule), schedule


def health_checks() -> dict[str, dict[str, Any]]:
    return {c["metadata"]["name"]: c for c in items("cronjobs", "-n", "nemo-rl", "-l", CHECK_LABEL)}


def job_pods(job: str) -> list[dict[str, Any]]:
    return items("pods", "-n", "nemo-rl", "-l", f"batch.kubernetes.io/job-name={job}")


def run_reporter(check: str, job: str, node: str, results: str, status: int, tmp: Path) -> Any:
    """verify/gates/health_report.py as the check pod's reporter runs it, here, with a real
    token of the reporter's account (its RBAC and the admission policy apply to it)."""
    cluster = local_cluster.load()
    assert cluster is not None
    report = tmp / "report"
    report.mkdir(parents=True, exist_ok=True)
    (report / "gate-results").write_text(results, encoding="utf-8")
    (report / "status").write_text(f"{status}\n", encoding="utf-8")
    token = local_cluster.kubectl(
        cluster, "create", "token", HEALTH_ACCOUNT, "-n", "nemo-rl", "--duration", "10m"
    )
    (tmp / "token").write_text(token.strip(), encoding="utf-8")
    env = {
        "PATH": os.environ["PATH"],
        "CHECK_NAME": check,
        "CHECK_HEADLINE": "all_gather_avg_busbw",
        "CHECK_PEERS": "1",
        "CHECK_JOB": job,
        "POD_NAMESPACE": "nemo-rl",
        "NODE_NAME": node,
        "REPORT_DIR": str(report),
        "TERMINATION_LOG": str(tmp / "termination-log"),
        "KUBE_API": f"https://{cluster.endpoint}",
        "KUBE_TOKEN_FILE": str(tmp / "token"),
        "KUBE_CA_FILE": str(Pki(ROOT / "pki").ca),
    }
    return subprocess.run(
        [sys.executable, str(report_script_path())],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def as_reporter(tmp: Path, method: str, path: str, body: Any = None) -> tuple[int, str]:
    """One API call with the reporter's token (written by run_reporter)."""
    cluster = local_cluster.load()
    assert cluster is not None
    request = urllib.request.Request(
        f"https://{cluster.endpoint}{path}",
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={
            "Authorization": f"Bearer {(tmp / 'token').read_text().strip()}",
            "Content-Type": "application/merge-patch+json",
        },
    )
    context = ssl.create_default_context(cafile=str(Pki(ROOT / "pki").ca))
    try:
        with urllib.request.urlopen(request, context=context, timeout=30) as answer:  # noqa: S310
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_health_checks_wait_for_free_gpus_and_report_through_the_real_api(
    b200: str, tmp_path: Path
) -> None:
    """The CronJob controller starts a check's Job; Kueue holds it while the RayCluster holds
    the GPUs (insufficient quota, no pod) and admits it once they are freed the README's way; a
    failing NCCL report labels and taints both nodes of the pair through the reporter's real
    token, and the admission policy refuses that token anything else; a tainted pair keeps
    the RayCluster off; the README's command clears the taint."""
    checks = health_checks()
    assert sorted(checks) == ["health-gpu-health", "health-nccl", "health-rdma"]
    assert {c["spec"]["concurrencyPolicy"] for c in checks.values()} == {"Forbid"}
    # A copy of the GPU-health check firing every minute: the CronJob controller makes its Job.
    now = json.loads(json.dumps(checks["health-gpu-health"]))
    now["metadata"] = {
        "name": "health-now",
        "namespace": "nemo-rl",
        "labels": now["metadata"]["labels"],
    }
    now["spec"]["schedule"] = "* * * * *"
    now.pop("status", None)
    cluster = local_cluster.load()
    assert cluster is not None
    ray_workload = workload_of("RayCluster", "nemo-rl")
    assert ray_workload is not None
    released = ray_workload["metadata"]["name"]
    nodes: list[str] = []
    try:
        create(now)

        def first_job() -> str:
            for job in items("jobs", "-n", "nemo-rl", "-l", f"{CHECK_LABEL}=gpu-health"):
                if any(
                    o["name"] == "health-now" for o in job["metadata"].get("ownerReferences") or []
                ):
                    return str(job["metadata"]["name"])
            return ""

        wait_until("the CronJob controller to start the check", lambda: first_job() != "", 150)
        job = first_job()
        local_cluster.kubectl(
            cluster, "patch", "cronjob", "health-now", "-n", "nemo-rl", "--type", "merge",
            "-p", '{"spec":{"suspend":true}}',
        )  # fmt: skip
        assert (
            kube("get", "job", job, "-n", "nemo-rl")["metadata"]["labels"][QUEUE_LABEL] == "nemo-rl"
        )
        wait_until(
            "Kueue to hold the check behind the RayCluster",
            lambda: (
                "insufficient unused quota for nvidia.com/gpu"
                in str(condition(workload_of("Job", job), "QuotaReserved").get("message", ""))
            ),
        )
        reserved = condition(workload_of("Job", job), "QuotaReserved")
        assert reserved["reason"] in QUOTA_WAIT_ON_TAS, reserved
        assert kube("get", "job", job, "-n", "nemo-rl")["spec"]["suspend"] is True
        assert job_pods(job) == []
        # The README's way to free the GPUs for a check: the RayCluster's workload inactive.
        set_active(released, active=False)
        wait_until(
            "the check to be admitted on the freed GPUs",
            lambda: condition(workload_of("Job", job), "Admitted").get("status") == "True",
            timeout=300,
        )
        wait_until("the check's pods on both GPU nodes", lambda: placed(job_pods(job), 2), 180)
        assert {p["spec"]["nodeName"] for p in job_pods(job)} == {"b200-gpu-0", "b200-gpu-1"}
        wait_until(
            "the check Job to end",
            lambda: (
                condition(kube("get", "job", job, "-n", "nemo-rl"), "Complete").get("status")
                == "True"
            ),
            timeout=180,
        )
        # The NCCL check, started by hand as the README shows: its pair on the free GPUs.
        local_cluster.kubectl(
            cluster, "create", "job", "--from=cronjob/health-nccl", "hc-nccl", "-n", "nemo-rl"
        )
        wait_until("the NCCL check's pair", lambda: placed(job_pods("hc-nccl"), 2), 300)
        pods = sorted(job_pods("hc-nccl"), key=lambda p: p["metadata"]["name"])
        nodes = sorted(p["spec"]["nodeName"] for p in pods)
        results = (
            "RESULT nccl all_gather_network gIB = gIB name PASS 2 nodes\n"
            "RESULT nccl all_gather_busbw_8GiB 250.00 >= 292.8 GB/s FAIL 2 nodes\n"
        )
        reported = run_reporter(
            "nccl", "hc-nccl", pods[0]["spec"]["nodeName"], results, 1, tmp_path
        )
        assert reported.returncode == 1, reported.stdout + reported.stderr
        assert "failed: all_gather_busbw_8GiB 250.00 GB/s (needs >= 292.8)" in reported.stdout
        for name in nodes:
            node = kube("get", "node", name)
            labels = node["metadata"]["labels"]
            assert labels[result_label("nccl")] == "fail", labels
            assert labels[metric_label("nccl")] == "all_gather_busbw_8GiB"
            assert labels[value_label("nccl")] == "250.00"
            assert {"key": taint_key("nccl"), "value": "failed", "effect": "NoSchedule"} in (
                node["spec"].get("taints") or []
            )
        # The same token may change nothing else of a node, and nothing but nodes.
        target = f"/api/v1/nodes/{nodes[0]}"
        code, text = as_reporter(tmp_path, "PATCH", target, {"metadata": {"labels": {"evil": "1"}}})
        assert code == 403, text
        assert "may change only health.nemo-rl-gke/ labels" in text, text
        code, text = as_reporter(tmp_path, "PATCH", target, {"spec": {"unschedulable": True}})
        assert (code, "may not change a node's annotations or spec" in text) == (403, True), text
        code, text = as_reporter(tmp_path, "GET", "/api/v1/namespaces/nemo-rl/secrets")
        assert code == 403, text
        # A tainted pair keeps the RayCluster off: back in the queue, Kueue finds no place.
        kubectl_delete("jobs", job, "hc-nccl")
        wait_until(
            "the checks' workloads to go",
            lambda: workload_of("Job", job) is None and workload_of("Job", "hc-nccl") is None,
        )
        set_active(released, active=True)

        def why_not() -> str:
            reserved = condition(workload_of("RayCluster", "nemo-rl"), "QuotaReserved")
            return "" if reserved.get("status") != "False" else str(reserved.get("message", ""))

        wait_until(
            "Kueue to keep the RayCluster off the tainted pair",
            lambda: "topology" in why_not().lower(),
            timeout=180,
        )
        assert "insufficient unused quota" not in why_not(), why_not()
        assert condition(workload_of("RayCluster", "nemo-rl"), "Admitted").get("status") != "True"
        # The README's command clears the taint: the RayCluster comes back.
        for name in nodes:
            local_cluster.kubectl(cluster, "taint", "nodes", name, f"{taint_key('nccl')}-")
    finally:
        for name in nodes:
            local_cluster.kubectl(
                cluster, "taint", "nodes", name, f"{taint_key('nccl')}-", check=False
            )
            local_cluster.kubectl(
                cluster, "label", "nodes", name, f"{result_label('nccl')}-",
                f"{metric_label('nccl')}-", f"{value_label('nccl')}-", f"{time_label('nccl')}-",
                check=False,
            )  # fmt: skip
        kubectl_delete("cronjobs", "health-now")
        kubectl_delete(
            "jobs",
            "hc-nccl",
            *[
                j["metadata"]["name"]
                for j in items("jobs", "-n", "nemo-rl", "-l", f"{CHECK_LABEL}=gpu-health")
            ],
        )
        set_active(released, active=True, check=False)
    wait_until(
        "the RayCluster to be admitted again",
        lambda: condition(workload_of("RayCluster", "nemo-rl"), "Admitted").get("status") == "True",
        timeout=300,
    )


def test_a_queued_run_waits_for_a_node_with_host_maintenance_scheduled(b200: str) -> None:
    """GKE's scheduled-maintenance label on one of the two GPU nodes: a two-node queued run is
    not admitted (Kueue's topology placement honours the workers' required node affinity) and
    has no pod, and is admitted and placed once the label goes (maintenance done); a run
    submitted with its expected length waits while the maintenance falls inside it and is
    placed once the maintenance moves after it."""
    env = environ()
    exported = json.loads(must(pulumi(b200, "stack", "output", "--json", env=env)).stdout)
    template = json.loads(exported["grpoQueuedRunManifest"])
    cluster = local_cluster.load()
    assert cluster is not None
    ray_workload = workload_of("RayCluster", "nemo-rl")
    assert ray_workload is not None
    released = ray_workload["metadata"]["name"]
    epoch = str(int(time.time()) + 3600)
    try:
        # The README's way to free the GPUs: the stack's RayCluster's workload inactive.
        set_active(released, active=False)
        wait_until("the RayCluster's workers to go", lambda: not run_pods("nemo-rl"), 180)
        local_cluster.kubectl(
            cluster, "label", "node", "b200-gpu-1", "--overwrite",
            f"{SCHEDULED_MAINTENANCE_LABEL}={epoch}",
        )  # fmt: skip
        create(queued_run(template, "run-m", entrypoint="sleep 900"))

        def why_not(run: str) -> str:
            reserved = condition(workload_of("RayJob", run), "QuotaReserved")
            return "" if reserved.get("status") != "False" else str(reserved.get("message", ""))

        wait_until(
            "Kueue to keep run M off the node about to go",
            lambda: "topology" in why_not("run-m").lower(),
        )
        assert "insufficient unused quota" not in why_not("run-m"), why_not("run-m")
        assert run_pods("run-m") == []
        local_cluster.kubectl(
            cluster, "label", "node", "b200-gpu-1", f"{SCHEDULED_MAINTENANCE_LABEL}-"
        )
        wait_until(
            "run M to be placed once the maintenance is over",
            lambda: placed(run_pods("run-m"), 2),
            300,
        )
        kubectl_delete("rayjobs.ray.io", "run-m")
        wait_until(
            "run M to go",
            lambda: workload_of("RayJob", "run-m") is None and not run_pods("run-m"),
            180,
        )
        # A run expected to last 2 hours, submitted with the README's command (the real CLI
        # reads the manifest, kubectl creates it): maintenance in 1 hour keeps it off too;
        # moved to 5 hours from now, after the run, the node is good enough for it (Kueue's
        # placement and the scheduler read the Gt term).
        local_cluster.kubectl(
            cluster, "label", "node", "b200-gpu-1", "--overwrite",
            f"{SCHEDULED_MAINTENANCE_LABEL}={epoch}",
        )  # fmt: skip
        submitted = submit_run(b200, "run-n", hours=2)
        assert submitted.returncode == 0, submitted.stderr
        assert "waits in the queue" in submitted.stdout

        wait_until(
            "Kueue to keep run N off the node whose maintenance falls inside it",
            lambda: "topology" in why_not("run-n").lower(),
        )
        assert run_pods("run-n") == []
        later = str(int(time.time()) + 5 * 3600)
        local_cluster.kubectl(
            cluster, "label", "node", "b200-gpu-1", "--overwrite",
            f"{SCHEDULED_MAINTENANCE_LABEL}={later}",
        )  # fmt: skip
        wait_until(
            "run N to be placed before the maintenance", lambda: placed(run_pods("run-n"), 2), 300
        )
    finally:
        local_cluster.kubectl(
            cluster, "label", "node", "b200-gpu-1", f"{SCHEDULED_MAINTENANCE_LABEL}-", check=False
        )
        kubectl_delete("rayjobs.ray.io", "run-m", "run-n")
        wait_until(
            "runs M and N's workloads to go",
            lambda: (
                workload_of("RayJob", "run-m") is None and workload_of("RayJob", "run-n") is None
            ),
        )
        set_active(released, active=True, check=False)
    wait_until(
        "the RayCluster to be admitted again",
        lambda: condition(workload_of("RayCluster", "nemo-rl"), "Admitted").get("status") == "True",
        timeout=300,
    )


def set_active(workload: str, *, active: bool, check: bool = True) -> None:
    """The README's way to free the GPUs a queued RayCluster holds (its Kueue workload made
    inactive: Kueue evicts it and its workers go), and to give them back."""
    cluster = local_cluster.load()
    assert cluster is not None
    local_cluster.kubectl(
        cluster, "patch", "workloads.kueue.x-k8s.io", workload, "-n", "nemo-rl",
        "--type", "merge", "-p", json.dumps({"spec": {"active": active}}), check=check,
    )  # fmt: skip


def kubectl_delete(kind: str, *names: str) -> None:
    cluster = local_cluster.load()
    assert cluster is not None
    local_cluster.kubectl(
        cluster, "delete", kind, "-n", "nemo-rl", "--ignore-not-found", "--wait=false", *names
    )


def test_a_plain_destroy_of_b200_is_stopped_by_protection(b200: str) -> None:
    before = len(state(b200))
    proc = pulumi(b200, "destroy", "--yes")
    assert proc.returncode != 0
    assert "protect" in (proc.stdout + proc.stderr).lower()
    assert len(state(b200)) == before
    assert kube("get", "namespace", "nemo-rl") is not None


def test_lustre_grows_past_the_api_server_s_resize_admission(b200: str) -> None:
    """The API server (PersistentVolumeClaimResize on by default) refuses to grow a claim with
    no expandable StorageClass of its class name: the claim keeps its created size while the
    instance and its PV grow, so the `up` passes. A shrink afterwards stops the preview, naming
    the key. Runs last before the teardown: the stack stays at the larger size."""
    env = environ()
    key = "nemo-rl-gke:lustre.capacityGib"
    must(pulumi(b200, "config", "set", "--path", key, "36000", env=env))
    grown = pulumi(b200, "up", "--yes", env=env)
    assert grown.returncode == 0, (grown.stdout + grown.stderr)[-4000:]
    (pv,) = items("pv")
    assert pv["spec"]["capacity"]["storage"] == "36000Gi"
    (claim,) = items("pvc", "-n", "nemo-rl")
    assert claim["spec"]["resources"]["requests"]["storage"] == "18000Gi"
    assert claim["status"]["phase"] == "Bound"
    must(pulumi(b200, "config", "set", "--path", key, "18000", env=env))
    try:
        shrunk = pulumi(b200, "preview", env=env)
        output = shrunk.stdout + shrunk.stderr
        assert shrunk.returncode != 0, output[-4000:]
        assert (
            "nemo-rl-gke:lustre.capacityGib: Managed Lustre capacity never shrinks:"
            " 36000 GiB -> 18000 GiB" in output
        ), output[-4000:]
    finally:
        must(pulumi(b200, "config", "set", "--path", key, "36000", env=env))


def test_the_readme_teardown_leaves_no_kubernetes_object_and_no_state(b200: str) -> None:
    """The README's teardown, as `make engine-down` runs it: every Kubernetes object is gone
    from the API server and the stack from the backend. The GCP deletions are the stand-in's
    (it deletes nothing real): this shows that the engine asks for them in an order the
    protection lets through, not that GCP would delete each resource."""
    down = must(make("engine-down", "STACK=b200"))
    assert "restored Pulumi.b200.yaml" in down.stdout
    assert (PROJECT / "Pulumi.b200.yaml").read_bytes() == (REPO / "Pulumi.b200.yaml").read_bytes()

    def gone() -> bool:
        return not any(
            items(kind, *scope)
            for kind, *scope in (
                ("namespaces", "-l", "app.kubernetes.io/part-of=nemo-rl-gke"),
                ("pods", "-A", "-l", "ray.io/cluster"),
                ("svc", "-A", "-l", "ray.io/cluster"),
                ("pv",),
                ("gkenetworkparamsets.networking.gke.io",),
                ("networks.networking.gke.io",),
                ("daemonsets", "-n", "kube-system"),
                ("clusterrolebindings", "-l", "app.kubernetes.io/part-of=nemo-rl-gke"),
                # Kueue: its CRDs (with every queue object), webhooks, PriorityClasses.
                ("crd", "-l", "app.kubernetes.io/name=kueue"),
                ("mutatingwebhookconfigurations", "-l", "app.kubernetes.io/name=kueue"),
                ("validatingwebhookconfigurations", "-l", "app.kubernetes.io/name=kueue"),
                ("priorityclasses", "-l", "app.kubernetes.io/part-of=nemo-rl-gke"),
            )
        )

    wait_until("the API server to hold no object of the stack", gone)
    # The destroy did not hang on Kueue's finalizers, and its controller went with its pod (the
    # agent's loop sees the Deployment gone a pass after the API server does).
    wait_until(
        "the agent to stop Kueue's controller",
        lambda: (
            "Kueue's controller Deployment is gone" in (ROOT / "logs" / "agent.log").read_text()
        ),
        timeout=60,
    )
    assert not Processes(ROOT).alive("kueue")
    assert not (STATE / ".pulumi" / "stacks" / "nemo-rl-gke" / "b200.json").exists()


def test_dev_runs_its_grpo_job_on_its_own_cluster_and_a_plain_destroy_leaves_no_object(
    cluster: None, tmp_path: Path
) -> None:
    """dev's GRPO run brings its own Ray cluster, which real Ray runs; a GKE upgrade applied to
    the running stack moves the control plane, then the system pool, then the GPU pool; dev is
    unprotected: a plain `pulumi destroy` goes through, and its Kubernetes objects leave the API
    server (its GCP resources are the stand-in's, which deletes nothing real)."""
    up = make("engine-up", "STACK=dev")
    assert up.returncode == 0, up.stdout[-6000:] + up.stderr[-3000:]
    (pv,) = items("pv")
    assert pv["spec"]["csi"]["driver"] == "gcsfuse.csi.storage.gke.io"
    assert pv["status"]["phase"] == "Bound"
    # Autoscaling from zero: no worker until a job asks for one (the operator, installed by
    # this same `up`, creates the head once it runs).
    wait_until("dev's Ray head", lambda: bool(ray_pods()))
    assert [p["metadata"]["labels"]["ray.io/node-type"] for p in ray_pods()] == ["head"]
    # The autoscaling head holds an API token (for Ray's autoscaler); the real API server's
    # ServiceAccount admission gives it to every container but the log sidecar, which has an
    # empty folder where the token would go.
    (head,) = ray_pods()
    mounts = {
        c["name"]: {m["name"] for m in c.get("volumeMounts", [])}
        for c in [*head["spec"]["initContainers"], *head["spec"]["containers"]]
    }
    tokens = {
        n for n, names in mounts.items() if any(m.startswith("kube-api-access") for m in names)
    }
    assert tokens == {"ray-head", "autoscaler"}, mounts

    # The run brings its own cluster of exactly its workers (the pool scales from zero); Ray
    # runs it there and KubeRay reports Ray's verdict.
    env = environ()
    must(pulumi("dev", "config", "set", "--path", "nemo-rl-gke:ray.job.enabled", "true", env=env))
    must(pulumi("dev", "up", "--yes", env=env))
    run = json.loads(must(pulumi("dev", "stack", "output", "--json", env=env)).stdout)["grpoRun"]
    job = wait_for_rayjob(run)
    assert job["spec"]["backoffLimit"] == 3  # a preempted Spot node: run again, resume
    assert job["spec"]["preRunningDeadlineSeconds"] == 3600  # the real operator took it
    # Its own cluster's dashboard wants KubeRay's token too: the operator's HTTPMode
    # submission and status polling went through with it.
    assert job["spec"]["rayClusterSpec"]["authOptions"] == {"mode": "token"}
    assert job["status"]["jobStatus"] == "SUCCEEDED", json.dumps(job["status"], indent=1)
    workers = run_workers(run)
    assert len(workers) == 2  # one L4 on each of the job cluster's two workers
    assert {w["pod"] for w in workers} == {
        p["metadata"]["name"]
        for p in ray_pods(cluster=job["status"]["rayClusterName"])
        if p["metadata"]["labels"]["ray.io/node-type"] == "worker"
    }
    for worker in workers:
        assert worker["gpu_ids"] == ["0"]
        assert worker["rdma_node"] is False
        assert "NCCL_NET" not in worker["nccl"]  # no gIB on L4
        assert (worker["nccl"]["NCCL_SOCKET_IFNAME"], worker["gloo_socket_ifname"]) == ("eth0",) * 2
    keeps_a_failed_runs_head(job)
    ships_ray_logs(run, job["status"]["rayClusterName"], [w["pod"] for w in workers])

    apply_an_upgrade_to_dev(env, tmp_path)

    down = must(make("engine-down", "STACK=dev"))
    assert "pulumi config set nemo-rl-gke:protect false" not in down.stdout  # plain destroy
    wait_until(
        "dev's objects to go",
        lambda: (
            not items("namespaces", "-l", "app.kubernetes.io/part-of=nemo-rl-gke")
            and not items("pv")
        ),
    )


def keeps_a_failed_runs_head(job: dict[str, Any]) -> None:
    """The real KubeRay operator takes the run's deletionRules: the succeeded run's cluster
    goes after a minute; the same RayJob failing (its entrypoint exits 3; the test's own
    retention of 30 s instead of a day) loses its GPU workers at once and keeps its head
    until the retention is over."""
    rules = job["spec"]["deletionStrategy"]["deletionRules"]
    assert "shutdownAfterJobFinishes" not in job["spec"]
    cluster = job["status"]["rayClusterName"]
    wait_until("the succeeded run's cluster to go", lambda: not ray_pods(cluster=cluster), 240)
    failing = {
        "apiVersion": job["apiVersion"],
        "kind": "RayJob",
        "metadata": {"name": "grpo-fails", "namespace": "nemo-rl"},
        "spec": {
            **{k: v for k, v in job["spec"].items() if k not in ("jobId", "suspend")},
            "entrypoint": "bash -c 'echo failing on purpose; exit 3'",
            "backoffLimit": 0,
            "deletionStrategy": {
                "deletionRules": [
                    {**r, "condition": {**r["condition"], "ttlSeconds": 30}}
                    if r["policy"] == "DeleteCluster" and r["condition"]["ttlSeconds"] > 60
                    else r
                    for r in rules
                ]
            },
        },
    }
    create(failing)
    try:
        failed = wait_for_rayjob("grpo-fails")
        assert failed["status"]["jobStatus"] == "FAILED", json.dumps(failed["status"], indent=1)
        kept = failed["status"]["rayClusterName"]

        def head_only() -> bool:
            pods = ray_pods(cluster=kept)
            return [p["metadata"]["labels"]["ray.io/node-type"] for p in pods] == ["head"]

        wait_until("the failed run's workers to go and its head to stay", head_only, 120)
        assert kube("get", "rayclusters.ray.io", kept, "-n", "nemo-rl") is not None
        time.sleep(10)
        assert head_only(), "the head went before its retention"
        wait_until(
            "the failed run's cluster to go after its retention",
            lambda: not ray_pods(cluster=kept),
            240,
        )
    finally:
        kubectl_delete("rayjobs.ray.io", "grpo-fails")


def apply_an_upgrade_to_dev(env: dict[str, str], tmp_path: Path) -> None:
    """`up` of the three keys of an upgrade on the running dev stack (GKE offers 1.36, as the
    stand-in's description says): the engine finishes the control plane before it touches the
    system pool, and the system pool before the GPU pool; each ends on the version asked."""
    offered = ["1.36.2-gke.1000", "1.35.8-gke.1036000"]
    described = json.loads(DEFAULT_FIXTURES.read_text())
    described["engineVersions"] = {
        "validMasterVersions": offered,
        "validNodeVersions": offered,
        "channelLatest": {"REGULAR": offered[0]},
    }
    description = tmp_path / "reservations.json"
    description.write_text(json.dumps(described))
    env = {
        **env,
        "NEMO_RL_GKE_STANDIN_RESERVATIONS": str(description),
        "PULUMI_DEBUG_COMMANDS": "true",  # --event-log is a debug flag of the CLI
    }
    for key, value in (
        ("cluster.minVersion", "1.36"),
        ("cluster.systemPool.version", offered[0]),
        ("gpu.version", offered[0]),
    ):
        must(pulumi("dev", "config", "set", "--path", f"nemo-rl-gke:{key}", value, env=env))
    log = tmp_path / "upgrade.jsonl"
    must(pulumi("dev", "up", "--yes", "--event-log", str(log), env=env))
    order: list[tuple[str, str]] = []
    for line in log.read_text().splitlines():
        event = json.loads(line) if line.strip() else {}
        for kind in ("resourcePreEvent", "resOutputsEvent"):
            if kind in event and event[kind]["metadata"]["op"] == "update":
                order.append((kind, event[kind]["metadata"]["urn"].rsplit("::", 1)[-1]))
    updated = [name for kind, name in order if kind == "resourcePreEvent"]
    assert {"gke-cluster", "system-pool", "gpu-pool"} <= set(updated), order
    assert order.index(("resOutputsEvent", "gke-cluster")) < order.index(
        ("resourcePreEvent", "system-pool")
    ), order
    assert order.index(("resOutputsEvent", "system-pool")) < order.index(
        ("resourcePreEvent", "gpu-pool")
    ), order
    by_name = {r["urn"].rsplit("::", 1)[-1]: r for r in state("dev")}
    assert by_name["gke-cluster"]["inputs"]["minMasterVersion"] == "1.36"
    assert by_name["system-pool"]["inputs"]["version"] == offered[0]
    assert by_name["gpu-pool"]["inputs"]["version"] == offered[0]
    must(pulumi("dev", "preview", "--expect-no-changes", env=env))


def test_flex_start_admits_a_run_once_queued_provisioning_has_its_nodes(
    cluster: None, tmp_path: Path
) -> None:
    """dev on flex-start with the queue: Kueue asks GKE's queued provisioning for the run's
    nodes (a ProvisioningRequest, class queued-provisioning.gke.io) and admits the run only when
    they are all there. No cluster autoscaler runs here: the test answers the request as GKE's
    would (Provisioned=True), and the API server and Kueue show the rest."""
    workspace: Workspace = make_workspace(tmp_path)
    on_the_local_cluster(workspace, local_cluster.local_environ(workspace.env()))
    config = dict(yaml.safe_load((PROJECT / "Pulumi.dev.yaml").read_text())["config"])
    config["nemo-rl-gke:gpu"] = {
        "type": "l4", "autoscaling": {"min": 0, "max": 2}, "capacity": "flex-start"
    }  # fmt: skip
    config["nemo-rl-gke:kueue"] = {"enabled": True, "chartPath": str(local_cluster.kueue_chart())}
    config["nemo-rl-gke:ray"] = {
        "chartPath": str(local_cluster.kuberay_chart()), "job": {"enabled": True, "steps": 1}
    }  # fmt: skip
    workspace.write_stack("dev", config)
    workspace.init("dev")
    try:
        up = workspace.up("dev")
        assert up.returncode == 0, up.text()
        # Judged in the first preview too (from what the queue component publishes).
        assert not [p for p in up.unjudged() if p.policy.startswith(("queue", "gpu-work"))]
        check = kube("get", "admissionchecks.kueue.x-k8s.io", "dws-prov")
        assert condition(check, "Active")["status"] == "True", check["status"]
        queue = kube("get", "clusterqueues.kueue.x-k8s.io", "nemo-rl-dev")
        assert queue["spec"]["admissionChecksStrategy"]["admissionChecks"][0]["name"] == "dws-prov"
        run = json.loads(
            workspace.pulumi("stack", "output", "grpoRun", "--json", "-s", "dev").stdout
        )
        wait_until("the run's workload", lambda: workload_of("RayJob", run) is not None)

        workload = workload_of("RayJob", run)
        assert workload is not None

        def requests() -> list[dict[str, Any]]:
            # Named <workload>-<admission check>-<attempt> (Kueue's provisioning controller).
            return [
                r
                for r in items("provisioningrequests.autoscaling.x-k8s.io", "-n", "nemo-rl")
                if r["metadata"]["name"].startswith(workload["metadata"]["name"])
            ]

        wait_until("Kueue's ProvisioningRequest", lambda: bool(requests()))
        (request,) = requests()
        assert request["spec"]["provisioningClassName"] == "queued-provisioning.gke.io"
        time.sleep(3)
        held = workload_of("RayJob", run)
        assert condition(held, "QuotaReserved")["status"] == "True", held
        assert condition(held, "Admitted").get("status") != "True", held
        assert run_pods(run) == []
        assert run_pods(run, "head") == []
        # What GKE does once every node of the request is there (test-bed action).
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        provisioned = {
            "status": {
                "conditions": [
                    {"type": "Accepted", "status": "True", "reason": "Accepted",
                     "message": "test bed", "lastTransitionTime": now},
                    {"type": "Provisioned", "status": "True", "reason": "Provisioned",
                     "message": "test bed: GKE's queued provisioning", "lastTransitionTime": now},
                ]
            }
        }  # fmt: skip
        cluster_ = local_cluster.load()
        assert cluster_ is not None
        local_cluster.kubectl(
            cluster_, "patch", "provisioningrequests.autoscaling.x-k8s.io",
            request["metadata"]["name"], "-n", "nemo-rl", "--subresource=status",
            "--type=merge", "-p", json.dumps(provisioned),
        )  # fmt: skip
        wait_until(
            "the run to be admitted once its nodes are provisioned",
            lambda: condition(workload_of("RayJob", run), "Admitted").get("status") == "True",
            timeout=90,
        )
        # Kueue marks the workload Admitted, then its job reconciler writes the pod sets' info
        # (the annotation below) into the RayJob as it lifts `suspend`: wait for that write.
        wait_until(
            "Kueue to start the admitted run",
            lambda: (
                kube("get", "rayjobs.ray.io", run, "-n", "nemo-rl")["spec"].get("suspend")
                is not True
            ),
            timeout=60,
        )
        job = kube("get", "rayjobs.ray.io", run, "-n", "nemo-rl")
        (group,) = job["spec"]["rayClusterSpec"]["workerGroupSpecs"]
        annotations = group["template"]["metadata"]["annotations"]
        assert (
            annotations["autoscaling.x-k8s.io/consume-provisioning-request"]
            == (request["metadata"]["name"])
        )
        assert annotations["autoscaling.x-k8s.io/provisioning-class-name"] == (
            "queued-provisioning.gke.io"
        )
        wait_until("the run's workers to be placed", lambda: placed(run_pods(run), 2), timeout=240)
    finally:
        down = workspace.pulumi("destroy", "--yes", "-s", "dev", check=False, timeout=900)
        assert down.returncode == 0, down.stdout[-3000:] + down.stderr[-3000:]
    wait_until(
        "the flex-start stack's objects to go",
        lambda: not items("crd", "-l", "app.kubernetes.io/name=kueue"),
    )


def test_a_chart_version_bump_reapplies_the_crds_before_the_upgrade(
    cluster: None, tmp_path: Path
) -> None:
    """Bumping kuberay_chart in the version table renames the CRD Job: the new Job (and its CRD
    apply) completes before the Helm release is upgraded. Shown with a second local chart."""
    workspace: Workspace = make_workspace(tmp_path)
    on_the_local_cluster(workspace, local_cluster.local_environ(workspace.env()))
    chart = local_cluster.kuberay_chart()
    workspace.init("dev")
    workspace.pulumi(
        "config", "set", "--path", "nemo-rl-gke:ray.chartPath", str(chart), "-s", "dev"
    )
    first = workspace.up("dev")
    assert first.returncode == 0, first.text()
    newer = tmp_path / "kuberay-operator-1.7.1"
    shutil.copytree(chart, newer)
    chart_yaml = newer / "Chart.yaml"
    chart_yaml.write_text(chart_yaml.read_text().replace("version: 1.7.0", "version: 1.7.1"))
    versions = workspace.root / "planning" / "versions.py"
    text = versions.read_text()
    pinned = '    kuberay_chart=Pin(\n        "1.7.0",'
    assert pinned in text
    versions.write_text(text.replace(pinned, pinned.replace("1.7.0", "1.7.1")))
    workspace.pulumi(
        "config", "set", "--path", "nemo-rl-gke:ray.chartPath", str(newer), "-s", "dev"
    )
    try:
        second = workspace.up("dev")
        assert second.returncode == 0, second.text()
        order = [
            (s.op, s.name) for s in second.steps if s.name in ("kuberay-crds", "kuberay-release")
        ]
        # The Job is replaced (new name) before the release is updated.
        assert order.index(("create-replacement", "kuberay-crds")) < order.index(
            ("update", "kuberay-release")
        ), order
        (job,) = items("jobs", "-n", "kuberay-system")
        assert job["metadata"]["name"] == "kuberay-crds-v1-7-1"
        assert (
            "Job kuberay-crds-v1-7-1 does not run under kwok"
            in (ROOT / "logs" / "agent.log").read_text()
        )
        releases = items("secrets", "-n", "kuberay-system", "-l", "owner=helm,status=deployed")
        assert [r["metadata"]["labels"]["version"] for r in releases] == ["2"]
    finally:
        workspace.pulumi("destroy", "--yes", "-s", "dev", check=False)


def claims_of(pod: dict[str, Any]) -> list[dict[str, Any]]:
    """The ResourceClaims made for a pod from its templates (its status names them)."""
    names = [s["resourceClaimName"] for s in pod.get("status", {}).get("resourceClaimStatuses", [])]
    namespace = pod["metadata"]["namespace"]
    return [c for c in (kube("get", "resourceclaims", "-n", namespace, n) for n in names) if c]


def scheduling_events(pod: str, namespace: str) -> str:
    events = items("events", "-n", namespace, "--field-selector", f"involvedObject.name={pod}")
    return " | ".join(e.get("message", "") for e in events if e.get("reason") == "FailedScheduling")


def test_b200_on_dranet_claims_its_nics_instead_of_networks(cluster: None) -> None:
    """`pulumi up -s b200` with network.rdma dranet brings up the same platform with DRA claims
    instead of networks: the real API server takes the claim template, the real scheduler's DRA
    plugin allocates every worker's and RDMA gate's claim from the NICs the test bed publishes
    (a stand-in for GKE's driver), and the real Kueue counts the claimed NICs against the
    queue's quota. Claims no node can satisfy wait at the scheduler with its reason; a malformed
    one is refused by the API server; Kueue refuses Cluster Toolkit's `allocationMode: All`."""
    stack_file = PROJECT / "Pulumi.b200.yaml"
    data = yaml.safe_load(stack_file.read_text())
    data["config"]["nemo-rl-gke:network"]["rdma"] = "dranet"
    stack_file.write_text(yaml.safe_dump(data, sort_keys=False))
    up = make("engine-up", "STACK=b200")
    try:
        assert up.returncode == 0, up.stdout[-6000:] + up.stderr[-3000:]
        assert "STAND-IN for GKE's networking DRA driver" in up.stdout
        assert not items("networks.networking.gke.io")
        assert not items("gkenetworkparamsets.networking.gke.io")
        template = kube("get", "resourceclaimtemplates", "-n", "nemo-rl", "default-rdma")
        (request,) = template["spec"]["spec"]["devices"]["requests"]
        assert request["exactly"]["count"] == 8

        # The RDMA gates ran on claimed NICs, one pod per node (their Jobs succeeded: up waited).
        for gate in ("rdma", "nccl"):
            pods = items("pods", "-n", "nemo-rl", "-l", f"nemo-rl-gke/gate={gate}")
            assert len(pods) == 2, gate
            for pod in pods:
                assert pod["status"]["phase"] == "Succeeded", (gate, pod["status"])
                assert pod["spec"]["resourceClaims"][0]["resourceClaimTemplateName"] == (
                    "default-rdma"
                )

        # Every Ray worker holds 8 NICs of its own node, allocated by the real scheduler.
        workers = [p for p in ray_pods() if p["metadata"]["labels"]["ray.io/node-type"] == "worker"]
        assert len(workers) == 2
        for worker in workers:
            (claim,) = claims_of(worker)
            results = claim["status"]["allocation"]["devices"]["results"]
            assert len(results) == 8
            assert {(r["driver"], r["pool"]) for r in results} == {
                ("dra.net", worker["spec"]["nodeName"])
            }
            assert [r["uid"] for r in claim["status"]["reservedFor"]] == [worker["metadata"]["uid"]]

        # Kueue counted the claimed NICs into the mapped resource when it admitted the cluster.
        admitted = workload_of("RayCluster", "nemo-rl")
        assert admitted is not None
        usage = {
            a["name"]: a["resourceUsage"]
            for a in admitted["status"]["admission"]["podSetAssignments"]
        }
        assert usage["gpu-workers"]["rdma-nics"] == "16", usage
        assert "rdma-nics" not in usage["head"], usage

        # Claims the nodes cannot satisfy are not refused by the API server: they wait at the
        # scheduler, which says why (preflight refuses the first; no stack can write the second).
        for name, spec in (
            ("over", {"deviceClassName": "mrdma.google.com", "count": 9}),
            ("wrong-class", {"deviceClassName": "mrdma.example.com", "count": 8}),
        ):
            claim_template = {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaimTemplate",
                "metadata": {"name": f"probe-{name}", "namespace": "default"},
                "spec": {
                    "spec": {
                        "devices": {
                            "requests": [
                                {
                                    "name": "req-mrdma",
                                    "exactly": {"allocationMode": "ExactCount", **spec},
                                }
                            ]
                        }
                    }
                },
            }
            create(claim_template)
            create(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": f"probe-{name}", "namespace": "default"},
                    "spec": {
                        "nodeSelector": {"cloud.google.com/gke-accelerator": "nvidia-b200"},
                        "tolerations": [{"operator": "Exists"}],
                        "resourceClaims": [
                            {"name": "rdma", "resourceClaimTemplateName": f"probe-{name}"}
                        ],
                        "containers": [
                            {
                                "name": "c",
                                "image": "busybox",
                                "resources": {"claims": [{"name": "rdma"}]},
                            }
                        ],
                    },
                }
            )
        wait_until(
            "the scheduler to refuse the claim over the node's NICs",
            lambda: "cannot allocate all claims" in scheduling_events("probe-over", "default"),
            timeout=60,
        )
        wait_until(
            "the scheduler to refuse the claim on a class that does not exist",
            lambda: "does not exist" in scheduling_events("probe-wrong-class", "default"),
            timeout=60,
        )
        malformed = json.loads(json.dumps(template))
        malformed["metadata"] = {"name": "probe-malformed", "namespace": "default"}
        malformed["spec"]["spec"]["devices"]["requests"][0]["name"] = "Req_MRDMA"
        cluster_ = local_cluster.load()
        assert cluster_ is not None
        kubectl = [cluster_.binary("kubectl"), "--kubeconfig", str(local_cluster.KUBECONFIG)]
        refused = subprocess.run(
            [*kubectl, "create", "-f", "-"],
            input=json.dumps(malformed), capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert refused.returncode != 0
        assert "requests[0].name: Invalid value" in refused.stderr, refused.stderr

        # Kueue 0.19 refuses a queued pod set whose claim asks for all devices (why ExactCount).
        every = json.loads(json.dumps(template))
        every["metadata"] = {"name": "probe-all", "namespace": "nemo-rl"}
        every["spec"]["spec"]["devices"]["requests"][0]["exactly"] = {
            "deviceClassName": "mrdma.google.com",
            "allocationMode": "All",
        }
        create(every)
        manifest = json.loads(
            must(pulumi("b200", "stack", "output", "grpoQueuedRunManifest")).stdout
        )
        probe = queued_run(manifest, "probe-all")
        worker_spec = probe["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"]["spec"]
        worker_spec["resourceClaims"][0]["resourceClaimTemplateName"] = "probe-all"
        create(probe)

        def refused_all() -> bool:
            workload = workload_of("RayJob", "probe-all")
            return workload is not None and "AllocationMode 'All' is not supported" in json.dumps(
                workload.get("status", {})
            )

        wait_until("Kueue to refuse allocationMode All", refused_all, timeout=60)
    finally:
        cluster_ = local_cluster.load()
        if cluster_ is not None:
            local_cluster.kubectl(
                cluster_, "delete", "rayjobs.ray.io", "-n", "nemo-rl", "probe-all",
                "--ignore-not-found", "--wait=false", check=False,
            )  # fmt: skip
            local_cluster.kubectl(
                cluster_, "delete", "pods,resourceclaimtemplates", "-n", "default",
                "probe-over", "probe-wrong-class", "--ignore-not-found", "--wait=false",
                check=False,
            )  # fmt: skip
        down = make("engine-down", "STACK=b200")
    assert down.returncode == 0, down.stdout[-4000:]
    wait_until(
        "the claim template and the workers' claims to go",
        lambda: (
            not items("resourceclaimtemplates", "-A")
            or all(
                t["metadata"]["namespace"] == "default"
                for t in items("resourceclaimtemplates", "-A")
            )
        ),
    )
