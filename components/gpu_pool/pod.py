"""What makes a pod on an RDMA GPU node a working one: shared by the Ray workers and the gates.

The acceptance gates prove the workers' shape, so both build it here: the multi-network
annotations or the DRANET claim, the driver and gIB host paths, and the shell setup that runs
before the process (Google's set_nccl_env.sh, the image's LD_LIBRARY_PATH kept).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pulumi

from planning.kube import DEFAULT_INTERFACE_ANNOTATION, INTERFACES_ANNOTATION
from planning.ray import GIB_DIR, NVIDIA_DIR, gib_shell_setup, gpu_shell_setup
from planning.rdma import container_claims, pod_claims

GPU_CONTAINER_SECURITY: dict[str, Any] = {
    # What the NeMo RL image allows: it runs as root (uv, ldconfig) and writes to its own tree,
    # so no read-only root or non-root user; no escalation, no raw sockets, the runtime's
    # seccomp profile. CUDA, NCCL and RDMA need none of what is taken away.
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["NET_RAW"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}


@dataclass(frozen=True, kw_only=True)
class RdmaWiring:
    """What an RDMA worker needs on top of a plain GPU worker: its NICs through exactly one of
    the two paths (multi-network annotations, or a DRANET claim)."""

    tuner_config: str
    """NCCL tuner file for this GPU (`tuner_config_a4.txtpb` / `tuner_config_a3u.txtpb`)."""
    interfaces_annotation: pulumi.Input[str] | None = None
    """Multi-network: from the GpuNetworking component, eth0 + gvnic-1 + rdma-0..N."""
    claim_template: pulumi.Input[str] | None = None
    """DRANET: the namespace's ResourceClaimTemplate, from the DranetNetworking component."""

    def __post_init__(self) -> None:
        if (self.interfaces_annotation is None) == (self.claim_template is None):
            raise pulumi.InputPropertyError(
                "interfaces_annotation", "give exactly one of the annotation or the claim template"
            )


@dataclass(frozen=True)
class GpuPodParts:
    """Annotations, mounts, volumes and the shell setup of a pod on a GPU node."""

    setup: str
    annotations: dict[str, Any] = field(default_factory=dict)
    mounts: list[dict[str, Any]] = field(default_factory=list)
    volumes: list[dict[str, Any]] = field(default_factory=list)
    pod_claims: pulumi.Input[list[dict[str, str]]] | None = None
    """The pod's `resourceClaims` (DRANET), known once the template exists."""
    container_claims: list[dict[str, str]] = field(default_factory=list)
    """The GPU container's `resources.claims` (DRANET)."""


def gpu_pod_parts(rdma: RdmaWiring | None) -> GpuPodParts:
    """The worker shape: with RDMA, the NICs, the host's driver and gIB folders, gIB's setup."""
    if rdma is None:
        return GpuPodParts(setup=gpu_shell_setup())
    if rdma.claim_template is not None:
        # The NICs come with the claim (gpuNrdma0 in the pod), eth0 stays the pod network.
        annotations: dict[str, Any] = {}
        pod: pulumi.Output[list[dict[str, str]]] | None = pulumi.Output.from_input(
            rdma.claim_template
        ).apply(pod_claims)
        container = container_claims()
    else:
        annotations = {
            DEFAULT_INTERFACE_ANNOTATION: "eth0",
            INTERFACES_ANNOTATION: rdma.interfaces_annotation,
        }
        pod, container = None, []
    return GpuPodParts(
        # Google's own gIB settings, from the script the installer keeps current: the same
        # under DRANET (Google's managed-RDMA NCCL sample sources the same script).
        setup=gib_shell_setup(rdma.tuner_config),
        annotations=annotations,
        pod_claims=pod,
        container_claims=container,
        # Driver libraries and the gIB plugin the installer DaemonSet put on the host.
        mounts=[
            {"name": "nvidia", "mountPath": NVIDIA_DIR, "readOnly": True},
            {"name": "gib", "mountPath": GIB_DIR, "readOnly": True},
        ],
        volumes=[
            {"name": "nvidia", "hostPath": {"path": "/home/kubernetes/bin/nvidia"}},
            {"name": "gib", "hostPath": {"path": "/home/kubernetes/bin/gib"}},
        ],
    )
