"""Quota policies: what the stack can scale to must fit the project's quotas and reservation."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pulumi_policy import PolicyResource, ResourceValidationArgs

from planning.catalog import profile_for_accelerator
from planning.resource_types import LUSTRE, NODE_POOL
from policies.base import Config, of_type, resource_policy, stack_policy
from policies.props import as_int, get_int, get_list, get_map, get_str, region_of


@dataclass(frozen=True)
class PoolDemand:
    """GPUs one node pool can reach, and the quota metric they draw on."""

    pool: PolicyResource | None
    name: str
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


def pool_demands(
    name: str, props: Mapping[str, Any], pool: PolicyResource | None = None
) -> list[PoolDemand]:
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
            metric = metric_for(accel_type, preemptible)
            demands.append(PoolDemand(pool, name, region, metric, nodes, count))
    return demands


def _gpu_quota(
    resources: Sequence[PolicyResource], config: Config
) -> Iterator[tuple[str, PolicyResource | None]]:
    quotas: Mapping[str, Any] = config["quotas"]
    totals: dict[tuple[str, str], list[PoolDemand]] = defaultdict(list)
    for pool in of_type(resources, NODE_POOL):
        for demand in pool_demands(pool.name, pool.props, pool):
            totals[(demand.metric, demand.region)].append(demand)
    all_regions = 0
    for (metric, region), demands in sorted(totals.items()):
        total = sum(d.gpus for d in demands)
        all_regions += total
        detail = ", ".join(f"{d.name}: {d.nodes} nodes x {d.gpus_per_node}" for d in demands)
        limit = quotas.get(metric)
        if limit is None:
            yield (
                f"node pools ({detail}) need {total} {metric} in {region}, but the policy config"
                f" sets no quota for {metric}; add it under gpu-quota.quotas",
                demands[0].pool,
            )
        elif total > int(limit):
            yield (
                f"node pools ({detail}) can scale to {total} {metric} in {region}; the quota is"
                f" {int(limit)}. Lower the node count or request more quota",
                demands[0].pool,
            )
    global_limit = quotas.get("GPUS_ALL_REGIONS")
    if global_limit is not None and all_regions > int(global_limit):
        yield (
            f"node pools can scale to {all_regions} GPUs; GPUS_ALL_REGIONS is {int(global_limit)}",
            None,
        )


gpu_quota = stack_policy(
    name="gpu-quota",
    description="GPUs per quota metric and region, at autoscaling maxima, must fit the quota.",
    check=_gpu_quota,
    remediation=(
        "Set gpu-quota.quotas.<METRIC> in the stack's policy config to the quota shown in the"
        " console (IAM & Admin > Quotas), or lower gpu.nodes / gpu.autoscaling.max."
    ),
    properties={
        "quotas": {
            "type": "object",
            "description": "Quota per Compute Engine metric (e.g. NVIDIA_B200_GPUS,"
            " PREEMPTIBLE_NVIDIA_L4_GPUS, GPUS_ALL_REGIONS) as granted to the project.",
            "additionalProperties": {"type": "integer", "minimum": 0},
            "default": {},
        }
    },
)


def reservation_name(value: str) -> str:
    """`projects/o/reservations/NAME/reservationBlocks/B` or `NAME/...` -> `NAME`."""
    parts = value.split("/")
    if "reservations" in parts:
        return parts[parts.index("reservations") + 1]
    return parts[0]


def _reservation_size(args: ResourceValidationArgs, config: Config) -> Iterator[str]:
    affinity = get_map(args.props, "nodeConfig", "reservationAffinity")
    if get_str(affinity, "consumeReservationType") != "SPECIFIC_RESERVATION":
        return
    sizes: Mapping[str, Any] = config["reservations"]
    nodes = max_nodes(args.props)
    for value in get_list(affinity, "values"):
        name = reservation_name(str(value))
        size = sizes.get(name)
        if size is not None and nodes > int(size):
            yield (
                f"can scale to {nodes} nodes but reservation {name} holds {int(size)} VMs;"
                " the extra nodes would never be created"
            )


gpu_reservation_size = resource_policy(
    name="gpu-reservation-size",
    description="A node pool on a specific reservation must not outgrow the reservation.",
    types=[NODE_POOL],
    check=_reservation_size,
    remediation=(
        "Lower gpu.nodes / gpu.autoscaling.max to the reservation's VM count, or record the"
        " reservation's real size under gpu-reservation-size.reservations."
    ),
    properties={
        "reservations": {
            "type": "object",
            "description": "VM count per reservation name (checked only where given).",
            "additionalProperties": {"type": "integer", "minimum": 0},
            "default": {},
        }
    },
)


def _lustre_quota(
    resources: Sequence[PolicyResource], config: Config
) -> Iterator[tuple[str, PolicyResource | None]]:
    instances = of_type(resources, LUSTRE)
    if not instances:
        return
    total = sum(as_int(inst.props.get("capacityGib")) or 0 for inst in instances)
    quota = config["quotaGib"]
    if quota is None:
        yield (
            f"Lustre instances need {total} GiB, but lustre-capacity-quota.quotaGib is not set;"
            " record the project's Managed Lustre capacity quota",
            instances[0],
        )
    elif total > int(quota):
        yield (
            f"Lustre instances need {total} GiB; the capacity quota is {int(quota)} GiB",
            instances[0],
        )


lustre_capacity_quota = stack_policy(
    name="lustre-capacity-quota",
    description="Managed Lustre capacity across the stack must fit the project's capacity quota.",
    check=_lustre_quota,
    remediation=(
        "Set lustre-capacity-quota.quotaGib to the Managed Lustre capacity quota of the region,"
        " request more quota, or lower lustre.capacityGib."
    ),
    properties={
        "quotaGib": {
            "type": ["integer", "null"],
            "minimum": 0,
            "default": None,
            "description": "Managed Lustre capacity quota in GiB (null: not recorded yet).",
        }
    },
)
