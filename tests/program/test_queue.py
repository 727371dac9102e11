"""The job queue (Kueue + topology-aware scheduling): planning, config checks, the program's
objects and their order. The real controller admitting them is in tests/engine."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from planning.catalog import profile
from planning.queue import (
    QUEUE_LABEL,
    REQUIRED_TOPOLOGY,
    SUBBLOCK_LABEL,
    UNCONSTRAINED_TOPOLOGY,
    QueuedPlacement,
    cpu_quantity,
    gke_allocatable,
    machine_shape,
    manager_config,
    memory_quantity,
    pod_set_annotations,
    queued_cluster_spec,
)
from preflight.cli import Result
from stack_config import InvalidStackConfig, load_stack_config
from tests.harness import by_name, run_stack, stack_data, variant

KUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:"


def values(stack: str, **changes: Any) -> dict[str, Any]:
    """The committed stack's config as the engine hands it over, with top-level changes."""
    config = {**stack_data(stack)["config"], **{f"nemo-rl-gke:{k}": v for k, v in changes.items()}}
    return {
        k: v if isinstance(v, str) else json.dumps(v)
        for k, v in config.items()
        if not k.startswith("pulumi:")
    }


def invalid(stack: str, **changes: Any) -> InvalidStackConfig:
    with pytest.raises(InvalidStackConfig) as err:
        load_stack_config(values(stack, **changes), stack)
    return err.value


# --- planning ----------------------------------------------------------------------------------


MACHINE_TYPES_API = {"n2-highmem-16": (16, 131072), "n1-highmem-16": (16, 106496)}
"""(guestCpus, memoryMb) as Compute Engine's machineTypes API answers them (an answer recorded
in rancher/ui's GKE driver data): its "GB" of machine memory are GiB."""


def test_machine_memory_is_counted_as_compute_engine_counts_it() -> None:
    for name, (cpus, memory_mb) in MACHINE_TYPES_API.items():
        assert machine_shape(name) == (cpus, memory_mb / 1024), name


def test_allocatable_follows_gkes_reservation_formula() -> None:
    # n1-standard-1: 1 vCPU, 6% reserved; 3840 MiB: 25% reserved, then 100 MiB for eviction.
    assert gke_allocatable(1, 3.75) == (940, int(3840 * 0.75 - 100))
    # a4-highgpu-8g: 224 vCPU -> 0.06 + 0.01 + 0.01 + 220 x 0.0025 = 0.63 reserved.
    cpu, memory = gke_allocatable(224, 3968)
    assert cpu == 223370
    reserved = 1 + 0.8 + 0.8 + 6.72 + 0.02 * (3968 - 128)
    assert memory == int((3968 - reserved) * 1024 - 100)


def test_machine_shapes_of_the_system_pool() -> None:
    assert machine_shape("n2-highmem-16") == (16, 128)
    assert machine_shape("e2-standard-8") == (8, 32)
    assert machine_shape("c3-highcpu-44") == (44, 88)  # C3 high-CPU: 2 GB per vCPU
    assert machine_shape("n2-custom-8-32768") == (8, 32)
    assert machine_shape("a4-highgpu-8g") is None


def test_worker_groups_are_placed_by_topology_and_pods_get_priorities() -> None:
    spec = {
        "enableInTreeAutoscaling": True,
        "headGroupSpec": {"template": {"spec": {"containers": []}}},
        "workerGroupSpecs": [
            {"groupName": "gpu-workers", "template": {"metadata": {"annotations": {"a": "b"}}}}
        ],
    }
    placement = QueuedPlacement(local_queue="q", worker_annotations=pod_set_annotations("subblock"))
    queued = queued_cluster_spec(spec, placement)
    assert queued["enableInTreeAutoscaling"] is False
    head = queued["headGroupSpec"]["template"]
    assert head["spec"]["priorityClassName"] == "nemo-rl-training"
    assert "annotations" not in head.get("metadata", {})  # the head is not placed by topology
    (worker,) = queued["workerGroupSpecs"]
    assert worker["template"]["metadata"]["annotations"] == {
        "a": "b",
        REQUIRED_TOPOLOGY: SUBBLOCK_LABEL,
    }
    assert worker["template"]["spec"]["priorityClassName"] == "nemo-rl-training"
    assert spec["enableInTreeAutoscaling"] is True  # the input is left alone
    assert pod_set_annotations("none") == {UNCONSTRAINED_TOPOLOGY: "true"}


def test_quotas_are_written_in_kubernetes_canonical_form() -> None:
    """Kueue's webhook re-encodes quantities canonically; the program must send that form."""
    assert cpu_quantity(223370) == "223370m"
    assert cpu_quantity(16000) == "16"
    assert memory_quantity(1536) == "1536Mi"
    assert memory_quantity(2048) == "2Gi"
    assert memory_quantity(3 * 1024 * 1024) == "3Ti"
    assert memory_quantity(0) == "0Mi"


def test_manager_config_manages_ray_only_in_the_workload_namespace() -> None:
    config = yaml.safe_load(manager_config("nemo-rl"))
    assert config["apiVersion"] == "config.kueue.x-k8s.io/v1beta2"
    assert config["integrations"]["frameworks"] == ["ray.io/rayjob", "ray.io/raycluster"]
    jobs = yaml.safe_load(manager_config("nemo-rl", batch_jobs=True))["integrations"]
    assert jobs["frameworks"] == ["ray.io/rayjob", "ray.io/raycluster", "batch/job"]
    assert "pod" not in config["integrations"]["frameworks"]
    assert config["managedJobsNamespaceSelector"] == {
        "matchLabels": {"kubernetes.io/metadata.name": "nemo-rl"}
    }


# --- config ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("stack", "on"), [("dev", False), ("b200", True), ("h200", True)])
def test_on_by_default_for_b200_and_h200_only(stack: str, on: bool) -> None:
    cfg = load_stack_config(values(stack), stack)
    assert cfg.queue_enabled is on
    asked = load_stack_config(values("dev", kueue={"enabled": True}), "dev")
    assert asked.queue_enabled


def test_a_quota_above_the_pool_exits_naming_the_key() -> None:
    err = invalid("b200", kueue={"gpuQuota": 24})
    assert err.key == "nemo-rl-gke:kueue.gpuQuota"
    assert "more than the pool holds (2 nodes x 8 = 16)" in err.problem
    assert "at most 16" in err.fix
    load_stack_config(values("b200", kueue={"gpuQuota": 16}), "b200")  # the pool's size is fine


def test_a_flavor_label_no_pool_node_carries_exits_naming_the_key() -> None:
    err = invalid(
        "b200", kueue={"flavorLabels": {"cloud.google.com/gke-accelerator": "nvidia-h200-141gb"}}
    )
    assert err.key == "nemo-rl-gke:kueue.flavorLabels.cloud.google.com/gke-accelerator"
    assert "matches no node of the GPU pool" in err.problem
    assert "cloud.google.com/gke-nodepool=gpu-b200" in err.fix
    load_stack_config(
        values("b200", kueue={"flavorLabels": {"cloud.google.com/gke-nodepool": "gpu-b200"}}),
        "b200",
    )


def test_topology_on_nodes_without_topology_labels_exits() -> None:
    err = invalid("dev", kueue={"enabled": True, "topology": "subblock"})
    assert err.key == "nemo-rl-gke:kueue.topology"
    assert "g2-standard-16 nodes carry no reservation topology labels" in err.problem


def test_queued_provisioning_refuses_compact_placement() -> None:
    gpu = {
        "type": "b200",
        "autoscaling": {"min": 0, "max": 2},
        "capacity": "flex-start",
        "placement": "compact",
    }
    err = invalid("b200", gpu=gpu)
    assert err.key == "nemo-rl-gke:gpu.placement"
    assert "queued provisioning" in err.problem


def test_an_unknown_system_machine_type_exits_when_the_queue_sizes_it() -> None:
    cluster = {"systemPool": {"machineType": "m3-megamem-64x"}}
    err = invalid("b200", cluster=cluster)
    assert err.key == "nemo-rl-gke:cluster.systemPool.machineType"
    queue_off = values("b200", cluster=cluster, kueue={"enabled": False})
    queue_off.pop("nemo-rl-gke:health")  # the scheduled checks run only through the queue
    load_stack_config(queue_off, "b200")


def test_a_local_chart_of_another_version_exits(tmp_path: Path) -> None:
    chart = tmp_path / "kueue"
    chart.mkdir()
    (chart / "Chart.yaml").write_text("name: kueue\nversion: 0.17.1\n")
    err = invalid("b200", kueue={"chartPath": str(chart)})
    assert err.key == "nemo-rl-gke:kueue.chartPath"
    assert "version 0.17.1, but the pinned Kueue is 0.19.2" in err.problem


# --- the program's objects ---------------------------------------------------------------------


def kueue_objects(result: Result) -> dict[str, dict[str, Any]]:
    return {
        r.inputs["kind"] + "/" + r.inputs["metadata"]["name"]: r.inputs
        for r in result.run.records
        if r.type.startswith(KUEUE)
    }


def test_b200_queue_covers_cpu_memory_and_every_gpu_of_the_pool(b200: Result) -> None:
    objects = kueue_objects(b200)
    assert sorted(objects) == [
        "ClusterQueue/nemo-rl-b200",
        "LocalQueue/nemo-rl",
        "ResourceFlavor/gpu-b200",
        "ResourceFlavor/system",
        "Topology/gke-default",
    ]
    levels = [level["nodeLabel"] for level in objects["Topology/gke-default"]["spec"]["levels"]]
    assert levels == [
        "cloud.google.com/gce-topology-block",
        "cloud.google.com/gce-topology-subblock",
        "cloud.google.com/gce-topology-host",
        "kubernetes.io/hostname",
    ]
    gpu = objects["ResourceFlavor/gpu-b200"]["spec"]
    assert gpu["nodeLabels"] == {"cloud.google.com/gke-accelerator": "nvidia-b200"}
    assert gpu["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    ]
    assert gpu["topologyName"] == "gke-default"
    system = objects["ResourceFlavor/system"]["spec"]
    assert system == {"nodeLabels": {"nemo-rl-gke/pool": "system"}}
    cq = objects["ClusterQueue/nemo-rl-b200"]["spec"]
    (group,) = cq["resourceGroups"]
    assert group["coveredResources"] == ["cpu", "memory", "nvidia.com/gpu"]
    quotas = {
        f["name"]: {r["name"]: r["nominalQuota"] for r in f["resources"]} for f in group["flavors"]
    }
    assert [f["name"] for f in group["flavors"]] == ["system", "gpu-b200"]  # the head's first
    cpu, memory = gke_allocatable(224, 3968)
    assert quotas["gpu-b200"] == {
        "cpu": f"{2 * cpu}m",
        "memory": f"{2 * memory}Mi",
        "nvidia.com/gpu": "16",
    }
    s_cpu, s_memory = gke_allocatable(16, 128)
    assert quotas["system"] == {
        "cpu": f"{3 * s_cpu}m",
        "memory": f"{3 * s_memory}Mi",
        "nvidia.com/gpu": "0",
    }
    assert cq["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": "nemo-rl"}}
    assert "admissionChecksStrategy" not in cq  # reserved pool: no queued provisioning
    assert objects["LocalQueue/nemo-rl"]["metadata"]["namespace"] == "nemo-rl"
    assert objects["LocalQueue/nemo-rl"]["spec"] == {"clusterQueue": "nemo-rl-b200"}
    assert all(o["apiVersion"] == "kueue.x-k8s.io/v1beta2" for o in objects.values())


def test_dev_has_no_queue(dev: Result) -> None:
    assert kueue_objects(dev) == {}
    names = by_name(dev)
    assert "kueue-release" not in names
    (cluster,) = [r.inputs for r in dev.run.records if r.inputs.get("kind") == "RayCluster"]
    assert QUEUE_LABEL not in cluster["metadata"]["labels"]
    assert cluster["spec"]["enableInTreeAutoscaling"] is True


def test_the_release_is_the_pinned_chart_with_ray_and_queued_job_frameworks(
    b200: Result,
) -> None:
    release = by_name(b200)["kueue-release"].inputs
    assert release["chart"] == "oci://registry.k8s.io/kueue/charts/kueue"
    assert release["version"] == "0.19.2"
    assert release["namespace"] == "kueue-system"
    values_ = release["values"]
    assert values_["controllerManager"]["manager"]["image"] == {
        "repository": "registry.k8s.io/kueue/kueue",
        "tag": "v0.19.2",
        "pullPolicy": "IfNotPresent",
    }
    assert values_["controllerManager"]["nodeSelector"] == {"nemo-rl-gke/pool": "system"}
    config = yaml.safe_load(values_["managerConfig"]["controllerManagerConfigYaml"])
    # batch/job for the scheduled health checks; a Job without the queue's label (a gate) is
    # left alone.
    assert config["integrations"]["frameworks"] == [
        "ray.io/rayjob",
        "ray.io/raycluster",
        "batch/job",
    ]
    assert not config.get("manageJobsWithoutQueueName", False)


def depends(result: Result, name: str, target: str, seen: set[str] | None = None) -> bool:
    """`name` waits for `target`, directly or through other resources."""
    records = by_name(result)
    by_urn = {r.urn: r for r in result.run.records}
    target_urn = records[target].urn
    seen = seen or set()
    for urn in records[name].dependencies:
        if urn == target_urn:
            return True
        if urn not in seen and urn in by_urn:
            seen.add(urn)
            if depends(result, by_urn[urn].name, target, seen):
                return True
    return False


def test_order_release_then_gates_then_queue_then_ray(b200: Result) -> None:
    # Kueue's webhooks see every Job of the namespace: the gates wait for the release.
    assert depends(b200, "verify-gpu-health", "kueue-release")
    # The queue opens only after the last gate; the RayCluster only after the queue.
    assert depends(b200, "queue-local-queue", "verify-storage")
    assert depends(b200, "ray-cluster", "queue-local-queue")
    assert depends(b200, "queue-cluster-queue", "queue-flavor-gpu-b200")
    assert depends(b200, "queue-flavor-gpu-b200", "queue-topology")
    # Every Kueue object goes through Kueue's webhooks: after the release.
    for name in ("queue-topology", "queue-flavor-system", "queue-cluster-queue"):
        assert depends(b200, name, "kueue-release"), name


def test_queued_raycluster_and_gate_priorities(b200: Result) -> None:
    records = by_name(b200)
    cluster = records["ray-cluster"].inputs
    assert cluster["metadata"]["labels"][QUEUE_LABEL] == "nemo-rl"
    spec = cluster["spec"]
    assert spec["enableInTreeAutoscaling"] is False
    (worker,) = spec["workerGroupSpecs"]
    assert worker["replicas"] == worker["minReplicas"] == worker["maxReplicas"] == 2
    assert worker["template"]["metadata"]["annotations"][REQUIRED_TOPOLOGY] == SUBBLOCK_LABEL
    assert worker["template"]["spec"]["priorityClassName"] == "nemo-rl-training"
    assert spec["headGroupSpec"]["template"]["spec"]["priorityClassName"] == "nemo-rl-training"
    gate = records["verify-nccl"].inputs
    assert gate["spec"]["template"]["spec"]["priorityClassName"] == "nemo-rl-verify"
    assert QUEUE_LABEL not in gate["metadata"].get("labels", {})
    classes = {
        r.inputs["metadata"]["name"]: r.inputs
        for r in b200.run.records
        if r.inputs.get("kind") == "PriorityClass"
    }
    assert classes["nemo-rl-training"]["value"] > classes["nemo-rl-verify"]["value"]
    assert classes["nemo-rl-verify"]["preemptionPolicy"] == "Never"


def test_block_level_is_configurable(tmp_path: Path) -> None:
    result = run_stack(
        "b200", tmp_path, variant("b200", {"nemo-rl-gke:kueue": {"topology": "block"}})
    )
    (worker,) = by_name(result)["ray-cluster"].inputs["spec"]["workerGroupSpecs"]
    annotations = worker["template"]["metadata"]["annotations"]
    assert annotations[REQUIRED_TOPOLOGY] == "cloud.google.com/gce-topology-block"


def test_job_on_the_queued_cluster_is_not_queued_again(tmp_path: Path) -> None:
    changes = {
        "nemo-rl-gke:ray": {"job": {"enabled": True}},
        "nemo-rl-gke:hfToken": {"secure": "v1:x"},
    }
    result = run_stack("b200", tmp_path, variant("b200", changes))
    (job,) = [r.inputs for r in result.run.records if r.inputs.get("kind") == "RayJob"]
    assert "clusterSelector" in job["spec"]
    assert (
        QUEUE_LABEL not in job["metadata"]["labels"]
    )  # Kueue skips it; the cluster holds the GPUs


@pytest.fixture(scope="module")
def flex(tmp_path_factory: pytest.TempPathFactory) -> Result:
    """dev on flex-start with the queue and the GRPO job: queued provisioning."""
    gpu = {"type": "l4", "autoscaling": {"min": 0, "max": 2}, "capacity": "flex-start"}
    changes = {
        "nemo-rl-gke:gpu": gpu,
        "nemo-rl-gke:kueue": {"enabled": True},
        "nemo-rl-gke:ray": {"job": {"enabled": True}},
    }
    return run_stack("dev", tmp_path_factory.mktemp("flex"), variant("dev", changes))


def test_flex_start_queues_through_provisioning_requests(flex: Result) -> None:
    objects = kueue_objects(flex)
    assert "Topology/gke-default" not in objects  # L4 nodes report no topology
    assert "topologyName" not in objects["ResourceFlavor/gpu-l4"]["spec"]
    check = objects["AdmissionCheck/dws-prov"]["spec"]
    assert check["controllerName"] == "kueue.x-k8s.io/provisioning-request"
    assert check["parameters"] == {
        "apiGroup": "kueue.x-k8s.io",
        "kind": "ProvisioningRequestConfig",
        "name": "dws-config",
    }
    assert objects["ProvisioningRequestConfig/dws-config"]["spec"] == {
        "provisioningClassName": "queued-provisioning.gke.io",
        "managedResources": ["nvidia.com/gpu"],
    }
    cq = objects["ClusterQueue/nemo-rl-dev"]["spec"]
    # v1beta2's field; v1beta1's `admissionChecks` would be pruned and never apply.
    assert cq["admissionChecksStrategy"] == {
        "admissionChecks": [{"name": "dws-prov", "onFlavors": ["gpu-l4"]}]
    }
    assert "admissionChecks" not in cq
    pool = by_name(flex)["gpu-pool"].inputs
    assert pool["queuedProvisioning"] == {"enabled": True}
    assert pool["nodeConfig"]["flexStart"] is True
    assert pool["nodeConfig"]["reservationAffinity"] == {"consumeReservationType": "NO_RESERVATION"}
    assert pool["autoscaling"]["totalMinNodeCount"] == 0


def test_a_job_that_brings_its_own_cluster_is_one_queued_workload(flex: Result) -> None:
    (job,) = [r.inputs for r in flex.run.records if r.inputs.get("kind") == "RayJob"]
    assert job["metadata"]["labels"][QUEUE_LABEL] == "nemo-rl"
    spec = job["spec"]
    assert spec["shutdownAfterJobFinishes"] is True  # Kueue refuses a queued RayJob without it
    assert "clusterSelector" not in spec
    cluster = spec["rayClusterSpec"]
    assert cluster["enableInTreeAutoscaling"] is False
    (worker,) = cluster["workerGroupSpecs"]
    assert worker["groupName"] != "head"  # Kueue refuses a worker group named head
    assert REQUIRED_TOPOLOGY not in worker["template"]["metadata"].get("annotations", {})
    # The standing cluster is queued too, at a fixed size (its minimum).
    (standing,) = [r.inputs for r in flex.run.records if r.inputs.get("kind") == "RayCluster"]
    assert standing["metadata"]["labels"][QUEUE_LABEL] == "nemo-rl"
    (group,) = standing["spec"]["workerGroupSpecs"]
    assert group["replicas"] == group["maxReplicas"] == 0


def test_gpu_pool_labels_match_what_the_test_bed_and_gke_put_on_nodes() -> None:
    from planning.queue import gpu_pool_node_labels
    from testbed.local_cluster import stack_nodes

    (node,) = [n for n in stack_nodes("b200") if n["metadata"]["name"] == "b200-gpu-0"]
    for key, value in gpu_pool_node_labels(profile("b200")).items():
        assert node["metadata"]["labels"][key] == value


def test_preflight_exits_2_on_a_queue_above_the_pool_before_any_resource(tmp_path: Path) -> None:
    from tests.harness import write_stack
    from tests.preflight.test_cli import run_cli

    path = write_stack(tmp_path, "b200", variant("b200", {"nemo-rl-gke:kueue": {"gpuQuota": 17}}))
    code, out, err = run_cli("--stack-file", str(path))
    assert code == 2
    assert out == ""
    (line,) = err.strip().splitlines()
    assert line.startswith("preflight: invalid stack config: nemo-rl-gke:kueue.gpuQuota: 17 GPUs")
    assert "Traceback" not in err


def test_the_printed_report_elides_the_queued_run_manifest(tmp_path: Path) -> None:
    """The manifest is kilobytes of JSON: the report names its size, --json holds it whole."""
    from tests.preflight.test_cli import run_cli

    code, out, _ = run_cli("--stack", "b200", "--known")
    assert code == 0
    (line,) = [line for line in out.splitlines() if "grpoQueuedRunManifest" in line]
    assert line.strip().startswith("grpoQueuedRunManifest: <")
    assert line.strip().endswith("characters; --json prints it>")
    report = tmp_path / "report.json"
    assert run_cli("--stack", "b200", "--known", "--json", str(report))[0] == 0
    manifest = json.loads(json.loads(report.read_text())["outputs"]["grpoQueuedRunManifest"])
    assert manifest["kind"] == "RayJob"


def test_kueue_says_why_a_run_waits_and_one_command_shows_it(b200: Result) -> None:
    config = yaml.safe_load(manager_config("nemo-rl"))
    assert config["featureGates"] == {"UnadmittedWorkloadsObservability": True}
    command = b200.run.exports["queueStatusCommand"].value
    listing, position = command.split(" && ")
    assert listing.startswith("kubectl get workloads.kueue.x-k8s.io -n nemo-rl ")
    assert 'REASON:.status.conditions[?(@.type=="QuotaReserved")].reason' in listing
    assert position.endswith(
        "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/nemo-rl-b200/pendingworkloads"
    )
