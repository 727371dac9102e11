"""The ReadWriteMany claim bound to a static PersistentVolume (Lustre and GCS FUSE alike)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi
import pulumi_kubernetes as k8s


def bound_claim(
    name: str,
    pv: k8s.core.v1.PersistentVolume,
    *,
    namespace: pulumi.Input[str],
    claim_name: str,
    storage_class: str,
    size: str,
    parent: pulumi.Resource,
    annotations: Mapping[str, pulumi.Input[str]] | None = None,
) -> k8s.core.v1.PersistentVolumeClaim:
    """A RWX claim that binds to `pv` by name: no provisioner, no other volume can take it."""
    metadata: dict[str, Any] = {"name": claim_name, "namespace": namespace}
    if annotations:
        metadata["annotations"] = dict(annotations)
    return k8s.core.v1.PersistentVolumeClaim(
        name,
        metadata=metadata,
        spec={
            "storage_class_name": storage_class,
            "access_modes": ["ReadWriteMany"],
            "volume_name": pv.metadata.name,
            "resources": {"requests": {"storage": size}},
        },
        opts=pulumi.ResourceOptions(parent=parent),
    )
