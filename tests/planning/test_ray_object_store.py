"""Where Ray 2.55.1 puts each Ray pod's object store, decided by Ray's own code.

`ray start` sizes the object store with `resolve_object_store_memory` (the explicit
`--object-store-memory`, or 30% of the memory it sees, at most 200 GB and at most 95% of
/dev/shm but never below 10 GB) and then picks its folder with `determine_plasma_store_config`:
/dev/shm when /dev/shm holds it, otherwise the Ray temp folder on disk ("This will harm
performance"), or an error past 10 GB. Both functions run here unchanged; only what they read
from the machine is the pod's: its memory limit (the container's cgroup) and its /dev/shm (our
memory emptyDir, or the one KubeRay adds with the container's memory limit when a Ray container
mounts none, `common/pod.go` addEmptyDir).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import ray._common.utils
import ray._private.services
import ray._private.utils

from tests.harness import STACKS, by_name, run_stack, variant

UNITS = {"Gi": 2**30, "Mi": 2**20, "Ki": 2**10, "": 1}


def quantity(value: str) -> int:
    """A Kubernetes memory quantity in bytes (the binary suffixes we emit)."""
    match = re.fullmatch(r"(\d+)(Gi|Mi|Ki|)", value)
    assert match, value
    return int(match.group(1)) * UNITS[match.group(2)]


def pod_shapes(spec: dict[str, Any]) -> list[tuple[str, int, int, dict[str, str]]]:
    """(pod, memory limit, /dev/shm size, rayStartParams) of each Ray pod of a RayCluster."""
    groups = [("head", spec["headGroupSpec"])]
    groups += [(g["groupName"], g) for g in spec["workerGroupSpecs"]]
    shapes = []
    for name, group in groups:
        pod = group["template"]["spec"]
        container = pod["containers"][0]
        memory = quantity(container["resources"]["limits"]["memory"])
        shm_mount = [m for m in container.get("volumeMounts", []) if m["mountPath"] == "/dev/shm"]
        if shm_mount:
            (volume,) = [v for v in pod["volumes"] if v["name"] == shm_mount[0]["name"]]
            assert volume["emptyDir"]["medium"] == "Memory"
            shm = quantity(volume["emptyDir"]["sizeLimit"])
        else:
            shm = memory  # what KubeRay mounts for the object store
        shapes.append((name, memory, shm, dict(group.get("rayStartParams", {}))))
    return shapes


def plasma_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, memory: int, shm: int, params: dict[str, str]
) -> tuple[str, int]:
    """(folder, size) of the object store Ray picks in a pod of this shape."""
    monkeypatch.setattr(ray._private.utils, "get_shared_memory_bytes", lambda: shm)
    monkeypatch.setattr(ray._common.utils, "get_system_memory", lambda *_, **__: memory)
    explicit = params.get("object-store-memory")
    # What `ray start` does (scripts.py, then node.py), with our start parameter if any.
    # (`estimate_available_memory()` there: the fresh pod's memory limit.)
    size = ray._private.utils.resolve_object_store_memory(
        memory, int(explicit) if explicit else None
    )
    folder, _, size = ray._private.services.determine_plasma_store_config(size, str(tmp_path))
    return str(folder), int(size)


@pytest.mark.parametrize("stack", STACKS)
def test_every_ray_pod_keeps_its_object_store_in_shared_memory(
    stack: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = variant(stack, {"nemo-rl-gke:ray": {"job": {"enabled": True}}})
    if stack != "dev":
        config["nemo-rl-gke:hfToken"] = {"secure": "v1:x"}
    records = by_name(run_stack(stack, tmp_path, config))
    job = records["ray-job"].inputs["spec"]
    clusters = [records["ray-cluster"].inputs["spec"], job.get("rayClusterSpec")]
    for spec in [c for c in clusters if c]:
        for pod, memory, shm, params in pod_shapes(spec):
            folder, size = plasma_directory(monkeypatch, tmp_path, memory, shm, params)
            assert folder == "/dev/shm", (
                f"{stack} {pod}: Ray puts its {size / 2**30:.1f} GiB object store in {folder}"
                f" (/dev/shm {shm / 2**30:.1f} GiB)"
            )
            assert size <= shm
