"""The acceptance gates of the stack: planned from its config, placed after the GPU pool, the
GPU networking objects and /data, before the Ray workload."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from components.network.in_cluster import GVNIC_NETWORK, rdma_network_name
from components.queue import KueueOperator
from components.verify.gates import PlatformVerification, VerificationArgs
from planning.queue import VERIFY_PRIORITY
from planning.ray import gib_shell_setup, gpu_shell_setup
from planning.rdma import CLAIM_TEMPLATE, RDMA_DEVICE_CLASS
from planning.verify import StorageTarget, VerifyInputs, gate_scripts, plan_gates
from planning.versions import VERSIONS
from program.cluster import Gke
from program.rdma import Rdma
from program.storage import Volumes
from stack_config import StackConfig


def verify_inputs(cfg: StackConfig) -> VerifyInputs:
    """What the gates depend on (each part changes the gates' fingerprints)."""
    gpu = cfg.gpu.profile
    rdma = gpu.rdma_nics > 0
    # What the worker-shaped gates' pods attach: the Network objects, or the DRANET claim
    # (a switch between the paths is a new gate run).
    networks: tuple[str, ...] = ()
    if rdma and cfg.dranet:
        networks = (f"{RDMA_DEVICE_CLASS}/{CLAIM_TEMPLATE}:{cfg.rdma_devices}",)
    elif rdma:
        networks = (GVNIC_NETWORK, *(rdma_network_name(i) for i in range(gpu.rdma_nics)))
    storage = (
        StorageTarget("lustre", cfg.lustre.capacity_gib, cfg.lustre.throughput)
        if cfg.lustre.enabled
        else StorageTarget("bucket")
    )
    return VerifyInputs(
        gpu_type=gpu.key,
        gpus_per_node=gpu.gpus_per_node,
        rdma_nics=gpu.rdma_nics,
        nodes=cfg.gpu.max_nodes,
        pool="/".join(
            [
                cfg.names.cluster,
                f"gpu-{gpu.key}",
                gpu.machine_type,
                cfg.gpu.capacity,
                cfg.gpu.reservation or "",
                cfg.gpu.placement,
            ]
        ),
        networks=networks,
        worker_setup=gib_shell_setup(gpu.nccl_tuner_config or "") if rdma else gpu_shell_setup(),
        diagnostic_image=VERSIONS.nccl_diagnostic_image.value,
        fio_image=VERSIONS.fio_image.value,
        storage=storage,
    )


def verification_args(
    gke: Gke,
    volumes: Volumes,
    labels: Mapping[str, str],
    rdma: Rdma,
    scripts: Mapping[str, str],
) -> VerificationArgs:
    """How a gate's Job is built on this stack, before which gates and after what."""
    claim = volumes.lustre or volumes.bucket
    return VerificationArgs(
        namespace=volumes.identity.namespace,
        service_account=volumes.identity.service_account,
        gates=(),
        scripts=scripts,
        node_selector=gke.gpu_pool.node_selector,
        tolerations=gke.gpu_pool.tolerations,
        data_claim=volumes.data_claim,
        data_is_gcsfuse=volumes.gcsfuse,
        rdma=rdma.wiring,
        after=[*(r for r in (gke.gpu_pool, rdma.ready, claim, volumes.identity) if r is not None)],
        labels=labels,
    )


def build_verification(
    cfg: StackConfig,
    gke: Gke,
    volumes: Volumes,
    labels: Mapping[str, str],
    rdma: Rdma,
    kueue: KueueOperator | None = None,
) -> PlatformVerification | None:
    """The gate Jobs; None when the stack runs no gate. With Kueue, after its release and at
    smoke/gate priority (see program.queue)."""
    gates = plan_gates(verify_inputs(cfg), cfg.gate_settings)
    if not gates:
        return None
    common = verification_args(gke, volumes, labels, rdma, gate_scripts())
    return PlatformVerification(
        "verify",
        replace(
            common,
            gates=gates,
            # The GPU pool is not behind the Kubernetes provider (only the system pool is): a
            # gate created before its nodes exist would spend its deadline waiting for them.
            after=[
                *common.after,
                *(
                    [kueue.release, kueue.priority_classes[VERIFY_PRIORITY.name]]
                    if kueue is not None
                    else []
                ),
            ],
            priority_class=VERIFY_PRIORITY.name if kueue is not None else None,
        ),
        opts=gke.k8s_opts,
    )
