"""gpu-workloads-queued and queue-gpu-quota, on hand-made plans and on the stacks' own."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from planning.resource_types import CLUSTER_QUEUE, NODE_POOL, RESOURCE_FLAVOR
from policies.job_queue import gpu_workloads_queued, gpus_requested, queue_gpu_quota
from preflight.cli import Result
from preflight.recorder import Record
from tests.harness import REPO, run_stack, variant
from tests.policies.helpers import STACK, record, run

RAY = "kubernetes:ray.io/v1:RayCluster"
JOB = "kubernetes:batch/v1:Job"


def gpu_pod(gpus: float = 8.0) -> dict[str, Any]:
    return {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": gpus}}}]}


def raycluster(labels: dict[str, str] | None = None, namespace: str = "nemo-rl") -> Record:
    spec = {
        "headGroupSpec": {"template": {"spec": {"containers": [{"name": "head"}]}}},
        "workerGroupSpecs": [{"groupName": "w", "template": {"spec": gpu_pod()}}],
    }
    metadata = {"name": "nemo-rl", "namespace": namespace, "labels": labels or {}}
    return record(RAY, "ray-cluster", {"metadata": metadata, "spec": spec})


QUEUED = {"kueue.x-k8s.io/queue-name": "nemo-rl"}


def gate(gpus: float = 8.0) -> Record:
    props = {
        "metadata": {"name": "verify-nccl-1", "namespace": "nemo-rl"},
        "spec": {"template": {"spec": gpu_pod(gpus)}},
    }
    return record(JOB, "verify-nccl", props)


def test_a_queued_raycluster_passes() -> None:
    assert run(gpu_workloads_queued, [raycluster(QUEUED)]) == []


def test_an_unlabelled_gpu_workload_is_refused() -> None:
    (violation,) = run(gpu_workloads_queued, [raycluster()])
    assert violation.message.startswith(
        "RayCluster 'ray-cluster': requests nvidia.com/gpu outside the job queue"
    )
    assert violation.enforcement_level == "mandatory"


def test_stacks_without_a_queue_opt_out() -> None:
    assert run(gpu_workloads_queued, [raycluster()], {"required": False}) == []


def test_gates_are_a_reviewed_exception_by_name() -> None:
    (violation,) = run(gpu_workloads_queued, [gate()])
    assert violation.message.startswith("Job 'verify-nccl': requests nvidia.com/gpu outside")
    assert run(gpu_workloads_queued, [gate()], {"exempt": ["verify-nccl"]}) == []


def test_cpu_only_work_needs_no_queue() -> None:
    assert run(gpu_workloads_queued, [gate(gpus=0.0)]) == []


def test_the_committed_configs_exempt_exactly_the_gpu_gates(b200: Result) -> None:
    gpu_jobs = sorted(
        r.name for r in b200.run.records if r.type == JOB and gpus_requested(JOB, r.inputs)
    )
    for stack in ("b200", "h200"):
        config = json.loads((REPO / "policies" / "config" / f"{stack}.json").read_text())
        assert sorted(config["gpu-workloads-queued"]["exempt"]) == gpu_jobs


def pool(nodes: float = 2.0, accel: str = "nvidia-b200") -> Record:
    props = {
        "name": "gpu-b200",
        "nodeCount": nodes,
        "nodeLocations": ["us-central1-b"],
        "nodeConfig": {
            "machineType": "a4-highgpu-8g",
            "labels": {"nemo-rl-gke/pool": "gpu"},
            "guestAccelerators": [{"type": accel, "count": 8.0}],
        },
    }
    return record(NODE_POOL, "gpu-pool", props)


def flavor(labels: dict[str, str]) -> Record:
    return record(
        RESOURCE_FLAVOR,
        "flavor",
        {"metadata": {"name": "gpu-b200"}, "spec": {"nodeLabels": labels}},
    )


def cluster_queue(gpus: Any) -> Record:
    resources = [
        {"name": "cpu", "nominalQuota": "1"},
        {"name": "nvidia.com/gpu", "nominalQuota": gpus},
    ]
    spec = {
        "resourceGroups": [
            {
                "coveredResources": ["cpu", "nvidia.com/gpu"],
                "flavors": [{"name": "gpu-b200", "resources": resources}],
            }
        ]
    }
    return record(CLUSTER_QUEUE, "queue-cluster-queue", {"metadata": {"name": "cq"}, "spec": spec})


ACCEL = {"cloud.google.com/gke-accelerator": "nvidia-b200"}


def test_a_quota_within_the_pool_passes() -> None:
    assert run(queue_gpu_quota, [pool(), flavor(ACCEL), cluster_queue(16.0)]) == []
    by_pool = {"cloud.google.com/gke-nodepool": "gpu-b200", "nemo-rl-gke/pool": "gpu"}
    assert run(queue_gpu_quota, [pool(), flavor(by_pool), cluster_queue(16.0)]) == []


def test_a_quota_above_the_pool_is_refused() -> None:
    (violation,) = run(queue_gpu_quota, [pool(), flavor(ACCEL), cluster_queue(24.0)])
    assert (
        "promises 24 GPUs on flavor 'gpu-b200', more than its node pools hold (gpu-pool: 16 = 16)"
        in violation.message
    )
    assert violation.message.startswith("ClusterQueue 'queue-cluster-queue'")


def test_a_flavor_matching_no_pool_is_refused() -> None:
    (violation,) = run(
        queue_gpu_quota, [pool(accel="nvidia-h200-141gb"), flavor(ACCEL), cluster_queue(16.0)]
    )
    assert "match no node pool of this stack" in violation.message


def test_a_first_preview_judges_the_queue_from_what_its_component_publishes() -> None:
    """Before its cluster exists a ClusterQueue has no state; its JobQueue component publishes
    the objects it creates (the same values it sends)."""
    full = cluster_queue(24.0)
    component = record(
        "nemo:apps:JobQueue", "queue", {"objects": {"queue-cluster-queue": full.state}}
    )
    component = replace(component, custom=False)
    empty = replace(
        full, state={}, parent=component.urn, object=record(CLUSTER_QUEUE, "x", {}).object
    )
    (violation,) = run(queue_gpu_quota, [pool(), flavor(ACCEL), component, empty])
    assert "promises 24 GPUs" in violation.message
    orphan = replace(empty, parent=STACK)
    (note,) = run(queue_gpu_quota, [pool(), flavor(ACCEL), orphan])
    assert note.enforcement_level == "advisory"
    assert "during preview" in note.message


def test_b200_passes_in_a_first_preview_and_fails_without_its_queue(tmp_path: Path) -> None:
    """On b200's own plan, as a first preview sees it: the queue is judged (no note), and with
    the queue turned off the RayCluster is reported (the gates are the reviewed exception)."""
    first = run_stack("b200", known=False)
    assert [
        v for v in first.violations if v.policy in ("queue-gpu-quota", "gpu-workloads-queued")
    ] == []
    bad = run_stack(
        "b200",
        tmp_path,
        variant(
            "b200",
            {"nemo-rl-gke:kueue": {"enabled": False}},
            drop=("nemo-rl-gke:health",),
        ),
        known=False,
    )
    found = [v.message.split(":")[0] for v in bad.violations if v.policy == "gpu-workloads-queued"]
    assert found == ["RayCluster 'ray-cluster'"]
