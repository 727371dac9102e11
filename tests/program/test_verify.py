"""The acceptance gates as planned and as the program emits them (mock runtime).

What `pulumi up` does with them against a real API server and provider is in
tests/engine/test_local_cluster.py; what the scripts do with real tool output is in
tests/verify/.
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest

from planning.ray import gib_shell_setup
from planning.verify import (
    GATE_ORDER,
    GatePlan,
    GateSettings,
    StorageTarget,
    VerifyInputs,
    fio_file_size_mib,
    plan_gates,
)
from preflight.cli import Result
from program.verify import verify_inputs
from stack_config import load_stack_config
from tests.conftest import committed
from tests.harness import run_stack, stack_data, variant
from tests.program.test_order import closure, named
from tests.program.test_ray_schemas import KUBERNETES_VERSION, plain

JOB = "kubernetes:batch/v1:Job"


def config(stack: str, **changes: Any) -> Any:
    data = dict(stack_data(stack)["config"])
    for key, value in changes.items():
        data[f"nemo-rl-gke:{key}"] = value
    return load_stack_config(data, stack, set())


def gates_of(stack: str, **changes: Any) -> dict[str, GatePlan]:
    cfg = config(stack, **changes)
    return {g.gate: g for g in plan_gates(verify_inputs(cfg), cfg.gate_settings)}


def jobs(result: Result) -> dict[str, dict[str, Any]]:
    return {
        r.inputs["metadata"]["labels"]["nemo-rl-gke/gate"]: plain(r.inputs)
        for r in result.run.records
        if r.type == JOB and "nemo-rl-gke/gate" in r.inputs["metadata"].get("labels", {})
    }


def test_production_stacks_run_every_gate_in_order_dev_none() -> None:
    assert list(gates_of("b200")) == list(GATE_ORDER)
    assert list(gates_of("h200")) == list(GATE_ORDER)
    assert gates_of("dev") == {}


def test_nccl_thresholds_come_from_googles_figures_with_the_margin() -> None:
    # 85% of 344.46 (A4) and 330.16 (A3 Ultra) GB/s; Cluster Toolkit's 100 GB/s average.
    assert gates_of("b200")["nccl"].env["MIN_BUSBW_all_gather"] == "292.8"
    assert gates_of("h200")["nccl"].env["MIN_BUSBW_all_gather"] == "280.6"
    assert gates_of("b200")["nccl"].env["MIN_AVG_BUSBW_all_gather"] == "100"
    # No published all_reduce figure: reported, not judged, unless configured.
    assert "MIN_BUSBW_all_reduce" not in gates_of("b200")["nccl"].env
    tuned = gates_of(
        "b200",
        verify={
            "nccl": {"minBusBandwidthGBPerSecond": 310, "minAllReduceBusBandwidthGBPerSecond": 250}
        },
    )
    assert tuned["nccl"].env["MIN_BUSBW_all_gather"] == "310"
    assert tuned["nccl"].env["MIN_BUSBW_all_reduce"] == "250"


def test_storage_threshold_is_half_of_capacity_times_tier() -> None:
    # b200: 18000 GiB at 500 MB/s per TiB = 8789 MB/s provisioned.
    assert gates_of("b200")["storage"].env["MIN_MBPS"] == "4394"
    bigger = gates_of("b200", lustre={"enabled": True, "capacityGib": 36000, "throughput": 1000})
    assert bigger["storage"].env["MIN_MBPS"] == str(int(36000 / 1024 * 1000 * 0.5))
    dev = gates_of("dev", verify={"enabled": True})
    assert list(dev) == ["gpu-health", "storage"]  # no RDMA on L4: no rdma or nccl gate
    assert dev["storage"].env["MIN_MBPS"] == "100"
    assert dev["storage"].env["FIO_DIRECT"] == "0"


def test_fio_scratch_stays_within_a_fifth_of_the_volume() -> None:
    lustre = StorageTarget("lustre", 18000, 500)
    for nodes in (2, 64, 1000):
        size = fio_file_size_mib(lustre, nodes)
        assert size * 8 * nodes <= 18000 * 1024 * 0.2 or size == 64


def test_gates_can_be_switched_off_one_by_one_and_nccl_needs_two_nodes() -> None:
    assert "nccl" not in gates_of("b200", verify={"nccl": {"enabled": False}})
    assert "storage" not in gates_of("b200", verify={"storage": {"enabled": False}})
    assert gates_of("b200", verify={"enabled": False}) == {}
    one = gates_of("b200", gpu={"type": "b200", "nodes": 1, "capacity": "reservation",
                                "reservation": "r"})  # fmt: skip
    assert list(one) == ["gpu-health", "rdma", "storage"]
    timed = gates_of("b200", verify={"nccl": {"timeoutMinutes": 90}})
    assert timed["nccl"].timeout_seconds == 5400


def inputs() -> VerifyInputs:
    return VerifyInputs(
        gpu_type="b200", gpus_per_node=8, rdma_nics=8, nodes=2, pool="c/gpu-b200/a4/r",
        networks=("gvnic-1", "rdma-0"), worker_setup=gib_shell_setup("tuner_config_a4.txtpb"),
        diagnostic_image="diag:1", fio_image="fio:1", storage=StorageTarget("lustre", 18000, 500),
    )  # fmt: skip


def names(i: VerifyInputs, settings: GateSettings | None = None) -> dict[str, str]:
    return {g.gate: g.job_name for g in plan_gates(i, settings or GateSettings())}


def test_a_gate_reruns_exactly_when_what_it_proves_changes() -> None:
    base = names(inputs())
    assert names(inputs()) == base  # deterministic: an unchanged stack plans no new run
    setup = names(replace(inputs(), worker_setup=gib_shell_setup("tuner_config_a3u.txtpb")))
    assert setup["nccl"] != base["nccl"]
    assert setup["rdma"] != base["rdma"]
    assert setup["gpu-health"] == base["gpu-health"]
    assert setup["storage"] == base["storage"]
    image = names(replace(inputs(), diagnostic_image="diag:2"))
    assert image["storage"] == base["storage"]
    assert image["nccl"] != base["nccl"]
    pool = names(replace(inputs(), pool="c/gpu-b200/a4/other"))
    assert all(pool[g] != base[g] for g in base)
    nodes = names(replace(inputs(), nodes=4))
    assert all(nodes[g] != base[g] for g in base)
    tier = names(replace(inputs(), storage=StorageTarget("lustre", 36000, 500)))
    assert tier["storage"] != base["storage"]
    assert tier["nccl"] == base["nccl"]
    stricter = names(inputs(), GateSettings(nccl_min_busbw=320.0))
    assert stricter["nccl"] != base["nccl"]
    assert stricter["rdma"] == base["rdma"]


def test_gate_jobs_fail_fast_wait_long_enough_and_rerun_when_unready(b200: Result) -> None:
    # The platform's gates; the job NCCL gate runs on the RayCluster (test_job_nccl_gate.py).
    assert set(jobs(b200)) == {*GATE_ORDER, "job-nccl"}
    found = {gate: job for gate, job in jobs(b200).items() if gate in GATE_ORDER}
    plans = gates_of("b200")
    for gate, job in found.items():
        spec = job["spec"]
        assert spec["backoffLimit"] == 0
        assert spec["completionMode"] == "Indexed"
        assert spec["completions"] == spec["parallelism"] == 2
        assert spec["activeDeadlineSeconds"] == plans[gate].timeout_seconds
        assert job["metadata"]["annotations"]["pulumi.com/replaceUnready"] == "true"
        assert job["metadata"]["name"] == plans[gate].job_name
        (container,) = spec["template"]["spec"]["containers"]
        assert container["command"] == [plans[gate].interpreter, f"/gates/{plans[gate].script}"]
        assert spec["template"]["spec"]["automountServiceAccountToken"] is False


def test_gates_run_in_order_after_the_gpu_objects_and_before_the_raycluster(
    b200: Result,
) -> None:
    waits = closure(b200)
    order = [named(b200, f"verify-{g}").urn for g in GATE_ORDER]
    for earlier, later in itertools.pairwise(order):
        assert earlier in waits[later]
    first = order[0]
    for name in ("gpu-net-network-rdma-7", "gpu-net-params-rdma-7", "lustre-volume-pvc",
                 "gpu-pool"):  # fmt: skip
        assert named(b200, name).urn in waits[first], name
    assert order[-1] in waits[named(b200, "ray-cluster").urn]


def worker_template(result: Result) -> dict[str, Any]:
    (cluster,) = [
        plain(r.inputs) for r in result.run.records if r.inputs.get("kind") == "RayCluster"
    ]
    template: dict[str, Any] = cluster["spec"]["workerGroupSpecs"][0]["template"]
    return template


def test_rdma_and_nccl_gate_pods_are_shaped_like_the_ray_workers(b200: Result) -> None:
    worker = worker_template(b200)
    (ray_container,) = worker["spec"]["containers"]
    for gate in ("rdma", "nccl"):
        template = jobs(b200)[gate]["spec"]["template"]
        for key in ("networking.gke.io/interfaces", "networking.gke.io/default-interface"):
            assert (
                template["metadata"]["annotations"][key] == worker["metadata"]["annotations"][key]
            )
        host_paths = [v for v in template["spec"]["volumes"] if "hostPath" in v]
        assert host_paths == [v for v in worker["spec"]["volumes"] if "hostPath" in v]
        (container,) = template["spec"]["containers"]
        env = {e["name"]: e.get("value") for e in container["env"]}
        # The worker's setup word for word (the worker then writes NeMo RL's NUMA map and
        # ends its container when a step failed).
        assert ray_container["args"][0].startswith(env["GPU_SETUP"] + " && ")
        assert container["securityContext"] == ray_container["securityContext"]
        assert container["resources"]["limits"]["nvidia.com/gpu"] == "8"
        assert template["spec"]["nodeSelector"] == worker["spec"]["nodeSelector"]
        assert template["spec"]["tolerations"] == worker["spec"]["tolerations"]
    nccl = jobs(b200)["nccl"]["spec"]["template"]["spec"]
    assert nccl["subdomain"] == jobs(b200)["nccl"]["metadata"]["name"]


def test_gate_objects_match_kubernetes_openapi(b200: Result) -> None:
    verify = [
        plain(r.inputs)
        for r in b200.run.records
        if r.type.startswith("kubernetes:") and "verify" in r.name
    ]
    assert sorted(o["kind"] for o in verify) == ["ConfigMap", "Job", "Job", "Job", "Job", "Service"]
    for obj in verify:
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
    broken = jobs(b200)["nccl"]
    broken["spec"]["completions"] = "two"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, KUBERNETES_VERSION, strict=True)


def test_the_scripts_configmap_carries_every_gate_script(b200: Result) -> None:
    (configmap,) = [
        plain(r.inputs)
        for r in b200.run.records
        if r.inputs.get("kind") == "ConfigMap" and r.name == "verify-scripts"
    ]
    shipped = sorted(
        p.name for p in (Path(__file__).resolve().parents[2] / "verify" / "gates").glob("*.sh")
    )
    assert sorted(configmap["data"]) == shipped
    for gate, job in jobs(b200).items():
        if gate not in GATE_ORDER:
            continue
        (gates_volume,) = [
            v for v in job["spec"]["template"]["spec"]["volumes"] if v["name"] == "gates"
        ]
        assert gates_volume["configMap"]["name"] == configmap["metadata"]["name"]


def test_verify_outputs_point_at_the_results(b200: Result, dev: Result) -> None:
    assert b200.run.exports["verifyCommand"].value == "make verify STACK=b200"
    assert set(b200.run.exports["verifyJobs"].value) == {*GATE_ORDER, "job-nccl"}
    assert "verifyJobs" not in dev.run.exports


def test_dev_with_verify_on_mounts_the_bucket_with_gcsfuse(tmp_path: Path) -> None:
    result = run_stack("dev", tmp_path, variant("dev", {"nemo-rl-gke:verify": {"enabled": True}}))
    storage = jobs(result)["storage"]["spec"]["template"]
    assert storage["metadata"]["annotations"]["gke-gcsfuse/volumes"] == "true"
    assert set(jobs(result)) == {"gpu-health", "storage"}
    _ = committed  # the committed stacks are cached by conftest


def test_every_gate_pod_holds_its_verdict_long_enough_to_be_read(b200: Result) -> None:
    """A native sidecar keeps each gate pod Running for a few seconds after the gate ended, so
    pulumi-kubernetes reads the verdict before the Job fails (engine tests: the update's
    error carries the gate's line)."""
    for gate, job in jobs(b200).items():
        pod = job["spec"]["template"]["spec"]
        (holder,) = pod["initContainers"]
        assert holder["restartPolicy"] == "Always", gate
        assert holder["image"] == pod["containers"][0]["image"]
        script = holder["command"][-1]
        assert "trap 'sleep 5; exit 0' TERM" in script
        assert holder["securityContext"]["runAsNonRoot"] is True
        # The drain fits in the pod's grace period (the kubelet's default, 30 s).
        assert pod.get("terminationGracePeriodSeconds", 30) > 5
