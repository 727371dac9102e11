"""Job queue policies: GPU work goes through Kueue, and the queue never promises more GPUs
than the pool has."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pulumi_policy import PolicyResource, ResourceValidationArgs
from pulumi_policy.proxy import UNKNOWN_OBJECT_VALUE, UnknownValueError

from planning.kube import ACCELERATOR_LABEL
from planning.queue import (
    GPU_RESOURCE,
    INSTANCE_TYPE_LABEL,
    NODEPOOL_LABEL,
    QUEUE_LABEL,
)
from planning.resource_types import (
    CLUSTER_QUEUE,
    NODE_POOL,
    POD,
    POD_TEMPLATE_OWNERS,
    RAY_JOB,
    RAY_KINDS,
    RESOURCE_FLAVOR,
)
from policies.base import Config, of_type, resource_policy, stack_policy
from policies.props import as_int, get_list, get_map, get_str
from policies.quota import max_nodes


def pod_specs(resource_type: str, props: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """Every pod spec a workload object creates pods from."""
    spec = get_map(props, "spec")
    if resource_type == POD:
        yield spec
        return
    if resource_type in RAY_KINDS:
        cluster = get_map(spec, "rayClusterSpec") if resource_type == RAY_JOB else spec
        groups = [get_map(cluster, "headGroupSpec"), *get_list(cluster, "workerGroupSpecs")]
        for group in groups:
            if isinstance(group, Mapping):
                yield get_map(group, "template", "spec")
        return
    yield get_map(spec, "template", "spec")


def gpus_requested(resource_type: str, props: Mapping[str, Any]) -> bool:
    """Any container of any pod asks for GPUs (requests or limits)."""
    for pod in pod_specs(resource_type, props):
        for container in [*get_list(pod, "containers"), *get_list(pod, "initContainers")]:
            resources = get_map(container, "resources")
            for part in ("requests", "limits"):
                if (as_int(get_map(resources, part).get(GPU_RESOURCE)) or 0) > 0:
                    return True
    return False


def _queued(args: ResourceValidationArgs, config: Config) -> Iterator[str]:
    if not config["required"] or not gpus_requested(args.resource_type, args.props):
        return
    label = get_str(args.props, "metadata", "labels", QUEUE_LABEL)
    if label:
        return
    yield (
        f"requests nvidia.com/gpu outside the job queue: label it {QUEUE_LABEL}=<LocalQueue>"
        " so Kueue admits it whole, inside one topology domain"
    )


gpu_workloads_queued = resource_policy(
    name="gpu-workloads-queued",
    description="Workloads whose pods request GPUs go through a Kueue LocalQueue.",
    types=POD_TEMPLATE_OWNERS,
    check=_queued,
    remediation=(
        "Label the workload kueue.x-k8s.io/queue-name with the stack's LocalQueue (stack output"
        " kueueLocalQueue; nemo-rl-gke:kueue.enabled turns the queue on). Work that must run"
        " before the queue admits anything - the acceptance gates, which the LocalQueue waits"
        " for - is a reviewed exception listed under `exempt`."
    ),
    properties={
        "required": {
            "type": "boolean",
            "default": True,
            "description": "Require the queue (false for stacks without Kueue, such as dev).",
        }
    },
)


def _pool_labels(props: Mapping[str, Any]) -> dict[str, str]:
    """The labels every node of a GKE node pool carries, as far as the plan knows them."""
    node_config = get_map(props, "nodeConfig")
    labels = {k: v for k, v in get_map(node_config, "labels").items() if isinstance(v, str)}
    for accel in get_list(node_config, "guestAccelerators"):
        accel_type = get_str(accel, "type") if isinstance(accel, Mapping) else None
        if accel_type:
            labels[ACCELERATOR_LABEL] = accel_type
    name = get_str(props, "name")
    if name:
        labels[NODEPOOL_LABEL] = name
    machine = get_str(node_config, "machineType")
    if machine:
        labels[INSTANCE_TYPE_LABEL] = machine
    return labels


def _pool_gpus(props: Mapping[str, Any]) -> int:
    per_node = sum(
        as_int(a.get("count")) or 0
        for a in get_list(get_map(props, "nodeConfig"), "guestAccelerators")
        if isinstance(a, Mapping)
    )
    return max_nodes(props) * per_node


PUBLISHED = "objects"
"""Output of the JobQueue component: every Kueue object it creates, by logical name."""


def planned_props(resource: PolicyResource) -> Mapping[str, Any]:
    """A Kueue object's properties. In a first preview a Kubernetes object has no state yet
    (its provider's cluster does not exist), so they come from what its JobQueue component
    publishes it creates (the same values it sends as the object's inputs); an object with
    neither cannot be judged yet."""
    if len(resource.props):
        return resource.props
    parent = resource.parent
    published = get_map(parent.props if parent is not None else {}, PUBLISHED, resource.name)
    if not published:
        raise UnknownValueError(UNKNOWN_OBJECT_VALUE, [resource.name, "spec"])
    return published


def _gpu_quota(
    resources: Sequence[PolicyResource], config: Config
) -> Iterator[tuple[str, PolicyResource | None]]:
    pools = [(p, _pool_labels(p.props), _pool_gpus(p.props)) for p in of_type(resources, NODE_POOL)]
    flavors: dict[str | None, dict[str, str]] = {}
    for resource in of_type(resources, RESOURCE_FLAVOR):
        props = planned_props(resource)
        node_labels = get_map(props, "spec", "nodeLabels")
        flavors[get_str(props, "metadata", "name")] = {
            k: v for k, v in node_labels.items() if isinstance(v, str)
        }
    promised: dict[str, list[tuple[PolicyResource, int]]] = defaultdict(list)
    for queue in of_type(resources, CLUSTER_QUEUE):
        for group in get_list(planned_props(queue), "spec", "resourceGroups"):
            for flavor in get_list(group, "flavors"):
                name = get_str(flavor, "name")
                for resource in get_list(flavor, "resources"):
                    if get_str(resource, "name") != GPU_RESOURCE:
                        continue
                    quota = as_int(resource.get("nominalQuota")) or 0
                    if quota > 0 and name is not None:
                        promised[name].append((queue, quota))
    for flavor_name, quotas in sorted(promised.items()):
        labels = flavors.get(flavor_name)
        queue = quotas[0][0]
        if labels is None:
            yield (f"gives GPUs to flavor {flavor_name!r}, which this stack does not define", queue)
            continue
        matching = [(p, g) for p, pool_labels, g in pools if labels.items() <= pool_labels.items()]
        total = sum(q for _, q in quotas)
        if not matching:
            yield (
                f"gives {total} GPUs to flavor {flavor_name!r}, whose node labels {labels} match"
                " no node pool of this stack",
                queue,
            )
            continue
        available = sum(g for _, g in matching)
        if total > available + int(config["allowOvercommit"]):
            pools_text = ", ".join(f"{p.name}: {g}" for p, g in matching)
            yield (
                f"promises {total} GPUs on flavor {flavor_name!r}, more than its node pools hold"
                f" ({pools_text} = {available}): runs would be admitted that no node can take",
                queue,
            )


queue_gpu_quota = stack_policy(
    name="queue-gpu-quota",
    description="A ClusterQueue never promises more GPUs than the pools its flavor names hold.",
    check=_gpu_quota,
    remediation=(
        "Lower nemo-rl-gke:kueue.gpuQuota (default: the pool's GPUs), or grow the pool; make the"
        " flavor's labels (kueue.flavorLabels) name the GPU pool's nodes."
    ),
    properties={
        "allowOvercommit": {
            "type": "integer",
            "default": 0,
            "description": "GPUs a queue may promise beyond its pools (0: never).",
        }
    },
)
