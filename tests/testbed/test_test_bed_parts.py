"""The test bed's own parts: version pins, build cache keys, processes, fake nodes, the agent."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from testbed import cluster_pieces, engine, gobuild
from testbed.cluster_agent import crd_apply_args
from testbed.local_cluster import machine_shape, stack_nodes
from testbed.processes import Processes
from testbed.versions import TESTBED_VERSIONS as VERSIONS

REPO = Path(__file__).resolve().parents[2]


def test_every_wrapper_requires_the_version_table_s_pins() -> None:
    gobuild.check_pins(engine.WRAPPER_PINS)
    gobuild.check_pins(cluster_pieces.WRAPPER_PINS)
    assert set(engine.WRAPPER_PINS) | set(cluster_pieces.WRAPPER_PINS) == {
        p.name for p in gobuild.GO_MODULES.iterdir() if (p / "go.mod").exists()
    }


def test_a_wrapper_out_of_step_with_the_table_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copytree(gobuild.GO_MODULES / "kwok", tmp_path / "kwok")
    go_mod = tmp_path / "kwok" / "go.mod"
    go_mod.write_text(go_mod.read_text().replace(VERSIONS.engine_kwok.value, "v0.7.0"))
    monkeypatch.setattr(gobuild, "GO_MODULES", tmp_path)
    with pytest.raises(SystemExit, match=r"does not require sigs\.k8s\.io/kwok v0\.8\.0"):
        gobuild.check_pins({"kwok": cluster_pieces.WRAPPER_PINS["kwok"]})


def test_the_python_kubernetes_sdk_is_the_provider_release() -> None:
    """The engine loads a provider plugin only at exactly the SDK's version."""
    release = VERSIONS.engine_kubernetes_provider.value
    assert f'"pulumi-kubernetes=={release}"' in (REPO / "pyproject.toml").read_text()
    lock = (REPO / "uv.lock").read_text()
    assert re.search(rf'name = "pulumi-kubernetes"\nversion = "{re.escape(release)}"', lock)


def test_the_cache_key_follows_what_the_build_depends_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copytree(gobuild.GO_MODULES / "etcd", tmp_path / "etcd")
    monkeypatch.setattr(gobuild, "GO_MODULES", tmp_path)
    piece = gobuild.Piece(name="etcd", binaries={"etcd": "."})
    key = gobuild.cache_key(piece, [])
    assert gobuild.cache_key(piece, []) == key
    assert (
        gobuild.cache_key(gobuild.Piece(name="etcd", binaries={"etcd": "."}, ldflags="-s"), [])
        != key
    )
    main = tmp_path / "etcd" / "main.go"
    main.write_text(main.read_text() + "\n// changed\n")
    assert gobuild.cache_key(piece, []) != key


def test_processes_are_stopped_by_their_pid(tmp_path: Path) -> None:
    processes = Processes(tmp_path)
    sleep = shutil.which("sleep")
    assert sleep is not None
    pid = processes.start("sleeper", [sleep, "300"])
    assert processes.alive("sleeper")
    assert processes.stop("sleeper") == f"sleeper: stopped (pid {pid})"
    assert not processes.alive("sleeper")
    assert processes.recorded() == []
    assert processes.stop("sleeper") == "sleeper: not running"


def test_a_stale_or_reused_pid_is_never_killed(tmp_path: Path) -> None:
    processes = Processes(tmp_path)
    (tmp_path / "pids").mkdir()
    # This test's own interpreter is alive but does not run the recorded executable.
    other = subprocess.Popen([shutil.which("sleep") or "sleep", "300"])
    try:
        (tmp_path / "pids" / "fake.pid").write_text(
            f'{{"pid": {other.pid}, "executable": "/not/what/runs/there"}}'
        )
        assert not processes.alive("fake")
        assert "was not running" in processes.stop("fake")
        assert other.poll() is None  # untouched
    finally:
        other.kill()
        other.wait()


def test_machine_shapes() -> None:
    assert machine_shape("n2-highmem-16") == (16, 128)
    assert machine_shape("n2-standard-8") == (8, 32)
    assert machine_shape("c3-highcpu-44") == (44, 44)


@pytest.mark.parametrize(
    ("stack", "gpus", "accelerator", "gpu_nodes"),
    [
        ("b200", 8, "nvidia-b200", 2),
        ("h200", 8, "nvidia-h200-141gb", 2),
        ("dev", 1, "nvidia-l4", 2),
    ],
)
def test_fake_nodes_are_shaped_like_the_stack_s_pools(
    stack: str, gpus: int, accelerator: str, gpu_nodes: int
) -> None:
    nodes = stack_nodes(stack)
    system = [n for n in nodes if n["metadata"]["labels"]["nemo-rl-gke/pool"] == "system"]
    gpu = [n for n in nodes if n["metadata"]["labels"]["nemo-rl-gke/pool"] == "gpu"]
    assert len(system) == 3  # the system pool's maximum
    assert system[0]["status"]["allocatable"]["cpu"] == "16"
    assert system[0]["status"]["allocatable"]["pods"] == "110"  # GKE's default
    assert len(gpu) == gpu_nodes
    for node in gpu:
        assert node["metadata"]["labels"]["cloud.google.com/gke-accelerator"] == accelerator
        assert node["status"]["allocatable"]["nvidia.com/gpu"] == str(gpus)
        assert node["status"]["allocatable"]["pods"] == "32"  # the pool's maxPodsPerNode
        assert node["spec"]["taints"] == [
            {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
        ]
        assert node["metadata"]["annotations"]["kwok.x-k8s.io/node"] == "fake"


def test_the_agent_applies_the_crd_job_s_command_on_local_files(tmp_path: Path) -> None:
    for name in ("ray.io_rayclusters.yaml", "ray.io_rayjobs.yaml"):
        (tmp_path / name).write_text("kind: CustomResourceDefinition\n")
    base = (
        "https://raw.githubusercontent.com/ray-project/kuberay/v1.7.0/ray-operator/config/crd/bases"
    )
    container = {
        "args": [
            "apply", "--server-side", "--force-conflicts", "--field-manager=fm",
            "-f", f"{base}/ray.io_rayclusters.yaml", "-f", f"{base}/ray.io_rayjobs.yaml",
        ]
    }  # fmt: skip
    args, urls = crd_apply_args(container, tmp_path)
    local = [str(tmp_path / "ray.io_rayclusters.yaml"), str(tmp_path / "ray.io_rayjobs.yaml")]
    flags = ["apply", "--server-side", "--force-conflicts", "--field-manager=fm"]
    assert args == [*flags, "-f", local[0], "-f", local[1]]
    assert urls == [f"{base}/ray.io_rayclusters.yaml", f"{base}/ray.io_rayjobs.yaml"]
    container["args"].extend(["-f", f"{base}/ray.io_rayservices.yaml"])
    with pytest.raises(FileNotFoundError, match=r"ray\.io_rayservices\.yaml has no local copy"):
        crd_apply_args(container, tmp_path)


def test_the_trust_bundle_keeps_the_machine_s_roots_and_adds_the_local_ca(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stand-in's DNS endpoint is the local API server, trusted like GKE's public
    certificate would be: through the roots. The machine's own roots (a proxy's CA in its
    SSL_CERT_FILE) stay, so nothing else the test bed starts loses TLS."""
    from testbed.pki import Pki, write_trust_bundle

    pki = Pki(tmp_path)
    pki.ca.write_text("-----BEGIN CERTIFICATE-----\nlocal\n-----END CERTIFICATE-----\n")
    machine = tmp_path / "machine.pem"
    machine.write_text("-----BEGIN CERTIFICATE-----\nproxy\n-----END CERTIFICATE-----\n")
    monkeypatch.setenv("SSL_CERT_FILE", str(machine))
    bundle = write_trust_bundle(pki).read_text()
    assert "proxy" in bundle
    assert bundle.endswith("-----BEGIN CERTIFICATE-----\nlocal\n-----END CERTIFICATE-----\n")
    monkeypatch.setenv("SSL_CERT_FILE", str(pki.trust_bundle))  # the env file was sourced
    assert write_trust_bundle(pki).read_text() == bundle
