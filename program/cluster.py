"""The GKE cluster, its node pools, the Kubernetes provider and in-cluster GPU networking."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from components import (
    AuthorizedCidr,
    GkeCluster,
    GkeClusterArgs,
    GpuNetworking,
    GpuNetworkingArgs,
    GpuNodePool,
    GpuNodePoolArgs,
    MaintenancePlan,
    SystemNodePool,
    SystemNodePoolArgs,
)
from planning.catalog import extra_gvnic_networks
from planning.cluster import EngineVersions, gpu_pool_timeout_minutes
from planning.naming import PROJECT, stateful_labels
from planning.reservation import qualifying_project
from planning.versions import VERSIONS
from program.network import Networks
from program.reservation import api_off, first_line
from stack_config import InvalidStackConfig, StackConfig


def read_engine_versions(cfg: StackConfig) -> EngineVersions | None:
    """The versions GKE offers in the cluster's region now (GKE's server config, as Cluster
    Toolkit reads it); None when the project's GKE API is still off (a first `up` turns it on,
    and GKE itself then judges the version)."""
    try:
        found = gcp.container.get_engine_versions(location=cfg.region, project=cfg.project)
    except Exception as error:  # noqa: BLE001 - the provider's error, judged below
        if api_off(error):
            pulumi.log.warn(
                "GKE's offered versions were not read (the GKE API is not on yet):"
                f" cluster.minVersion {cfg.cluster.min_version} is judged by GKE at create"
            )
            return None
        raise InvalidStackConfig(
            f"{PROJECT}:cluster.minVersion",
            f"could not read the GKE versions offered in {cfg.region}: {first_line(error)}",
            "give the identity container.clusters.list (roles/container.viewer)",
        ) from None
    return EngineVersions(
        valid_master=list(found.valid_master_versions),
        valid_node=list(found.valid_node_versions),
        channel_latest=dict(found.release_channel_latest_version),
    )


@dataclass(frozen=True)
class Gke:
    """The cluster side of the stack."""

    cluster: GkeCluster
    system_pool: SystemNodePool
    gpu_pool: GpuNodePool
    k8s_provider: k8s.Provider
    gpu_networking: GpuNetworking | None
    """Network objects and the gIB installer, for RDMA GPUs only."""

    @property
    def k8s_opts(self) -> pulumi.ResourceOptions:
        """Options that send a component's Kubernetes children to this cluster."""
        return pulumi.ResourceOptions(providers=[self.k8s_provider])


def build_gke(
    cfg: StackConfig,
    nets: Networks,
    labels: Mapping[str, str],
    apis: Sequence[pulumi.Resource] = (),
    multi_networking: bool | None = None,
) -> Gke:
    """Cluster, system pool, GPU pool and, for RDMA GPUs, the in-cluster network objects. The
    cluster (and so every pool and Kubernetes object) waits for `apis`. `multi_networking` is
    what the cluster keeps (program.guard: on once a stack had the multi-network path); None:
    on except for DRANET."""
    gpu = cfg.gpu.profile
    maintenance = cfg.cluster.maintenance
    cluster = GkeCluster(
        "gke",
        GkeClusterArgs(
            project=cfg.project,
            region=cfg.region,
            zone=cfg.zone,
            name=cfg.names.cluster,
            node_service_account_id=cfg.names.node_service_account,
            network=nets.primary.network_name,
            subnetwork=nets.primary.subnet_name,
            pods_range_name=nets.primary.pods_range_name,
            services_range_name=nets.primary.services_range_name,
            release_channel=cfg.cluster.release_channel,
            min_version=cfg.cluster.min_version,
            authorized_networks=[
                AuthorizedCidr(name=n.name, cidr=str(n.cidr))
                for n in cfg.network.authorized_networks
            ],
            dns_endpoint=cfg.network.control_plane_endpoint == "dns",
            maintenance=MaintenancePlan(
                window_start=maintenance.window_start,
                window_end=maintenance.window_end,
                recurrence=maintenance.recurrence,
                exclusion_scope=maintenance.exclusion_scope if maintenance.block_upgrades else None,
                exclusion_start=maintenance.exclusion_start,
                exclusion_end=maintenance.exclusion_end,
            ),
            lustre_csi=cfg.lustre.enabled,
            multi_networking=not cfg.dranet if multi_networking is None else multi_networking,
            # GPU nodes with a second gVNIC NIC have a standard NIC outside the cluster VPC
            # (with DRANET too: where GKE puts it is not documented, so Lustre keeps eth0).
            lustre_single_nic=bool(extra_gvnic_networks(gpu)),
            legacy_lustre_port=cfg.legacy_lustre_port,
            gke_ray_addon=cfg.ray.operator == "gke-addon",
            protect=cfg.protect,
            labels=stateful_labels(dict(labels), cfg.protection_lift),
            apis=apis,
        ),
    )
    system = cfg.cluster.system_pool
    system_pool = SystemNodePool(
        "system",
        SystemNodePoolArgs(
            cluster_id=cluster.cluster_id,
            region=cfg.region,
            zone=cfg.zone,
            service_account=cluster.node_service_account_email,
            machine_type=system.machine_type,
            min_nodes=system.min,
            max_nodes=system.max,
            disk_gb=system.disk_gb,
            version=system.version,
            labels=labels,
        ),
    )
    autoscaling = cfg.gpu.autoscaling
    gpu_pool = GpuNodePool(
        "gpu",
        GpuNodePoolArgs(
            cluster_id=cluster.cluster_id,
            region=cfg.region,
            zone=cfg.zone,
            gpu=gpu,
            service_account=cluster.node_service_account_email,
            capacity=cfg.gpu.capacity,
            nodes=cfg.gpu.nodes,
            autoscaling=(autoscaling.min, autoscaling.max) if autoscaling else None,
            reservation=cfg.gpu.reservation,
            reservation_project=(
                qualifying_project(cfg.gpu.reservation, cfg.gpu.reservation_project, cfg.project)
                if cfg.gpu.reservation
                else None
            ),
            placement=cfg.gpu.placement,
            driver_version=cfg.gpu.driver_version,
            additional_networks=nets.node_networks,
            dranet=cfg.dranet,
            max_pods_per_node=cfg.gpu.max_pods_per_node,
            labels=labels,
            # Behind the job queue a flex-start pool gets its nodes through Kueue's
            # ProvisioningRequests only (program.queue).
            queued_provisioning=cfg.queue_enabled and cfg.gpu.capacity == "flex-start",
            version=cfg.gpu.version,
            timeout_minutes=gpu_pool_timeout_minutes(cfg.gpu.max_nodes),
            # An upgrade moves the control plane, then the system pool, the GPU pool last: the
            # GPU nodes are recreated only once the pool the Ray head runs on is done.
            after=[system_pool],
        ),
    )
    # The only Kubernetes provider: built from the cluster's outputs with an exec kubeconfig
    # (no token in state), after a schedulable pool exists. Every stack disables the default
    # provider, so a resource that forgets this one fails instead of finding a stray kubeconfig.
    k8s_provider = k8s.Provider(
        "gke-k8s",
        kubeconfig=cluster.kubeconfig,
        # Which cluster this is, spelled from config. Without it the provider identifies the
        # cluster by its kubeconfig, which is unknown during a first preview and changes with
        # the endpoint or CA: every Kubernetes resource would be planned for replacement.
        cluster_identifier=f"gke_{cfg.project}_{cfg.region}_{cfg.names.cluster}",
        # When the cluster is gone (deleted outside Pulumi, or a failed first deploy), let
        # `destroy` and `refresh` forget its objects instead of failing forever - but only on
        # unprotected stacks: a production stack never drops state because its API server was
        # briefly unreachable. The README's teardown turns protect off first, so this follows.
        delete_unreachable=not cfg.protect,
        enable_server_side_apply=True,
        opts=pulumi.ResourceOptions(depends_on=[system_pool]),
    )
    gpu_networking = None
    if nets.gvnic is not None and nets.rdma is not None:
        gpu_networking = GpuNetworking(
            "gpu-net",
            GpuNetworkingArgs(
                gvnic_network=nets.gvnic.network_name,
                gvnic_subnet=nets.gvnic.subnet_name,
                rdma_network=nets.rdma.network_name,
                rdma_subnets=nets.rdma.subnet_names,
                rdma_nics=gpu.rdma_nics,
                accelerator_type=gpu.accelerator_type,
                installer_image=VERSIONS.gib_installer_image.value,
                pause_image=VERSIONS.pause_image.value,
            ),
            opts=pulumi.ResourceOptions(providers=[k8s_provider]),
        )
    return Gke(
        cluster=cluster,
        system_pool=system_pool,
        gpu_pool=gpu_pool,
        k8s_provider=k8s_provider,
        gpu_networking=gpu_networking,
    )
