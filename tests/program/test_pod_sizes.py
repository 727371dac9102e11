"""Every pod the platform pins to a pool fits one node of that pool: its requests within the
node's allocatable CPU and memory by GKE's reservation formula (planning.queue.gke_allocatable).
A pod that does not fit stays Pending, long after `pulumi up` succeeded."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from planning.kube import ACCELERATOR_LABEL
from planning.queue import POOL_LABEL, gke_allocatable, machine_shape
from pulumi_offline.stackfiles import read_project, read_stack
from stack_config import load_stack_config
from tests.conftest import committed
from tests.harness import REPO, STACKS


def _cpu_millis(text: str) -> int:
    return int(text[:-1]) if text.endswith("m") else int(float(text) * 1000)


def _memory_mib(text: str) -> int:
    units = {"Ki": 1 / 1024, "Mi": 1, "Gi": 1024, "Ti": 1024 * 1024}
    for suffix, factor in units.items():
        if text.endswith(suffix):
            return int(float(text[: -len(suffix)]) * factor)
    return int(int(text) / (1024 * 1024))


def pod_specs(value: Any, path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every pod spec inside a resource's inputs (Jobs, DaemonSets, Ray groups, RayJobs)."""
    if isinstance(value, dict):
        if "containers" in value and isinstance(value["containers"], list):
            yield path, value
        for key, item in value.items():
            yield from pod_specs(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from pod_specs(item, f"{path}[{index}]")


def container_requests(container: dict[str, Any]) -> tuple[int, int]:
    asked = (container.get("resources") or {}).get("requests") or {}
    return _cpu_millis(str(asked.get("cpu", "0"))), _memory_mib(str(asked.get("memory", "0")))


def requests(spec: dict[str, Any]) -> tuple[int, int]:
    """The pod's requests as the scheduler and Kueue count them (Kubernetes' PodRequests): its
    containers and native sidecars (init containers with restartPolicy Always) together, or an
    init container with the sidecars started before it, whichever is larger."""
    cpu = memory = 0
    for container in spec["containers"]:
        c, m = container_requests(container)
        cpu, memory = cpu + c, memory + m
    sidecar_cpu = sidecar_memory = init_cpu = init_memory = 0
    for container in spec.get("initContainers") or []:
        c, m = container_requests(container)
        if container.get("restartPolicy") == "Always":
            sidecar_cpu, sidecar_memory = sidecar_cpu + c, sidecar_memory + m
        else:
            init_cpu = max(init_cpu, sidecar_cpu + c)
            init_memory = max(init_memory, sidecar_memory + m)
    return max(cpu + sidecar_cpu, init_cpu), max(memory + sidecar_memory, init_memory)


def test_native_sidecars_count_with_the_containers() -> None:
    sidecar = {"restartPolicy": "Always", "resources": {"requests": {"cpu": "100m"}}}
    init = {"resources": {"requests": {"cpu": "3", "memory": "1Gi"}}}
    spec = {
        "initContainers": [sidecar, init],
        "containers": [{"resources": {"requests": {"cpu": "2", "memory": "2Gi"}}}],
    }
    assert requests(spec) == (3100, 2048)


@pytest.mark.parametrize("stack", STACKS)
def test_every_pinned_pod_fits_a_node_of_its_pool(stack: str) -> None:
    values = read_stack(read_project(REPO), REPO / f"Pulumi.{stack}.yaml").values
    cfg = load_stack_config(
        {k: v for k, v in values.items() if not k.endswith(("hfToken", "wandbApiKey"))}, stack
    )
    gpu = cfg.gpu.profile
    shape = machine_shape(cfg.cluster.system_pool.machine_type)
    assert shape is not None
    pools = {
        "system": gke_allocatable(*shape),
        "gpu": gke_allocatable(gpu.vcpus, gpu.memory_gb),
    }
    checked = 0
    for record in committed(stack).run.records:
        for where, spec in pod_specs(record.inputs):
            selector = spec.get("nodeSelector") or spec.get("node_selector") or {}
            pool = (
                "gpu"
                if ACCELERATOR_LABEL in selector
                else selector.get(POOL_LABEL)
                if isinstance(selector, dict)
                else None
            )
            if pool not in pools:
                continue
            cpu, memory = requests(spec)
            node_cpu, node_memory = pools[pool]
            assert cpu <= node_cpu, f"{record.name}{where}: {cpu}m CPU > {node_cpu}m on {pool}"
            assert memory <= node_memory, (
                f"{record.name}{where}: {memory} MiB > {node_memory} MiB on {pool}"
            )
            checked += 1
    assert checked >= 2, "found no pinned pod: the walk is broken"
