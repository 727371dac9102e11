"""Ray's own log files leave every Ray pod: a native sidecar sends them to Cloud Logging and
copies them to the run's folder (planning.ray_logs, workload/ray_logs.py). What the sidecar
does with real Ray files is in tests/workload; the real API server, KubeRay and Ray running it
in the test bed are in tests/engine."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from planning.queue import gke_allocatable, machine_shape
from planning.ray_logs import SHIPPER_CONFIG_MAP, SHIPPER_MEMORY_MIB, TOKEN_MOUNT
from preflight.cli import Result
from stack_config.errors import InvalidStackConfig
from stack_config.ray import SYSTEM_PODS_ROOM, RayConfig, head_fits_problems
from tests.harness import REPO, run_stack, stack_data, variant
from tests.program.test_failed_runs import dev_job, rayjob
from tests.program.test_queue import invalid
from tests.program.test_ray_schemas import crd_validator, manifests


def ray_cluster(result: Result) -> dict[str, Any]:
    (cluster,) = [o for o in manifests(result, "ray.io/") if o["kind"] == "RayCluster"]
    return cluster


def pod_specs(cluster_spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The head's and the workers' pod specs of a RayCluster spec."""
    return {
        "head": cluster_spec["headGroupSpec"]["template"]["spec"],
        "workers": cluster_spec["workerGroupSpecs"][0]["template"]["spec"],
    }


def env_of(container: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in container.get("env", [])}


def shipper_of(spec: dict[str, Any]) -> dict[str, Any]:
    sidecars: list[dict[str, Any]] = [
        c for c in spec.get("initContainers", []) if c["name"] == "ray-logs"
    ]
    (sidecar,) = sidecars
    return sidecar


def with_ray(stack: str, tmp_path: Path, **ray: Any) -> Result:
    merged = {**stack_data(stack)["config"].get("nemo-rl-gke:ray", {}), **ray}
    tmp_path.mkdir(parents=True, exist_ok=True)
    return run_stack(stack, tmp_path, variant(stack, {"nemo-rl-gke:ray": merged}))


def test_every_pod_of_the_stacks_raycluster_ships_rays_logs(b200: Result) -> None:
    cluster = ray_cluster(b200)
    crd_validator("rayclusters").validate(cluster)
    for role, spec in pod_specs(cluster["spec"]).items():
        sidecar = shipper_of(spec)
        # First, and a native sidecar: started before Ray, stopped after it.
        assert spec["initContainers"][0] is sidecar, role
        assert sidecar["restartPolicy"] == "Always"
        assert sidecar["command"] == ["python3", "/opt/nemo-rl-gke/ray-logs/ray_logs.py"]
        (ray_container,) = spec["containers"][:1]
        assert sidecar["image"] == ray_container["image"]  # on the node already: no extra pull
        env = env_of(sidecar)
        # The cluster outlives its runs: its pods copy beside the runs' folders.
        assert env["RAY_LOGS_COPY_DIR"] == "/data/nemo-rl/ray-logs/nemo-rl"
        assert env["RAY_LOGS_CLOUD"] == "1"
        assert "RAY_LOGS_RUN" not in env
        resources = sidecar["resources"]
        assert resources["requests"] == resources["limits"] == {"cpu": "100m", "memory": "128Mi"}
        mounts = {m["mountPath"]: m for m in sidecar["volumeMounts"]}
        ray_mounts = {m["mountPath"]: m["name"] for m in ray_container["volumeMounts"]}
        assert mounts["/tmp/ray"]["name"] == ray_mounts["/tmp/ray"]  # Ray's own emptyDir
        assert mounts["/tmp/ray"]["readOnly"] is True
        assert mounts["/data"]["name"] == ray_mounts["/data"]
        # No tokens: neither the stack's (Hugging Face, W&B) nor the pod's API token.
        assert "/var/run/secrets/nemo-rl-gke" not in mounts
        assert mounts[TOKEN_MOUNT]["readOnly"] is True
        volumes = {v["name"]: v for v in spec["volumes"]}
        assert volumes[mounts[TOKEN_MOUNT]["name"]] == {
            "name": "ray-logs-no-token",
            "emptyDir": {"sizeLimit": "1Mi"},
        }
        assert volumes[mounts["/opt/nemo-rl-gke/ray-logs"]["name"]]["configMap"] == {
            "name": SHIPPER_CONFIG_MAP
        }
        security = sidecar["securityContext"]
        assert security["readOnlyRootFilesystem"] is True
        assert security["capabilities"] == {"drop": ["ALL"]}
        assert security["allowPrivilegeEscalation"] is False
    (config_map,) = [
        plain
        for plain in manifests(b200, "v1")
        if plain.get("kind") == "ConfigMap" and plain["metadata"]["name"] == SHIPPER_CONFIG_MAP
    ]
    assert config_map["metadata"]["namespace"] == "nemo-rl"
    assert config_map["data"]["ray_logs.py"] == (REPO / "workload" / "ray_logs.py").read_text()
    command = b200.run.exports["rayLogsCommand"].value
    assert command.startswith("gcloud logging read ")
    assert 'resource.labels.container_name="ray-logs"' in command
    assert 'labels."k8s-pod/ray_io/cluster"="nemo-rl"' in command


def test_a_run_that_brings_its_cluster_copies_into_its_own_folder(tmp_path: Path) -> None:
    job = rayjob(dev_job(tmp_path))
    crd_validator("rayjobs").validate(job)
    run = job["metadata"]["annotations"]["nemo-rl-gke/run"]
    log_dir = job["metadata"]["annotations"]["nemo-rl-gke/log-dir"]
    assert job["metadata"]["annotations"]["nemo-rl-gke/ray-log-dir"] == f"{log_dir}/ray"
    for spec in pod_specs(job["spec"]["rayClusterSpec"]).values():
        env = env_of(shipper_of(spec))
        assert env["RAY_LOGS_COPY_DIR"] == f"{log_dir}/ray"
        assert env["RAY_LOGS_RUN"] == run


def test_the_queued_runs_manifest_ships_into_its_runs_folder(b200: Result) -> None:
    manifest = json.loads(b200.run.exports["grpoQueuedRunManifest"].value)
    log_dir = manifest["metadata"]["annotations"]["nemo-rl-gke/log-dir"]
    for spec in pod_specs(manifest["spec"]["rayClusterSpec"]).values():
        assert env_of(shipper_of(spec))["RAY_LOGS_COPY_DIR"] == f"{log_dir}/ray"


def test_each_place_can_be_left_out_and_none_means_no_sidecar(tmp_path: Path) -> None:
    cloud = with_ray("b200", tmp_path / "cloud", shipLogs=["cloudLogging"])
    for spec in pod_specs(ray_cluster(cloud)["spec"]).values():
        sidecar = shipper_of(spec)
        assert "RAY_LOGS_COPY_DIR" not in env_of(sidecar)
        assert "/data" not in {m["mountPath"] for m in sidecar["volumeMounts"]}
    volume = with_ray("b200", tmp_path / "volume", shipLogs=["volume"])
    for spec in pod_specs(ray_cluster(volume)["spec"]).values():
        assert env_of(shipper_of(spec))["RAY_LOGS_CLOUD"] == "0"
    assert "rayLogsCommand" not in volume.run.exports  # nothing in Cloud Logging to read
    off = with_ray("b200", tmp_path / "off", shipLogs=[])
    for spec in pod_specs(ray_cluster(off)["spec"]).values():
        assert "initContainers" not in spec
        assert "ray-logs-shipper" not in {v["name"] for v in spec["volumes"]}
    assert not [
        o
        for o in manifests(off, "v1")
        if o.get("kind") == "ConfigMap" and o["metadata"]["name"] == SHIPPER_CONFIG_MAP
    ]


@pytest.mark.parametrize(
    ("ship", "problem"),
    [
        (["s3"], "cloudLogging"),
        (["volume", "volume"], "listed twice"),
        ("volume", "list"),
    ],
)
def test_a_place_that_is_not_one_is_refused_naming_the_key(ship: Any, problem: str) -> None:
    ray = {**stack_data("dev")["config"].get("nemo-rl-gke:ray", {}), "shipLogs": ship}
    err = invalid("dev", ray=ray)
    assert isinstance(err, InvalidStackConfig)
    assert err.key.startswith("nemo-rl-gke:ray.shipLogs"), str(err)
    assert problem in f"{err.problem} {err.fix}", str(err)


def test_the_head_must_fit_its_node_with_its_sidecar() -> None:
    """A head that fits a system node only without the sidecar's 128 MiB is refused while the
    sidecar is on (the pod asks for both), and accepted with ray.shipLogs [] ."""
    for megabytes in range(16384, 65536, 16):
        machine = f"n2-custom-8-{megabytes}"
        _, memory = gke_allocatable(*machine_shape(machine) or (0, 0))
        left = memory - SYSTEM_PODS_ROOM[1]
        if left % 1024 < SHIPPER_MEMORY_MIB:
            break
    else:
        pytest.fail("no custom shape puts the sidecar on the edge")
    head = {"cpu": 2, "memoryGib": left // 1024}
    (problem,) = head_fits_problems(RayConfig.model_validate({"head": head}), machine)
    assert problem.path == ("ray", "head", "memoryGib")
    assert "log sidecar" in problem.problem
    alone = RayConfig.model_validate({"head": head, "shipLogs": []})
    assert not list(head_fits_problems(alone, machine))
