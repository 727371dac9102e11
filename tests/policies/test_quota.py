"""gpu-quota: counts autoscaling maxima per quota metric and region against the config."""

from __future__ import annotations

from typing import Any

from planning.resource_types import NODE_POOL
from policies.quota import gpu_quota, metric_for
from tests.policies.helpers import UNKNOWN_VALUE, record, run


def pool(
    name: str = "gpu",
    *,
    accel: str = "nvidia-b200",
    count: float = 8.0,
    nodes: float | None = 2.0,
    autoscaling: dict[str, Any] | None = None,
    spot: bool = False,
    zone: str = "us-central1-b",
) -> Any:
    props: dict[str, Any] = {
        "location": "us-central1",
        "nodeLocations": [zone],
        "nodeConfig": {
            "machineType": "a4-highgpu-8g",
            "guestAccelerators": [{"type": accel, "count": count}],
        },
    }
    if spot:
        props["nodeConfig"]["spot"] = True
    if nodes is not None:
        props["nodeCount"] = nodes
    if autoscaling is not None:
        props["autoscaling"] = autoscaling
    return record(NODE_POOL, name, props)


QUOTA = {"quotas": {"NVIDIA_B200_GPUS": 16}}


def test_within_quota_passes() -> None:
    assert run(gpu_quota, [pool()], QUOTA) == []


def test_over_quota_names_metric_region_and_pools() -> None:
    violations = run(gpu_quota, [pool(nodes=3.0)], QUOTA)
    assert len(violations) == 1
    message = violations[0].message
    assert "can scale to 24 NVIDIA_B200_GPUS in us-central1" in message
    assert "gpu: 3 nodes x 8" in message
    assert "quota is 16" in message
    assert violations[0].enforcement_level == "mandatory"


def test_autoscaling_maximum_counts_not_the_current_size() -> None:
    violations = run(
        gpu_quota, [pool(nodes=None, autoscaling={"minNodeCount": 0.0, "maxNodeCount": 3.0})], QUOTA
    )
    assert "24 NVIDIA_B200_GPUS" in violations[0].message
    total = {"totalMinNodeCount": 0.0, "totalMaxNodeCount": 2.0}
    assert run(gpu_quota, [pool(nodes=None, autoscaling=total)], QUOTA) == []


def test_pools_of_one_metric_add_up() -> None:
    violations = run(gpu_quota, [pool("a"), pool("b")], {"quotas": {"NVIDIA_B200_GPUS": 24}})
    assert "32 NVIDIA_B200_GPUS" in violations[0].message


def test_spot_uses_the_preemptible_metric() -> None:
    assert metric_for("nvidia-l4", preemptible=True) == "PREEMPTIBLE_NVIDIA_L4_GPUS"
    violations = run(gpu_quota, [pool(spot=True)], QUOTA)
    assert "sets no quota for PREEMPTIBLE_NVIDIA_B200_GPUS" in violations[0].message


def test_missing_quota_config_is_a_violation_with_the_fix() -> None:
    violations = run(gpu_quota, [pool()])  # schema default: no quotas
    assert len(violations) == 1
    assert "add it under gpu-quota.quotas" in violations[0].message


def test_all_regions_quota() -> None:
    cfg = {"quotas": {"NVIDIA_B200_GPUS": 64, "GPUS_ALL_REGIONS": 8}}
    violations = run(gpu_quota, [pool()], cfg)
    assert [v.message for v in violations] == [
        "node pools can scale to 16 GPUs; GPUS_ALL_REGIONS is 8"
    ]


def test_missing_properties_are_safe() -> None:
    bare = record(NODE_POOL, "bare", {"cluster": "c"})
    no_accel = record(
        NODE_POOL, "cpu", {"nodeCount": 3.0, "nodeConfig": {"machineType": "n2-highmem-16"}}
    )
    assert run(gpu_quota, [bare, no_accel], QUOTA) == []


def test_unknown_node_count_during_preview_is_an_advisory_note() -> None:
    unknown: dict[str, Any] = {"maxNodeCount": UNKNOWN_VALUE}
    violations = run(gpu_quota, [pool(nodes=None, autoscaling=unknown)], QUOTA)
    assert len(violations) == 1
    assert violations[0].enforcement_level == "advisory"
    assert "during preview" in violations[0].message


def test_unknown_accelerator_derives_gcp_metric_name() -> None:
    assert metric_for("nvidia-tesla-a100", preemptible=False) == "NVIDIA_A100_GPUS"
    assert metric_for("nvidia-a100-80gb", preemptible=True) == "PREEMPTIBLE_NVIDIA_A100_80GB_GPUS"
