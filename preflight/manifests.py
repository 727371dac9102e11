"""Write the Kubernetes objects a stack creates as YAML, for scanners that nobody here wrote.

Each Kubernetes resource the program registers becomes one file; the pod templates inside a
RayCluster (and the cluster a RayJob brings) are also written as Pods, so that scanners which
do not know KubeRay's CRDs still check the containers KubeRay will run. Helm releases are
listed but not rendered (the chart is Helm's to expand). Secret values stay `[secret]`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from planning.resource_types import HELM_RELEASE
from preflight.mock_run import ProgramRun


def _pods_of_raycluster(
    spec: Mapping[str, Any], owner: str, namespace: str | None
) -> Iterator[dict[str, Any]]:
    groups = [("head", spec.get("headGroupSpec") or {})]
    groups += [(str(g.get("groupName", "worker")), g) for g in spec.get("workerGroupSpecs") or []]
    for group, body in groups:
        template = body.get("template") or {}
        metadata = dict(template.get("metadata") or {})
        metadata["name"] = f"{owner}-{group}"
        if namespace:
            metadata["namespace"] = namespace
        yield {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": metadata,
            "spec": template.get("spec", {}),
        }


def kubernetes_objects(run: ProgramRun) -> Iterator[tuple[str, dict[str, Any]]]:
    """(file stem, object) for every Kubernetes object, plus the Pods of Ray clusters."""
    for record in run.records:
        if not record.type.startswith("kubernetes:") or record.type.startswith("pulumi:"):
            continue
        if record.type == HELM_RELEASE:
            continue
        obj = dict(record.inputs)
        if "apiVersion" not in obj or "kind" not in obj:
            continue
        stem = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{obj['kind']}-{record.name}")
        yield stem, obj
        meta = obj.get("metadata") or {}
        name = str(meta.get("name") or record.name)
        namespace = meta.get("namespace")
        spec = obj.get("spec") or {}
        if obj["kind"] == "RayCluster":
            for pod in _pods_of_raycluster(spec, name, namespace):
                yield f"{stem}-pod-{pod['metadata']['name']}", pod
        if obj["kind"] == "RayJob" and spec.get("rayClusterSpec"):
            for pod in _pods_of_raycluster(spec["rayClusterSpec"], name, namespace):
                yield f"{stem}-pod-{pod['metadata']['name']}", pod


def _wire_to_manifest(value: Any) -> Any:
    """Wire numbers are floats; a manifest's counts are integers."""
    if isinstance(value, dict):
        return {k: _wire_to_manifest(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_wire_to_manifest(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def write_manifests(run: ProgramRun, folder: Path) -> list[Path]:
    """Write every object to `folder/<kind>-<name>.yaml`; return the files."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for stem, obj in kubernetes_objects(run):
        path = folder / f"{stem}.yaml"
        path.write_text(yaml.safe_dump(_wire_to_manifest(obj), sort_keys=False), encoding="utf-8")
        written.append(path)
    return written
