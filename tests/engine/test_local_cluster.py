"""The Kubernetes half for real: `pulumi up` and `destroy` against a local control plane.

Real: kube-apiserver, controller-manager and scheduler (v1.36.3), etcd, the pulumi-kubernetes
provider and its awaits, Helm (inside the provider) installing the local KubeRay chart, and
the KubeRay operator reconciling the RayCluster. Stand-ins: kwok's nodes and pods (no
container runs), the GCP provider (it hands out this API server as the cluster endpoint) and
gke-gcloud-auth-plugin. The tests use the commands anyone can run: `make local-cluster`,
`make engine-up STACK=...`, `make engine-down STACK=...`, `make local-cluster-down`. They run in
this checkout (like a user), in order, and restore every stack file they touch.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from planning.verify import GATE_ORDER
from testbed import local_cluster
from testbed.engine import STATE
from testbed.engine_stack import environ
from testbed.gate_pods import SCENARIO_FILE
from testbed.gate_standins import Scenario
from testbed.gobuild import cache_root
from testbed.processes import Processes
from tests.engine.realcli import REPO, Events, Workspace, make_workspace

ROOT = local_cluster.ROOT


def make(*args: str, timeout: float = 1500) -> subprocess.CompletedProcess[str]:
    """`make ARGS` in this checkout, as a user runs it."""
    return subprocess.run(
        ["make", *args], cwd=REPO, capture_output=True, text=True, timeout=timeout, check=False
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
    """A real `pulumi ARGS -s STACK` in this checkout, as after `source .tools/engine/env`."""
    return subprocess.run(
        [
            str(REPO / ".tools" / "engine" / "bin" / "pulumi"),
            *args,
            "-s",
            stack,
            "--non-interactive",
        ],
        cwd=REPO,
        env=env or environ(),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
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
    """Every live process running a binary of the test bed's build cache."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            exe = os.readlink(proc / "exe")
        except OSError:
            continue
        if exe.startswith(str(cache_root() / "go-builds")):
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


@pytest.fixture(scope="module")
def cluster(engine: None) -> Iterator[None]:
    """`make local-cluster` for the module; `make local-cluster-down` after, nothing left over."""
    must(make("local-cluster", "STACK=b200"))
    try:
        yield
    finally:
        for stack in ("b200", "dev"):
            make("engine-down", f"STACK={stack}")
        down = must(make("local-cluster-down"))
        assert "stopped" in down.stdout or "killed" in down.stdout
        assert our_processes() == [], "a test bed process outlived the run"
        assert gate_scripts_running() == [], "a gate script outlived the run"
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


def test_kuberay_reconciles_the_raycluster_onto_the_right_nodes(b200: str) -> None:
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
        assert generated.startswith("ray start")
        assert '--resources="{\\"nemo_rl_gib\\": 1}"' in generated
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
    raycluster = kube("get", "rayclusters.ray.io", "nemo-rl", "-n", "nemo-rl")
    assert raycluster["status"]["state"] == "ready"


def test_no_perpetual_diff_after_up_and_after_refresh(b200: str) -> None:
    must(pulumi(b200, "preview", "--expect-no-changes"))
    must(pulumi(b200, "refresh", "--yes"))
    must(pulumi(b200, "preview", "--expect-no-changes"))


def test_a_changed_kubeconfig_replaces_no_kubernetes_object(b200: str, tmp_path: Path) -> None:
    """The cluster's endpoint changes form (localhost instead of 127.0.0.1, as after an IP
    rotation): the kubeconfig changes, the provider is updated, nothing is replaced."""
    cluster = local_cluster.load()
    assert cluster is not None
    env = environ()
    env["NEMO_RL_GKE_STANDIN_ENDPOINT"] = f"localhost:{cluster.api_port}"
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


def test_kuberay_accepts_the_grpo_rayjob(b200: str) -> None:
    env = environ()
    must(pulumi(b200, "config", "set", "--path", "nemo-rl-gke:ray.job.enabled", "true", env=env))
    must(
        pulumi(
            b200, "config", "set", "--secret", "nemo-rl-gke:hfToken", "hf_fake_not_real", env=env
        )
    )
    try:
        must(pulumi(b200, "up", "--yes", env=env))

        run = json.loads(must(pulumi(b200, "stack", "output", "--json", env=env)).stdout)["grpoRun"]

        def reconciled() -> bool:
            job = kube("get", "rayjobs.ray.io", run, "-n", "nemo-rl")
            return bool(job and job.get("status", {}).get("jobDeploymentStatus"))

        wait_until("KubeRay to take up the RayJob", reconciled, timeout=60)
        job = kube("get", "rayjobs.ray.io", run, "-n", "nemo-rl")
        assert job["metadata"]["annotations"]["nemo-rl-gke/checkpoint-dir"].startswith(
            f"/data/nemo-rl/runs/{run}/"
        )
        assert "examples/run_grpo.py" in job["spec"]["entrypoint"]
        assert "hf_fake_not_real" not in json.dumps(job)
    finally:
        must(
            pulumi(b200, "config", "set", "--path", "nemo-rl-gke:ray.job.enabled", "false", env=env)
        )
        must(pulumi(b200, "config", "rm", "nemo-rl-gke:hfToken", env=env))
        must(pulumi(b200, "up", "--yes", env=env))
    assert kube("get", "rayjobs.ray.io", "-n", "nemo-rl")["items"] == []


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
        cwd=REPO, env=environ(), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def completed_at(job: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(job["status"]["completionTime"])


def test_up_waited_for_every_gate_before_the_raycluster(b200: str) -> None:
    jobs = {
        j["metadata"]["labels"]["nemo-rl-gke/gate"]: j
        for j in items("jobs", "-n", "nemo-rl", "-l", "nemo-rl-gke/gate")
    }
    assert list(jobs) == sorted(GATE_ORDER)
    for gate in GATE_ORDER:
        conditions = {c["type"]: c["status"] for c in jobs[gate]["status"]["conditions"]}
        assert conditions.get("Complete") == "True", gate
    # One after another, then the RayCluster.
    starts = [datetime.fromisoformat(jobs[g]["status"]["startTime"]) for g in GATE_ORDER]
    ends = [completed_at(jobs[g]) for g in GATE_ORDER]
    for earlier_end, later_start in zip(ends, starts[1:], strict=False):
        assert earlier_end <= later_start
    raycluster = kube("get", "rayclusters.ray.io", "nemo-rl", "-n", "nemo-rl")
    assert datetime.fromisoformat(raycluster["metadata"]["creationTimestamp"]) >= ends[-1]
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
    gate would wait for the workers' GPUs; README, Verify)."""
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
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = readme.split("pulumi destroy -s b200 --target-dependents", 1)[1].split("```", 1)[0]
    command = "pulumi destroy -s b200 --target-dependents" + block.split("\npulumi up", 1)[0]
    assert stack == "b200"
    path = f"{REPO / '.tools' / 'engine' / 'bin'}:{env['PATH']}"
    proc = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", command],
        cwd=REPO, env={**env, "PATH": path}, capture_output=True, text=True, check=False,
    )  # fmt: skip
    must(proc)


def test_a_gpu_gate_runs_again_once_the_raycluster_is_destroyed(b200: str) -> None:
    env = environ()
    scenario = ROOT / SCENARIO_FILE
    slow = Scenario(busbw_8g={"all_gather": 250.0, "all_reduce": 200.0})
    scenario.write_text(slow.to_json(), encoding="utf-8")
    key = "nemo-rl-gke:verify.nccl.minBusBandwidthGbps"
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
    env = environ()
    scenario = ROOT / SCENARIO_FILE
    failing = Scenario(smoke={"status": "FAILED", "message": "ResourceInsufficientError"})
    settings = {
        "nemo-rl-gke:verify.grpoSmoke.enabled": "true",
        "nemo-rl-gke:ray.job.enabled": "true",
    }
    for key, value in settings.items():
        must(pulumi(b200, "config", "set", "--path", key, value, env=env))
    must(pulumi(b200, "config", "set", "--secret", "nemo-rl-gke:hfToken", "hf_fake", env=env))
    scenario.write_text(failing.to_json(), encoding="utf-8")
    try:
        failed = pulumi(b200, "up", "--yes", env=env)
        output = failed.stdout + failed.stderr
        assert failed.returncode != 0, output[-4000:]
        assert (
            "grpo-smoke gate FAILED on 1 GPU: job_status FAILED name (needs = SUCCEEDED)"
            " - ResourceInsufficientError" in output
        ), output[-4000:]
        # The RayJob waits for the smoke: a failed smoke starts no training.
        assert kube("get", "rayjobs.ray.io", "-n", "nemo-rl")["items"] == []

        scenario.unlink()
        passed = pulumi(b200, "up", "--yes", env=env)
        assert passed.returncode == 0, (passed.stdout + passed.stderr)[-4000:]
        (smoke,) = items("jobs", "-n", "nemo-rl", "-l", "nemo-rl-gke/gate=grpo-smoke")
        assert {c["type"] for c in smoke["status"]["conditions"]} >= {"Complete"}
        (rayjob,) = kube("get", "rayjobs.ray.io", "-n", "nemo-rl")["items"]
        created = datetime.fromisoformat(rayjob["metadata"]["creationTimestamp"])
        assert created >= completed_at(smoke)
        log = (ROOT / "logs" / "agent.log").read_text()
        assert "smoke gate: nemo-rl-head-svc exists; its Ray dashboard is a stand-in" in log
        verdict = run_verify(b200)
        assert verdict.returncode == 0, verdict.stdout + verdict.stderr
        row = next(line.split() for line in verdict.stdout.splitlines()
                   if line.startswith("grpo-smoke") and "job_status" in line)  # fmt: skip
        assert row[-4:] == ["SUCCEEDED", "=", "SUCCEEDED", "PASS"], verdict.stdout
    finally:
        scenario.unlink(missing_ok=True)
        for key in settings:
            pulumi(b200, "config", "rm", "--path", key, env=env)
        pulumi(b200, "config", "rm", "nemo-rl-gke:hfToken", env=env)
        must(pulumi(b200, "up", "--yes", env=env))
    assert items("jobs", "-n", "nemo-rl", "-l", "nemo-rl-gke/gate=grpo-smoke") == []


def test_an_unchanged_up_runs_no_gate_again(b200: str) -> None:
    before = {
        j["metadata"]["uid"] for j in items("jobs", "-n", "nemo-rl", "-l", "nemo-rl-gke/gate")
    }
    must(pulumi(b200, "up", "--yes"))
    after = {j["metadata"]["uid"] for j in items("jobs", "-n", "nemo-rl", "-l", "nemo-rl-gke/gate")}
    assert after == before


# --- the job queue: the real Kueue controller, topology-aware scheduling -------------------------

SUBBLOCK = "cloud.google.com/gce-topology-subblock"


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


def ray_pods(cluster_prefix: str, node_type: str = "worker") -> list[dict[str, Any]]:
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
    pods = ray_pods("nemo-rl")
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
        # Run A ends by itself: no Ray runs under kwok, so KubeRay fails it at its deadline.
        # (and its cluster goes at once, instead of the 60 s the manifest keeps it for logs).
        create(queued_run(template, "run-a", activeDeadlineSeconds=30, ttlSecondsAfterFinished=0))
        wait_until("run A to run", lambda: running(ray_pods("run-a"), 2), timeout=90)
        assert len(subblocks_of(ray_pods("run-a"))) == 1
        create(queued_run(template, "run-b"))

        def refused(run: str) -> str:
            """Why Kueue keeps `run` waiting ("" until it said so)."""
            reserved = condition(workload_of("RayJob", run), "QuotaReserved")
            return "" if reserved.get("status") != "False" else str(reserved.get("message", ""))

        wait_until("Kueue to say why run B waits", lambda: bool(refused("run-b")))
        assert "insufficient unused quota" in refused("run-b"), refused("run-b")
        assert kube("get", "rayjobs.ray.io", "run-b", "-n", "nemo-rl")["spec"]["suspend"] is True
        assert ray_pods("run-b", "head") == []
        assert ray_pods("run-b") == []
        # A ends: KubeRay fails it at the deadline and deletes its cluster; B is admitted.
        wait_until(
            "run B to be admitted once A ended",
            lambda: condition(workload_of("RayJob", "run-b"), "Admitted").get("status") == "True",
            timeout=120,
        )
        ended = kube("get", "rayjobs.ray.io", "run-a", "-n", "nemo-rl")
        assert ended["status"]["jobDeploymentStatus"] == "Failed", ended["status"]
        assert ended["status"].get("reason") == "DeadlineExceeded", ended["status"]
        wait_until("run B to run", lambda: running(ray_pods("run-b"), 2), timeout=120)
        assert len(subblocks_of(ray_pods("run-b"))) == 1
        kubectl_delete("rayjobs.ray.io", "run-a", "run-b")
        wait_until("runs A and B to go", lambda: not ray_pods("run-") and not workloads())

        # Two one-node sub-blocks (a layout the test chooses): a 2-node run fits no sub-block.
        relabel("b200-gpu-1", "block-0-sb-1")
        create(queued_run(template, "run-c"))
        wait_until("Kueue to say why run C waits", lambda: bool(refused("run-c")))
        # Not for quota (the pool is free): the topology has no sub-block of two nodes.
        assert "insufficient unused quota" not in refused("run-c"), refused("run-c")
        assert "topology" in refused("run-c").lower(), refused("run-c")
        assert ray_pods("run-c") == []
        assert ray_pods("run-c", "head") == []
        block = queued_run(template, "run-d")
        (group,) = block["spec"]["rayClusterSpec"]["workerGroupSpecs"]
        group["template"]["metadata"]["annotations"]["kueue.x-k8s.io/podset-required-topology"] = (
            "cloud.google.com/gce-topology-block"
        )
        kubectl_delete("rayjobs.ray.io", "run-c")
        create(block)
        wait_until("run D (one block) to run", lambda: running(ray_pods("run-d"), 2), timeout=90)
        assert subblocks_of(ray_pods("run-d")) == {"block-0-sb-0", "block-0-sb-1"}
    finally:
        kubectl_delete("rayjobs.ray.io", "run-a", "run-b", "run-c", "run-d")
        relabel("b200-gpu-1", "block-0-sb-0")
        wait_until("the runs' workloads to go", lambda: not workloads(), timeout=120)
        must(pulumi(b200, "up", "--yes", env=env))
    wait_until(
        "the RayCluster to be admitted again",
        lambda: condition(workload_of("RayCluster", "nemo-rl"), "Admitted").get("status") == "True",
    )


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


def test_the_readme_teardown_removes_everything(b200: str) -> None:
    down = must(make("engine-down", "STACK=b200"))
    assert "restored Pulumi.b200.yaml" in down.stdout
    assert (
        subprocess.run(
            ["git", "diff", "--quiet", "--", "Pulumi.b200.yaml"], cwd=REPO, check=False
        ).returncode
        == 0
    )

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
    # The destroy did not hang on Kueue's finalizers, and its controller went with its pod.
    assert "Kueue's controller Deployment is gone" in (ROOT / "logs" / "agent.log").read_text()
    assert not Processes(ROOT).alive("kueue")
    assert not (STATE / ".pulumi" / "stacks" / "nemo-rl-gke" / "b200.json").exists()


def test_dev_up_and_a_plain_destroy_is_complete(cluster: None) -> None:
    up = make("engine-up", "STACK=dev")
    assert up.returncode == 0, up.stdout[-6000:] + up.stderr[-3000:]
    (pv,) = items("pv")
    assert pv["spec"]["csi"]["driver"] == "gcsfuse.csi.storage.gke.io"
    assert pv["status"]["phase"] == "Bound"
    # Autoscaling from zero: no worker until a job asks for one (see issue on autoscaling).
    assert [
        p
        for p in items("pods", "-n", "nemo-rl")
        if p["metadata"]["labels"].get("ray.io/node-type") == "head"
    ]
    down = must(make("engine-down", "STACK=dev"))
    assert "pulumi config set nemo-rl-gke:protect false" not in down.stdout  # plain destroy
    wait_until(
        "dev's objects to go",
        lambda: (
            not items("namespaces", "-l", "app.kubernetes.io/part-of=nemo-rl-gke")
            and not items("pv")
        ),
    )


def test_flex_start_admits_a_run_once_queued_provisioning_has_its_nodes(
    cluster: None, tmp_path: Path
) -> None:
    """dev on flex-start with the queue: Kueue asks GKE's queued provisioning for the run's
    nodes (a ProvisioningRequest, class queued-provisioning.gke.io) and admits the run only when
    they are all there. No cluster autoscaler runs here: the test answers the request as GKE's
    would (Provisioned=True), and the API server and Kueue show the rest."""
    workspace: Workspace = make_workspace(tmp_path)
    env = local_cluster.local_environ(workspace.env())
    for key in ("PATH", "NEMO_RL_GKE_STANDIN_ENDPOINT", "NEMO_RL_GKE_STANDIN_CA_FILE"):
        workspace.extra_env[key] = env[key]
    config = dict(yaml.safe_load((REPO / "Pulumi.dev.yaml").read_text())["config"])
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
        assert ray_pods(run) == []
        assert ray_pods(run, "head") == []
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
        wait_until("the run's workers", lambda: running(ray_pods(run), 2), timeout=90)
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
    env = local_cluster.local_environ(workspace.env())
    for key in ("PATH", "NEMO_RL_GKE_STANDIN_ENDPOINT", "NEMO_RL_GKE_STANDIN_CA_FILE"):
        workspace.extra_env[key] = env[key]
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
