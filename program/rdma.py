"""How the stack's GPU pods reach their RDMA NICs: the multi-network objects (built with the
cluster) or, under DRANET, the workload namespace's claim template and the gIB installer."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from components.gpu_pool.pod import RdmaWiring
from components.network.rdma_claims import DranetNetworking, DranetNetworkingArgs
from planning.versions import VERSIONS
from program.cluster import Gke
from program.storage import Volumes
from stack_config import StackConfig


@dataclass(frozen=True)
class Rdma:
    """What RDMA pods are given, and what they wait for."""

    wiring: RdmaWiring | None
    """None on GPUs without RDMA NICs."""
    ready: pulumi.Resource | None
    """The component whose objects the pods use (Network objects or the claim template)."""


def build_rdma(cfg: StackConfig, gke: Gke, volumes: Volumes) -> Rdma:
    """The RDMA wiring of the Ray workers and the gates, for the stack's path."""
    gpu = cfg.gpu.profile
    tuner = gpu.nccl_tuner_config or ""
    if cfg.dranet:
        dranet = DranetNetworking(
            "gpu-net",
            DranetNetworkingArgs(
                namespace=volumes.identity.namespace,
                devices=cfg.rdma_devices,
                accelerator_type=gpu.accelerator_type,
                installer_image=VERSIONS.gib_installer_image.value,
                pause_image=VERSIONS.pause_image.value,
            ),
            opts=gke.k8s_opts,
        )
        return Rdma(RdmaWiring(tuner_config=tuner, claim_template=dranet.claim_template), dranet)
    networking = gke.gpu_networking
    if networking is None:
        return Rdma(None, None)
    return Rdma(
        RdmaWiring(tuner_config=tuner, interfaces_annotation=networking.interfaces_annotation),
        networking,
    )
