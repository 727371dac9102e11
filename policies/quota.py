"""Quota policies: GPUs the stack can scale to must fit the project's regional quota."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    StackValidationArgs,
    StackValidationPolicy,
)

from planning.catalog import profile_for_accelerator
from policies.props import get_int, get_list, get_map, get_str, region_of

NODE_POOL = "gcp:container/nodePool:NodePool"


@dataclass(frozen=True)
class PoolDemand:
    """GPUs one node pool can reach, and the quota metric they draw on."""

    pool: str
    urn: str
    region: str
    metric: str
    nodes: int
    gpus_per_node: int

    @property
    def gpus(self) -> int:
        """Total GPUs at the pool's maximum size."""
        return self.nodes * self.gpus_per_node


def metric_for(accelerator: str, preemptible: bool) -> str:
    """Quota metric of an accelerator type: from the catalog, else derived by GCP's pattern."""
    row = profile_for_accelerator(accelerator)
    if row is not None:
        return row.preemptible_quota_metric if preemptible else row.quota_metric
    core = accelerator.upper().replace("-", "_")
    for prefix in ("NVIDIA_TESLA_", "NVIDIA_"):
        core = core.removeprefix(prefix)
    base = f"NVIDIA_{core}_GPUS"
    return f"PREEMPTIBLE_{base}" if preemptible else base


def max_nodes(props: Mapping[str, Any]) -> int:
    """Most nodes a pool can have across its zones, counting autoscaling maxima."""
    zones = max(1, len(get_list(props, "nodeLocations")))
    autoscaling = get_map(props, "autoscaling")
    total_max = get_int(autoscaling, "totalMaxNodeCount")
    if total_max:
        return total_max
    per_zone_max = get_int(autoscaling, "maxNodeCount")
    if per_zone_max:
        return per_zone_max * zones
    per_zone = get_int(props, "nodeCount")
    if per_zone is None:
        per_zone = get_int(props, "initialNodeCount") or 0
    return per_zone * zones


def pool_demands(urn: str, name: str, props: Mapping[str, Any]) -> list[PoolDemand]:
    """GPU demand of one node pool, one entry per accelerator type it attaches."""
    node_config = get_map(props, "nodeConfig")
    preemptible = bool(node_config.get("spot")) or bool(node_config.get("flexStart"))
    zones = get_list(props, "nodeLocations")
    region = region_of(zones[0] if zones else get_str(props, "location")) or "unknown-region"
    nodes = max_nodes(props)
    demands = []
    for accel in get_list(node_config, "guestAccelerators"):
        if not isinstance(accel, Mapping):
            continue
        accel_type = get_str(accel, "type")
        count = get_int(accel, "count") or 0
        if accel_type and count:
            demands.append(
                PoolDemand(name, urn, region, metric_for(accel_type, preemptible), nodes, count)
            )
    return demands


def _gpu_quota(args: StackValidationArgs, report: ReportViolation) -> None:
    config = args.get_config()
    quotas: Mapping[str, Any] = config.get("quotas") or {}
    totals: dict[tuple[str, str], list[PoolDemand]] = defaultdict(list)
    for resource in args.resources:
        if resource.resource_type == NODE_POOL:
            for demand in pool_demands(resource.urn, resource.name, resource.props):
                totals[(demand.metric, demand.region)].append(demand)

    all_regions = 0
    for (metric, region), demands in sorted(totals.items()):
        total = sum(d.gpus for d in demands)
        all_regions += total
        detail = ", ".join(f"{d.pool}: {d.nodes} nodes x {d.gpus_per_node}" for d in demands)
        limit = quotas.get(metric)
        if limit is None:
            report(
                f"node pools ({detail}) need {total} {metric} in {region}, but the policy config"
                f" sets no quota for {metric}; add it under gpu-quota.quotas",
                demands[0].urn,
            )
        elif total > int(limit):
            report(
                f"node pools ({detail}) can scale to {total} {metric} in {region}; the quota is"
                f" {int(limit)}. Lower the node count or request more quota",
                demands[0].urn,
            )
    global_limit = quotas.get("GPUS_ALL_REGIONS")
    if global_limit is not None and all_regions > int(global_limit):
        report(
            f"node pools can scale to {all_regions} GPUs; GPUS_ALL_REGIONS is {int(global_limit)}",
            None,
        )


gpu_quota = StackValidationPolicy(
    name="gpu-quota",
    description="GPUs per quota metric and region, at autoscaling maxima, must fit the quota.",
    validate=_gpu_quota,
    enforcement_level=EnforcementLevel.MANDATORY,
    config_schema=PolicyConfigSchema(
        properties={
            "quotas": {
                "type": "object",
                "description": "Quota per Compute Engine metric (e.g. NVIDIA_B200_GPUS,"
                " PREEMPTIBLE_NVIDIA_L4_GPUS, GPUS_ALL_REGIONS) as granted to the project.",
                "additionalProperties": {"type": "integer", "minimum": 0},
                "default": {},
            }
        }
    ),
    remediation_steps=(
        "Set gpu-quota.quotas.<METRIC> in the stack's policy config to the quota shown in the"
        " console (IAM & Admin > Quotas), or lower gpu.nodes / gpu.autoscaling.max."
    ),
)
