"""nemo-rl-gke: GKE platform for NVIDIA NeMo RL. Wiring only: config -> components -> exports."""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from components import (
    AuthorizedCidr,
    BucketVolume,
    BucketVolumeArgs,
    GkeCluster,
    GkeClusterArgs,
    GpuNetworking,
    GpuNetworkingArgs,
    GpuNodePool,
    GpuNodePoolArgs,
    GvnicNetwork,
    GvnicNetworkArgs,
    Lustre,
    LustreArgs,
    LustreVolume,
    LustreVolumeArgs,
    MaintenancePlan,
    PrimaryNetwork,
    PrimaryNetworkArgs,
    RdmaNetwork,
    RdmaNetworkArgs,
    SystemNodePool,
    SystemNodePoolArgs,
    TrainingBucket,
    TrainingBucketArgs,
    WorkloadIdentity,
    WorkloadIdentityArgs,
)
from components.kuberay import KubeRayOperator, KubeRayOperatorArgs
from components.ray_workload import RayWorkload, RayWorkloadArgs, RdmaWiring
from components.workload_identity import workload_principal
from planning.catalog import extra_gvnic_networks
from planning.naming import base_labels
from planning.ray import grpo_entrypoint, submit_command, worker_size
from planning.versions import VERSIONS
from stack_config import load_stack_config
from stack_config.pulumi_source import current_config_values, secret_outputs

# Validate everything before the first resource is registered: a bad stack fails here
# with one message naming the key, and nothing is half-applied.
cfg = load_stack_config(current_config_values(), pulumi.get_stack())
gpu = cfg.gpu.profile
labels = base_labels(pulumi.get_stack(), cfg.labels)

# --- networks ------------------------------------------------------------------------
primary = PrimaryNetwork(
    "primary",
    PrimaryNetworkArgs(
        region=cfg.region,
        names=cfg.names,
        primary_cidr=cfg.network.primary_cidr,
        pods_cidr=cfg.network.pods_cidr,
        services_cidr=cfg.network.services_cidr,
        mtu=cfg.network.mtu,
    ),
)
# A4 / A3 Ultra nodes have a second gVNIC NIC and eight RoCE NICs; an L4 node has neither.
gvnic = (
    GvnicNetwork(
        "gvnic",
        GvnicNetworkArgs(
            region=cfg.region, names=cfg.names, cidr=cfg.network.gvnic_cidr, mtu=cfg.network.mtu
        ),
    )
    if extra_gvnic_networks(gpu)
    else None
)
rdma = (
    RdmaNetwork(
        "rdma",
        RdmaNetworkArgs(
            region=cfg.region,
            names=cfg.names,
            network_profile=cfg.network_profile,
            cidrs=cfg.rdma_cidrs,
        ),
    )
    if gpu.rdma_nics
    else None
)
# The GPU pool's extra NICs in slot order - gVNIC first, then rdma-0..7 - taken from the
# network components' outputs so no network name is typed twice.
node_networks: pulumi.Output[list[dict[str, str]]] = pulumi.Output.all(
    *[net.node_networks for net in (gvnic, rdma) if net is not None]
).apply(lambda parts: [n for part in parts for n in part])

# --- cluster and node pools ---------------------------------------------------------------
maintenance = cfg.cluster.maintenance
cluster = GkeCluster(
    "gke",
    GkeClusterArgs(
        project=cfg.project,
        region=cfg.region,
        name=cfg.names.cluster,
        node_service_account_id=cfg.names.node_service_account,
        network=primary.network_self_link,
        subnetwork=primary.subnet_self_link,
        pods_range_name=primary.pods_range_name,
        services_range_name=primary.services_range_name,
        release_channel=cfg.cluster.release_channel,
        min_version=cfg.cluster.min_version,
        authorized_networks=[
            AuthorizedCidr(name=n.name, cidr=str(n.cidr)) for n in cfg.network.authorized_networks
        ],
        maintenance=MaintenancePlan(
            window_start=maintenance.window_start,
            window_end=maintenance.window_end,
            recurrence=maintenance.recurrence,
            exclusion_scope=maintenance.exclusion_scope if maintenance.block_upgrades else None,
            exclusion_start=maintenance.exclusion_start,
        ),
        lustre_csi=cfg.lustre.enabled,
        legacy_lustre_port=cfg.legacy_lustre_port,
        gke_ray_addon=cfg.ray.operator == "gke-addon",
        protect=cfg.protect,
        labels=labels,
    ),
)
system_pool = SystemNodePool(
    "system",
    SystemNodePoolArgs(
        cluster_id=cluster.cluster_id,
        region=cfg.region,
        zone=cfg.zone,
        service_account=cluster.node_service_account_email,
        machine_type=cfg.cluster.system_pool.machine_type,
        min_nodes=cfg.cluster.system_pool.min,
        max_nodes=cfg.cluster.system_pool.max,
        disk_gb=cfg.cluster.system_pool.disk_gb,
        labels=labels,
    ),
)
gpu_pool = GpuNodePool(
    "gpu",
    GpuNodePoolArgs(
        cluster_id=cluster.cluster_id,
        project=cfg.project,
        region=cfg.region,
        zone=cfg.zone,
        gpu=gpu,
        service_account=cluster.node_service_account_email,
        capacity=cfg.gpu.capacity,
        nodes=cfg.gpu.nodes,
        autoscaling=(cfg.gpu.autoscaling.min, cfg.gpu.autoscaling.max)
        if cfg.gpu.autoscaling
        else None,
        reservation=cfg.gpu.reservation,
        reservation_project=cfg.gpu.reservation_project,
        placement=cfg.gpu.placement,
        driver_version=cfg.gpu.driver_version,
        additional_networks=node_networks,
        labels=labels,
    ),
)

# --- storage (GCP side) ----------------------------------------------------------------
# Lustre depends only on the VPC, never on the cluster or its pools: the slowest resource of
# the stack is created in parallel with GKE.
lustre = (
    Lustre(
        "lustre",
        LustreArgs(
            project=cfg.project,
            zone=cfg.zone,
            names=cfg.names,
            network_id=primary.network_id,
            capacity_gib=cfg.lustre.capacity_gib,
            throughput=cfg.lustre.throughput,
            filesystem=cfg.lustre.filesystem,
            gke_support=cfg.lustre.gke_support,
            psa_prefix_length=cfg.lustre.psa_prefix_length,
            protect=cfg.protect,
            labels=labels,
        ),
    )
    if cfg.lustre.enabled
    else None
)
project_number = gcp.organizations.get_project_output(project_id=cfg.project).number
bucket = (
    TrainingBucket(
        "data",
        TrainingBucketArgs(
            project=cfg.project,
            location=cfg.region,
            name=cfg.bucket_name,
            soft_delete_days=cfg.bucket.soft_delete_days,
            protect=cfg.protect,
            # The Ray pods' KSA, by its Workload Identity principal (no GSA, no key).
            reader_writers=[
                pulumi.Output.from_input(project_number).apply(
                    lambda number: workload_principal(
                        number, cfg.project, cfg.ray.namespace, cfg.ray.service_account
                    )
                )
            ],
            labels=labels,
        ),
    )
    if cfg.bucket.enabled
    else None
)

# --- Kubernetes ------------------------------------------------------------------------
# The only Kubernetes provider: built from the cluster's outputs with an exec kubeconfig
# (no token in state). Every stack disables the default provider, so a resource that forgets
# this one fails instead of reaching a stray kubeconfig.
k8s_provider = k8s.Provider(
    "gke-k8s",
    kubeconfig=cluster.kubeconfig,
    enable_server_side_apply=True,
    opts=pulumi.ResourceOptions(depends_on=[system_pool]),
)
k8s_opts = pulumi.ResourceOptions(providers=[k8s_provider])

gpu_networking = (
    GpuNetworking(
        "gpu-net",
        GpuNetworkingArgs(
            gvnic_network=gvnic.network_name,
            gvnic_subnet=gvnic.subnet_name,
            rdma_network=rdma.network_name,
            rdma_subnets=rdma.subnet_names,
            rdma_nics=gpu.rdma_nics,
            accelerator_type=gpu.accelerator_type,
            installer_image=VERSIONS.gib_installer_image.value,
            pause_image=VERSIONS.pause_image.value,
        ),
        opts=k8s_opts,
    )
    if gvnic is not None and rdma is not None
    else None
)

identity = WorkloadIdentity(
    "workload",
    WorkloadIdentityArgs(
        project=cfg.project,
        project_number=project_number,
        namespace=cfg.ray.namespace,
        service_account=cfg.ray.service_account,
    ),
    opts=k8s_opts,
)
lustre_volume = (
    LustreVolume(
        "lustre-volume",
        LustreVolumeArgs(
            pv_name=cfg.names.lustre_volume,
            namespace=identity.namespace,
            claim_name="lustre-data",
            volume_handle=lustre.volume_handle,
            ip=lustre.ip,
            filesystem=lustre.filesystem,
            capacity_gib=cfg.lustre.capacity_gib,
            throughput=cfg.lustre.throughput,
        ),
        opts=k8s_opts,
    )
    if lustre is not None
    else None
)
bucket_volume = (
    BucketVolume(
        "bucket-volume",
        BucketVolumeArgs(
            pv_name=cfg.names.bucket_volume,
            namespace=identity.namespace,
            claim_name="bucket-data",
            bucket_name=bucket.bucket_name,
        ),
        opts=k8s_opts,
    )
    if bucket is not None
    else None
)

# --- Ray platform and the NeMo RL workload -------------------------------------------------
operator = (
    KubeRayOperator(
        "kuberay",
        KubeRayOperatorArgs(
            chart_version=VERSIONS.kuberay_chart.value,
            repository=VERSIONS.kuberay_helm_repo.value,
            kubectl_image=VERSIONS.kubectl_image.value,
            node_selector=system_pool.node_selector,
        ),
        opts=k8s_opts,
    )
    if cfg.ray.operator == "helm"
    else None  # GKE's Ray add-on (enabled on the cluster above) is the operator instead
)
data_claim = (
    lustre_volume.claim_name if lustre_volume is not None else bucket_volume.claim_name  # type: ignore[union-attr]
)
run = cfg.grpo_run
entrypoint = grpo_entrypoint(run)
autoscaling = cfg.gpu.autoscaling
ray = RayWorkload(
    "ray",
    RayWorkloadArgs(
        namespace=identity.namespace,
        service_account=identity.service_account,
        cluster_name=cfg.ray.cluster_name,
        image=VERSIONS.nemo_rl_image.value,
        ray_version=VERSIONS.ray_version.value,
        head_cpu=cfg.ray.head.cpu,
        head_memory_gib=cfg.ray.head.memory_gib,
        head_node_selector=system_pool.node_selector,
        worker=worker_size(gpu),
        worker_node_selector=gpu_pool.node_selector,
        worker_tolerations=gpu_pool.tolerations,
        replicas=autoscaling.min if autoscaling else cfg.gpu.max_nodes,
        min_replicas=autoscaling.min if autoscaling else cfg.gpu.max_nodes,
        max_replicas=cfg.gpu.max_nodes,
        data_claim=data_claim,
        data_is_gcsfuse=lustre_volume is None,
        rdma=RdmaWiring(
            interfaces_annotation=gpu_networking.interfaces_annotation,
            tuner_config=gpu.nccl_tuner_config or "",
        )
        if gpu_networking is not None
        else None,
        secrets=secret_outputs(),
        job_entrypoint=entrypoint if cfg.ray.job.enabled else None,
        job_name=cfg.ray.job.name,
        operator=[operator] if operator is not None else [],
        labels={"stack": pulumi.get_stack()},
    ),
    opts=k8s_opts,
)

# --- outputs ---------------------------------------------------------------------------
pulumi.export("clusterName", cluster.name)
pulumi.export("clusterLocation", cluster.location)
pulumi.export("kubeconfig", cluster.kubeconfig)
pulumi.export("getCredentialsCommand", cluster.get_credentials_command)
pulumi.export("gpuNodePool", gpu_pool.pool_name)
pulumi.export("gpuType", gpu.key)
pulumi.export("additionalNodeNetworks", node_networks)
if gpu_networking is not None:
    pulumi.export("interfacesAnnotation", gpu_networking.interfaces_annotation)
pulumi.export("workloadNamespace", identity.namespace)
pulumi.export("rayHeadService", ray.head_service)
pulumi.export("rayDashboardCommand", ray.port_forward_command)
pulumi.export("grpoSubmitCommand", submit_command(entrypoint))
if lustre is not None and lustre_volume is not None:
    pulumi.export("lustreInstance", lustre.instance_id)
    pulumi.export("lustreClaim", lustre_volume.claim_name)
if bucket is not None and bucket_volume is not None:
    pulumi.export("bucketUrl", bucket.url)
    pulumi.export("bucketClaim", bucket_volume.claim_name)
