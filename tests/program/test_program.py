"""The real __main__.py per committed stack, run by the preflight engine.

Proof limit: a mock run proves what the program registers and sends, not that GCP accepts it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from planning.ray import gib_shell_setup, numa_affinity_setup
from preflight.cli import Result
from pulumi_offline.stackfiles import read_project, read_stack
from stack_config import load_stack_config
from tests.harness import REPO, by_name, children, run_stack, stack_data, variant

NETWORK_TYPES = {
    "nemo:network:PrimaryNetwork",
    "nemo:network:GvnicNetwork",
    "nemo:network:RdmaNetwork",
}


def components(result: Result) -> set[str]:
    return {r.name for r in result.run.records if r.type in NETWORK_TYPES}


def test_dev_has_only_the_cluster_vpc(dev: Result) -> None:
    assert components(dev) == {"primary"}
    names = by_name(dev)
    assert not any(r.inputs.get("networkProfile") for r in dev.run.records)
    assert names["primary-net"].inputs["name"] == "nemo-rl-dev-net"
    assert dev.run.exports["additionalNodeNetworks"].value == []


def test_b200_has_three_vpcs_with_zonal_roce_profile(b200: Result) -> None:
    assert components(b200) == {"primary", "gvnic", "rdma"}
    rdma = children(b200, "rdma")
    assert len([n for n in rdma if n.startswith("rdma-sub-")]) == 8
    profile = rdma["rdma-net"].inputs["networkProfile"]
    assert profile == "projects/my-gcp-project-prod/global/networkProfiles/us-central1-b-vpc-roce"
    assert all(
        r.inputs["region"] == "us-central1" for n, r in rdma.items() if n.startswith("rdma-sub")
    )


def test_h200_uses_its_own_zone_and_region(h200: Result) -> None:
    rdma = children(h200, "rdma")
    assert (
        rdma["rdma-net"].inputs["networkProfile"].endswith("/networkProfiles/us-east4-b-vpc-roce")
    )
    assert all(
        r.inputs["region"] == "us-east4" for n, r in rdma.items() if n.startswith("rdma-sub")
    )


def expected_node_networks(result: Result) -> list[dict[str, str]]:
    """gVNIC then rdma-0..7, read from the network components' own records."""
    names = by_name(result)

    def pair(net: str, sub: str) -> dict[str, str]:
        return {"network": names[net].inputs["name"], "subnetwork": names[sub].inputs["name"]}

    return [pair("gvnic-net", "gvnic-sub")] + [pair("rdma-net", f"rdma-sub-{i}") for i in range(8)]


def test_node_networks_are_gvnic_then_rdma_in_order(b200: Result) -> None:
    assert b200.run.exports["additionalNodeNetworks"].value == expected_node_networks(b200)


def test_every_resource_is_parented_to_a_component(stack: str) -> None:
    from tests.conftest import committed

    result = committed(stack)
    component_urns = {r.urn for r in result.run.records if not r.custom}
    for record in result.run.records:
        if record.custom and not record.type.startswith("pulumi:providers:"):
            assert record.parent in component_urns, f"{record.name} escapes its component"


def test_no_resource_is_protected_in_dev(dev: Result) -> None:
    assert not any(r.protect for r in dev.run.records)


# --- GKE cluster, node pools and GPU networking per stack ---------------------------------


def test_additional_networks_are_the_network_components_names_in_order(b200: Result) -> None:
    pool = by_name(b200)["gpu-pool"].inputs
    expected = expected_node_networks(b200)
    assert pool["networkConfig"]["additionalNodeNetworkConfigs"] == expected
    assert len(expected) == 9  # nothing else: an extra network would take a GPU NIC's slot


def test_b200_and_h200_pools_follow_the_catalog(b200: Result, h200: Result) -> None:
    for result, machine, accel in (
        (b200, "a4-highgpu-8g", "nvidia-b200"),
        (h200, "a3-ultragpu-8g", "nvidia-h200-141gb"),
    ):
        node = by_name(result)["gpu-pool"].inputs["nodeConfig"]
        assert node["machineType"] == machine
        assert node["guestAccelerators"][0]["type"] == accel
        assert node["guestAccelerators"][0]["count"] == 8.0
        assert node["reservationAffinity"]["consumeReservationType"] == "SPECIFIC_RESERVATION"
        assert node["diskType"] == "hyperdisk-balanced"
        assert by_name(result)["gpu-pool"].inputs["maxPodsPerNode"] == 32.0
        ds = by_name(result)["gpu-net-gib-installer"].inputs["spec"]["template"]["spec"]
        values = ds["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"
        ][0]["matchExpressions"][0]["values"]
        assert values == [accel]


def test_dev_is_an_l4_spot_pool_without_rdma_objects(dev: Result) -> None:
    names = by_name(dev)
    node = names["gpu-pool"].inputs["nodeConfig"]
    assert node["guestAccelerators"][0]["type"] == "nvidia-l4"
    assert node["spot"] is True
    assert names["gpu-pool"].inputs["autoscaling"]["totalMinNodeCount"] == 0.0
    assert "networkConfig" not in names["gpu-pool"].inputs or not names["gpu-pool"].inputs[
        "networkConfig"
    ].get("additionalNodeNetworkConfigs")
    assert not [r for r in dev.run.records if r.type.startswith("kubernetes:networking.gke.io")]
    assert "gpu-net" not in names
    assert "interfacesAnnotation" not in dev.run.exports


def test_every_kubernetes_resource_uses_the_cluster_provider(stack: str) -> None:
    from tests.conftest import committed

    result = committed(stack)
    provider = by_name(result)["gke-k8s"]
    kube = [r for r in result.run.records if r.type.startswith("kubernetes:")]
    assert all(r.provider == provider.urn for r in kube)
    assert provider.inputs["kubeconfig"] == "[secret]"


@pytest.mark.parametrize(("stack", "forget_unreachable"), [("dev", True), ("b200", False)])
def test_kubernetes_provider_names_its_cluster_from_config(
    stack: str, forget_unreachable: bool
) -> None:
    """An unknown (first preview) or rotated kubeconfig must not replace every Kubernetes
    object: the provider is identified by a name known before the cluster exists."""
    preview = by_name(run_stack(stack, known=False))["gke-k8s"].inputs
    assert preview["kubeconfig"] == "[secret]"  # unknown and secret during a first preview
    values = read_stack(read_project(REPO), REPO / f"Pulumi.{stack}.yaml").values
    cfg = load_stack_config(values, stack)
    assert preview["clusterIdentifier"] == f"gke_{cfg.project}_{cfg.region}_{cfg.names.cluster}"
    # Production never drops the state of a briefly unreachable cluster; dev (or a stack whose
    # protect was turned off for teardown) may forget the objects of a cluster that is gone.
    assert preview["deleteUnreachable"] == str(forget_unreachable).lower()  # provider config: text
    assert cfg.protect is not forget_unreachable


def test_cluster_outputs(b200: Result) -> None:
    exports = b200.run.exports
    assert exports["clusterName"].value == "nemo-rl-b200"
    assert exports["clusterLocation"].value == "us-central1"
    assert exports["kubeconfig"].secret is True
    assert exports["kubeconfig"].shown == "[secret]"
    assert exports["gpuNodePool"].value == "gpu-b200"
    assert exports["getCredentialsCommand"].value.startswith(
        "gcloud container clusters get-credentials nemo-rl-b200 --location us-central1"
    )
    annotation = exports["interfacesAnnotation"].value
    assert '"network":"rdma-7"' in annotation
    assert '"network":"gvnic-1"' in annotation


def test_lustre_port_agreement_in_production(b200: Result) -> None:
    # Recommended default: instance without GKE support (port 988), legacy flag off, nodes at
    # 1.33.2-gke.4780000+ (the stack's 1.35 minimum covers it); one NIC on GPU nodes.
    addons = by_name(b200)["gke-cluster"].inputs["addonsConfig"]
    assert addons["lustreCsiDriverConfig"] == {
        "enabled": True,
        "enableLegacyLustrePort": False,
        "disableMultiNic": True,
    }


def test_production_cluster_is_protected_dev_is_not(b200: Result, dev: Result) -> None:
    assert by_name(b200)["gke-cluster"].protect is True
    assert by_name(b200)["gke-cluster"].inputs["deletionProtection"] is True
    assert by_name(dev)["gke-cluster"].inputs["deletionProtection"] is False


def test_summary_counts_gpus_and_nics(b200: Result, dev: Result) -> None:
    assert b200.summary.total_gpus == 16
    assert b200.summary.rdma_nics_per_gpu_node == 8
    assert dev.summary.total_gpus == 2  # autoscaling max 2 x 1 L4
    assert dev.summary.rdma_nics_per_gpu_node == 0


# --- storage -----------------------------------------------------------------------------


def _ancestors(result: Result) -> dict[str, set[str]]:
    """URN -> every URN it transitively depends on (a dependency on a component means all of
    the component's descendants, as the engine waits for them)."""
    records = {r.urn: r for r in result.run.records}
    descendants: dict[str, set[str]] = {urn: set() for urn in records}
    for r in result.run.records:
        parent = r.parent
        while parent in records:
            descendants[parent].add(r.urn)
            parent = records[parent].parent
    direct = {
        urn: {d for dep in r.dependencies if dep in records for d in {dep} | descendants[dep]}
        for urn, r in records.items()
    }
    closure: dict[str, set[str]] = {}

    def visit(urn: str) -> set[str]:
        if urn not in closure:
            closure[urn] = set()
            for dep in direct[urn]:
                closure[urn] |= {dep} | visit(dep)
        return closure[urn]

    for urn in records:
        visit(urn)
    return closure


@pytest.mark.parametrize("stack_name", ["b200", "h200"])
def test_lustre_builds_in_parallel_with_the_cluster(stack_name: str) -> None:
    from tests.conftest import committed

    result = committed(stack_name)
    deps = _ancestors(result)
    names = by_name(result)
    lustre = names["lustre-instance"].urn
    gke = {names[n].urn for n in ("gke-cluster", "gpu-pool", "system-pool")}
    assert not deps[lustre] & gke, "Lustre must not wait for the cluster or its pools"
    for urn in gke:
        assert lustre not in deps[urn], "the cluster and pools must not wait for Lustre"
    # ... while the PV does wait for both the instance and (through the provider) the cluster
    assert lustre in deps[names["lustre-volume-pv"].urn]


def test_dev_has_a_bucket_and_no_lustre(dev: Result) -> None:
    names = by_name(dev)
    assert not [r for r in dev.run.records if r.type == "gcp:lustre/instance:Instance"]
    assert not [r for r in dev.run.records if "servicenetworking" in r.type]
    assert names["data-bucket"].inputs["forceDestroy"] is True  # throwaway stack
    assert names["bucket-volume-pvc"].inputs["metadata"]["namespace"] == "nemo-rl"
    assert dev.run.exports["bucketClaim"].value == "bucket-data"
    assert dev.summary.lustre == []


def test_production_lustre_is_protected_and_summarized(b200: Result) -> None:
    names = by_name(b200)
    assert names["lustre-instance"].protect is True
    assert b200.summary.lustre == [
        {
            "name": "nemo-rl-b200-lustre",
            "capacityGib": 18000,
            "throughputPerTib": 500,
            "aggregateMBps": 8789,
        }
    ]
    assert "data-bucket" not in names


def test_lustre_may_take_as_long_to_create_as_the_provider_allows(b200: Result) -> None:
    # Below the provider's own 120 minutes, a slow tier fails the `up` while the instance
    # goes on creating (it used to be 90).
    timeout = by_name(b200)["lustre-instance"].create_timeout
    assert timeout.endswith("m"), timeout
    assert int(timeout[:-1]) >= 120, timeout


def test_gke_support_lustre_flips_port_cluster_flag_and_instance_together(tmp_path: Path) -> None:
    lustre = {"enabled": True, "capacityGib": 18000, "throughput": 500, "gkeSupport": True}
    result = run_stack("b200", tmp_path, variant("b200", {"nemo-rl-gke:lustre": lustre}))
    names = by_name(result)
    assert names["lustre-instance"].inputs["gkeSupportEnabled"] is True
    assert names["lustre-lnet"].inputs["allows"] == [{"protocol": "tcp", "ports": ["6988"]}]
    addons = names["gke-cluster"].inputs["addonsConfig"]
    assert addons["lustreCsiDriverConfig"]["enableLegacyLustrePort"] is True


# --- Ray platform --------------------------------------------------------------------------


def _raycluster(result: Result) -> dict[str, Any]:
    spec: dict[str, Any] = by_name(result)["ray-cluster"].inputs["spec"]
    return spec


def _worker(result: Result) -> dict[str, Any]:
    group: dict[str, Any] = _raycluster(result)["workerGroupSpecs"][0]
    return group


def _env(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


@pytest.mark.parametrize(
    ("stack_name", "tuner", "accel"),
    [
        ("b200", "tuner_config_a4.txtpb", "nvidia-b200"),
        ("h200", "tuner_config_a3u.txtpb", "nvidia-h200-141gb"),
    ],
)
def test_rdma_workers_are_wired_per_gpu(stack_name: str, tuner: str, accel: str) -> None:
    from tests.conftest import committed

    result = committed(stack_name)
    worker = _worker(result)
    template = worker["template"]
    annotations = template["metadata"]["annotations"]
    # the annotation is the GpuNetworking output, not retyped
    assert (
        annotations["networking.gke.io/interfaces"]
        == result.run.exports["interfacesAnnotation"].value
    )
    assert annotations["networking.gke.io/default-interface"] == "eth0"
    spec = template["spec"]
    assert spec["nodeSelector"] == {"cloud.google.com/gke-accelerator": accel}
    assert spec["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    ]
    (container,) = spec["containers"]
    env = _env(container)
    # KubeRay runs the args before `ray start`: Google's gIB script and this GPU's tuner, NeMo
    # RL's NUMA map, and the container's end when a setup step fails.
    assert container["args"] == [f"{gib_shell_setup(tuner)} && {numa_affinity_setup()} || exit 1"]
    assert container["terminationMessagePolicy"] == "FallbackToLogsOnError"
    assert "LD_LIBRARY_PATH" not in env  # the image's library path is extended, not replaced
    assert env["RAY_memory_monitor_refresh_ms"] == "0"
    # The GPUs explicitly and the gIB resource, through the group's typed field; KubeRay
    # refuses a group that also sets them in rayStartParams (utils/validation.go).
    assert worker["resources"] == {"GPU": "8", "nemo_rl_gib": "1"}
    assert not {"num-cpus", "num-gpus", "memory", "resources"} & set(worker["rayStartParams"])
    # The object store sized with /dev/shm (tests/planning/test_ray_object_store.py asks Ray).
    assert worker["rayStartParams"]["object-store-memory"] == str(186 * 2**30)
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "8"
    assert container["resources"]["requests"] == container["resources"]["limits"]
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert volumes["nvidia"]["hostPath"]["path"] == "/home/kubernetes/bin/nvidia"
    assert volumes["gib"]["hostPath"]["path"] == "/home/kubernetes/bin/gib"
    assert volumes["dshm"]["emptyDir"]["medium"] == "Memory"
    assert volumes["data"]["persistentVolumeClaim"]["claimName"] == "lustre-data"
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert {"/usr/local/nvidia", "/usr/local/gib", "/dev/shm", "/data"} <= mounts
    assert env["HF_HOME"].startswith("/data/")
    assert (worker["replicas"], worker["minReplicas"], worker["maxReplicas"]) == (2.0, 2.0, 2.0)
    assert _raycluster(result)["enableInTreeAutoscaling"] is False


def test_dev_workers_have_no_rdma_and_mount_the_bucket(dev: Result) -> None:
    worker = _worker(dev)
    annotations = worker["template"]["metadata"]["annotations"]
    assert "networking.gke.io/interfaces" not in annotations
    assert annotations["gke-gcsfuse/volumes"] == "true"  # the GCS FUSE sidecar
    (container,) = worker["template"]["spec"]["containers"]
    assert not any(k.startswith("NCCL_") for k in _env(container))
    assert worker["resources"] == {"GPU": "1"}  # no gIB resource without RDMA
    assert not {"num-cpus", "num-gpus", "memory", "resources"} & set(worker["rayStartParams"])
    volumes = {v["name"] for v in worker["template"]["spec"]["volumes"]}
    assert "gib" not in volumes
    assert "nvidia" not in volumes
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert (worker["minReplicas"], worker["maxReplicas"]) == (0.0, 2.0)  # the pool's bounds
    assert _raycluster(dev)["enableInTreeAutoscaling"] is True


def test_head_runs_on_the_system_pool_with_the_pinned_image(b200: Result) -> None:
    from planning.versions import VERSIONS

    spec = _raycluster(b200)
    assert spec["rayVersion"] == VERSIONS.ray_version.value
    head = spec["headGroupSpec"]["template"]["spec"]
    assert head["nodeSelector"] == {"nemo-rl-gke/pool": "system"}
    assert head["serviceAccountName"] == "nemo-rl-b200-workload"  # the stack's own KSA
    (container,) = head["containers"]
    assert container["image"] == VERSIONS.nemo_rl_image.value
    assert container["resources"]["limits"] == {"cpu": "12", "memory": "96Gi"}  # S5's head
    assert {"containerPort": 8265.0, "name": "dashboard"} in container["ports"]
    # Ray's OOM killer off on the head too (NeMo RL's Kubernetes guide).
    assert _env(container)["RAY_memory_monitor_refresh_ms"] == "0"


def test_kuberay_helm_release_and_crd_job(b200: Result) -> None:
    from planning.versions import VERSIONS

    names = by_name(b200)
    release = names["kuberay-release"].inputs
    assert release["chart"] == "kuberay-operator"
    assert release["version"] == VERSIONS.kuberay_chart.value == "1.7.0"
    assert release["repositoryOpts"] == {"repo": "https://ray-project.github.io/kuberay-helm/"}
    assert release["skipCrds"] is True
    assert release["values"]["nodeSelector"] == {"nemo-rl-gke/pool": "system"}
    job = names["kuberay-crds"]
    assert job.urn in names["kuberay-release"].dependencies  # CRDs first, then the chart
    args = job.inputs["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[:3] == ["apply", "--server-side", "--force-conflicts"]
    urls = [a for a in args if a.startswith("https://")]
    assert urls
    assert all("/kuberay/v1.7.0/" in u for u in urls)
    assert job.inputs["metadata"]["name"] == "kuberay-crds-v1-7-0"
    assert "rayOperatorConfigs" not in names["gke-cluster"].inputs["addonsConfig"]
    # the RayCluster waits for the operator
    assert names["kuberay-release"].urn in names["ray-cluster"].dependencies


def test_gke_ray_addon_replaces_the_helm_release(tmp_path: Path) -> None:
    result = run_stack(
        "dev", tmp_path, variant("dev", {"nemo-rl-gke:ray": {"operator": "gke-addon"}})
    )
    names = by_name(result)
    assert not [r for r in result.run.records if r.type == "kubernetes:helm.sh/v3:Release"]
    assert names["gke-cluster"].inputs["addonsConfig"]["rayOperatorConfigs"] == [{"enabled": True}]
    assert "ray-cluster" in names


def test_no_rayjob_unless_enabled(stack: str) -> None:
    from tests.conftest import committed

    result = committed(stack)
    assert not [r for r in result.run.records if r.type.endswith(":RayJob")]
    assert "grpoSubmitCommand" in result.run.exports


def test_a_job_on_an_autoscaling_pool_brings_up_its_own_workers(tmp_path: Path) -> None:
    """dev scales its GPU pool from zero, and NeMo RL checks the GPUs before asking for any:
    the RayJob carries a cluster of exactly the run's workers, deleted when the run ends."""
    result = run_stack(
        "dev", tmp_path, variant("dev", {"nemo-rl-gke:ray": {"job": {"enabled": True, "steps": 3}}})
    )
    job = by_name(result)["ray-job"]
    spec = job.inputs["spec"]
    assert "clusterSelector" not in spec
    # The pool goes back to zero when the run ends (a failed run's head stays a while:
    # tests/program/test_failed_runs.py).
    rules = spec["deletionStrategy"]["deletionRules"]
    assert {r["policy"] for r in rules} == {"DeleteCluster", "DeleteWorkers"}
    # A preempted Spot node fails the run; KubeRay runs it again on a new cluster, and the run
    # resumes from its checkpoints (on by default, in the run's own folder).
    assert spec["backoffLimit"] == 3
    # Workers that never come up (no capacity, an image that does not pull) fail the job.
    assert spec["preRunningDeadlineSeconds"] == 3600
    assert "checkpointing.enabled=true" in spec["entrypoint"]
    assert "checkpointing.checkpoint_dir=/data/nemo-rl/runs/grpo-gsm8k-" in spec["entrypoint"]
    (workers,) = spec["rayClusterSpec"]["workerGroupSpecs"]
    assert (workers["replicas"], workers["minReplicas"], workers["maxReplicas"]) == (2.0, 2.0, 2.0)
    assert spec["rayClusterSpec"]["enableInTreeAutoscaling"] is False
    assert "examples/run_grpo.py --config examples/configs/grpo_smoke.yaml" in spec["entrypoint"]
    assert "policy.model_name=Qwen/Qwen3-0.6B" in spec["entrypoint"]  # small model on dev
    assert "grpo.max_num_steps=3" in spec["entrypoint"]
    assert "cluster.num_nodes=2" in spec["entrypoint"]  # = the job cluster's workers
    assert "cluster.gpus_per_node=1" in spec["entrypoint"]
    assert by_name(result)["ray-cluster"].urn in job.dependencies


def test_a_job_on_a_fixed_reserved_pool_uses_the_stack_s_raycluster(tmp_path: Path) -> None:
    config = variant(
        "b200",
        {"nemo-rl-gke:ray": {"job": {"enabled": True}}, "nemo-rl-gke:hfToken": {"secure": "v1:x"}},
    )
    records = by_name(run_stack("b200", tmp_path, config))
    spec = records["ray-job"].inputs["spec"]
    assert spec["clusterSelector"] == {"ray.io/cluster": "nemo-rl"}
    assert "rayClusterSpec" not in spec
    assert "backoffLimit" not in spec  # KubeRay refuses it with clusterSelector
    assert spec["preRunningDeadlineSeconds"] == 3600
    workers = records["ray-cluster"].inputs["spec"]["workerGroupSpecs"][0]["replicas"]
    assert f"cluster.num_nodes={int(workers)}" in spec["entrypoint"]
    meta = records["ray-job"].inputs["metadata"]
    run_name = meta["annotations"]["nemo-rl-gke/run"]
    assert meta["name"] == run_name  # the RayJob is named after the run
    assert (
        f"checkpointing.checkpoint_dir=/data/nemo-rl/runs/{run_name}/checkpoints"
        in spec["entrypoint"]
    )


def test_gated_model_job_without_token_fails_early(tmp_path: Path) -> None:
    from stack_config import InvalidStackConfig

    config = variant("b200", {"nemo-rl-gke:ray": {"job": {"enabled": True}}})
    with pytest.raises(InvalidStackConfig, match=r"nemo-rl-gke:hfToken: required because") as info:
        run_stack("b200", tmp_path, config)
    assert "meta-llama/Llama-3.1-8B-Instruct is a gated" in str(info.value)
    wandb = variant("dev", {"nemo-rl-gke:ray": {"job": {"enabled": True, "wandb": True}}})
    with pytest.raises(InvalidStackConfig, match="nemo-rl-gke:wandbApiKey"):
        run_stack("dev", tmp_path, wandb)


def test_tokens_become_a_secret_and_never_appear_in_output(tmp_path: Path) -> None:
    from pulumi_offline.config_values import SECRET_PLACEHOLDER

    config = variant(
        "b200",
        {
            "nemo-rl-gke:ray": {"job": {"enabled": True, "wandb": True}},
            "nemo-rl-gke:hfToken": {"secure": "v1:a"},
            "nemo-rl-gke:wandbApiKey": {"secure": "v1:b"},
        },
    )
    result = run_stack("b200", tmp_path, config)
    secret = by_name(result)["ray-tokens"]
    assert secret.inputs["stringData"] == "[secret]"
    raw = str(secret.raw_inputs)
    assert SECRET_PLACEHOLDER in raw  # the value is there, wrapped as a secret ...
    assert SECRET_PLACEHOLDER not in json.dumps(result.as_json())  # ... and never printed
    # The pods see the token as a file of the Secret (the driver exports it), never in their
    # environment (fixed at start, and checkov's CKV_K8S_35).
    worker = _worker(result)["template"]["spec"]
    assert "HF_TOKEN" not in _env(worker["containers"][0])
    assert {"name": "tokens", "secret": {"secretName": "nemo-rl-tokens", "optional": True}} in (
        worker["volumes"]
    )
    assert "logger.wandb_enabled=true" in by_name(result)["ray-job"].inputs["spec"]["entrypoint"]


def test_ray_outputs(b200: Result) -> None:
    exports = b200.run.exports
    assert exports["rayHeadService"].value == "nemo-rl-head-svc"
    assert (
        exports["rayDashboardCommand"].value
        == "kubectl -n nemo-rl port-forward svc/nemo-rl-head-svc 8265:8265"
    )
    fetch = "kubectl -n nemo-rl get secret nemo-rl -o jsonpath='{.data.auth_token}' | base64 -d"
    assert exports["rayDashboardTokenCommand"].value == fetch
    curves = exports["grpoCurvesCommand"].value
    assert curves.startswith('RUN_LOGS="${RUN_LOGS:-/data/nemo-rl/runs/grpo-gsm8k-')
    assert curves.endswith('port-forward "$HEAD" 6006:6006')
    # Ray's client sends the dashboard's token when told the cluster uses tokens.
    assert exports["grpoSubmitCommand"].value.startswith(
        f'RAY_AUTH_MODE=token RAY_AUTH_TOKEN="$({fetch})" ray job submit --address'
        " http://localhost:8265"
    )


# --- policy pack over the committed stacks --------------------------------------------------


def test_every_committed_stack_passes_the_whole_pack(stack: str) -> None:
    from policies.pack import POLICIES
    from tests.conftest import committed

    result = committed(stack)
    assert [p.name for p in result.policies] == [p.name for p in POLICIES]
    assert result.violations == []


def test_dev_relies_on_its_policy_config(tmp_path: Path) -> None:
    """Without dev's config, the data-protection policies flag its throwaway resources, and
    the queue policy its unqueued RayCluster (dev runs without Kueue unless asked)."""
    result = run_stack(
        "dev", tmp_path, policy_config={"gpu-quota": {"quotas": {"PREEMPTIBLE_NVIDIA_L4_GPUS": 2}}}
    )
    flagged = {(v.policy, v.urn.rsplit("::", 1)[-1] if v.urn else None) for v in result.violations}
    assert flagged == {
        ("protect-stateful-resources", "gke-cluster"),
        ("protect-stateful-resources", "data-bucket"),
        ("bucket-no-force-destroy", "data-bucket"),
        ("gpu-workloads-queued", "ray-cluster"),
    }


@pytest.mark.parametrize(("stack", "single_nic"), [("b200", True), ("h200", True)])
def test_lustre_uses_one_nic_on_gpu_nodes_with_nics_outside_the_cluster_vpc(
    stack: str, single_nic: bool
) -> None:
    """From GKE 1.35.2-gke.1842000 the Lustre CSI driver uses every standard NIC and needs
    them in one VPC; A4/A3 Ultra nodes' eth1 is in the gVNIC VPC (no access to Lustre)."""
    from tests.conftest import committed

    cluster = by_name(committed(stack))["gke-cluster"].inputs
    lustre = cluster["addonsConfig"]["lustreCsiDriverConfig"]
    assert lustre["enabled"] is True
    assert lustre.get("disableMultiNic") is single_nic


def test_lustre_on_a_gpu_without_extra_nics_keeps_multi_nic(tmp_path: Path) -> None:
    config = variant("dev", {"nemo-rl-gke:lustre": {"enabled": True}})
    cluster = by_name(run_stack("dev", tmp_path, config))["gke-cluster"].inputs
    lustre = cluster["addonsConfig"]["lustreCsiDriverConfig"]
    assert lustre["enabled"] is True
    assert "disableMultiNic" not in lustre


def _iam_bindings(result: Result) -> set[tuple[str, str, str]]:
    """(project or bucket, role, member) of every IAM binding the stack declares."""
    bindings = set()
    for record in result.run.records:
        if record.type in (
            "gcp:projects/iAMMember:IAMMember",
            "gcp:storage/bucketIAMMember:BucketIAMMember",
        ):
            inputs = record.inputs
            where = str(inputs.get("project") or inputs.get("bucket"))
            bindings.add((where, str(inputs["role"]), str(inputs["member"])))
    return bindings


def test_two_stacks_in_one_project_share_no_iam_binding(b200: Result, h200: Result) -> None:
    """b200 and h200 live in the same project. A binding both declared would be one binding
    in GCP, and `pulumi destroy` of either stack would remove it from the other."""
    assert (
        stack_data("b200")["config"]["gcp:project"] == stack_data("h200")["config"]["gcp:project"]
    )
    b200_bindings, h200_bindings = _iam_bindings(b200), _iam_bindings(h200)
    assert b200_bindings
    assert h200_bindings
    assert b200_bindings.isdisjoint(h200_bindings), b200_bindings & h200_bindings


def test_the_workload_principal_is_the_stack_s_own(b200: Result) -> None:
    """The principal names the project's pool, namespace and KSA, never the cluster; the KSA
    is the stack's own (<name>-workload), so is the principal."""
    ksa = by_name(b200)["workload-ksa"].inputs["metadata"]["name"]
    assert ksa == "nemo-rl-b200-workload"
    members = {m for _, _, m in _iam_bindings(b200) if m.startswith("principal://")}
    assert members == {
        "principal://iam.googleapis.com/projects/000000000000/locations/global/"
        "workloadIdentityPools/my-gcp-project-prod.svc.id.goog/subject/ns/nemo-rl/sa/"
        "nemo-rl-b200-workload"
    }


def test_enable_apis_false_leaves_the_apis_to_the_project_owner(tmp_path: Path) -> None:
    result = run_stack("dev", tmp_path, variant("dev", {"nemo-rl-gke:enableApis": False}))
    assert [r for r in result.run.records if r.type == "gcp:projects/service:Service"] == []
    assert by_name(result)["gke-cluster"].inputs["name"] == "nemo-rl-dev"


def test_stacks_reach_the_control_plane_on_its_dns_endpoint_by_default(
    b200: Result, tmp_path: Path
) -> None:
    """A CI runner has no fixed address for the authorized networks: by default Pulumi talks
    to the cluster through GKE's DNS-based endpoint (IAM-authorized)."""
    cluster = by_name(b200)["gke-cluster"].inputs
    assert cluster["controlPlaneEndpointsConfig"]["dnsEndpointConfig"] == {
        "allowExternalTraffic": True
    }
    assert b200.run.exports["getCredentialsCommand"].value.endswith(" --dns-endpoint")
    kubeconfig = json.loads(by_name(b200)["gke-k8s"].raw_inputs["kubeconfig"]["value"])
    assert kubeconfig["clusters"][0]["cluster"] == {
        "server": "https://gke-00000000000000000000000000000000-000000000000.us-central1.gke.goog"
    }
    network = {**stack_data("b200")["config"]["nemo-rl-gke:network"], "controlPlaneEndpoint": "ip"}
    ip = run_stack("b200", tmp_path, variant("b200", {"nemo-rl-gke:network": network}))
    assert by_name(ip)["gke-cluster"].inputs["controlPlaneEndpointsConfig"] == {
        "dnsEndpointConfig": {"allowExternalTraffic": False}
    }
    assert not ip.run.exports["getCredentialsCommand"].value.endswith("--dns-endpoint")


@pytest.mark.parametrize(("stack", "queued"), [("b200", True), ("dev", False)])
def test_pulumi_takes_back_the_worker_groups_kueue_wrote_on_a_queued_raycluster(
    stack: str, queued: bool
) -> None:
    """Kueue writes a queued RayCluster's worker groups when it admits it; without a forced
    apply the next change of the RayCluster fails `pulumi up` with a field conflict (seen with
    the real Kueue 0.19.2 and pulumi-kubernetes 4.25.0)."""
    from tests.conftest import committed

    (cluster,) = [r for r in committed(stack).run.records if r.name == "ray-cluster"]
    annotations = cluster.inputs["metadata"].get("annotations", {})
    assert (annotations.get("pulumi.com/patchForce") == "true") is queued
