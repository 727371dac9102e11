"""Shared storage: Managed Lustre or the GCS bucket, the workload identity, and the /data claim."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp

from components import (
    BucketVolume,
    BucketVolumeArgs,
    Lustre,
    LustreArgs,
    LustreVolume,
    LustreVolumeArgs,
    TrainingBucket,
    TrainingBucketArgs,
    WorkloadIdentity,
    WorkloadIdentityArgs,
)
from components.ray.identity import workload_principal
from planning.naming import stateful_labels
from planning.storage import CREATE_TIMEOUT_MINUTES
from program.cluster import Gke
from program.network import Networks
from stack_config import StackConfig


@dataclass(frozen=True)
class CloudStorage:
    """GCP-side storage, created without waiting for the cluster."""

    lustre: Lustre | None
    bucket: TrainingBucket | None
    project_number: pulumi.Output[str]


@dataclass(frozen=True)
class Volumes:
    """Kubernetes-side storage and the identity the Ray pods use."""

    identity: WorkloadIdentity
    lustre: LustreVolume | None
    bucket: BucketVolume | None

    @property
    def data_claim(self) -> pulumi.Output[str]:
        """PVC mounted at /data: Lustre when present, else the bucket."""
        volume = self.lustre or self.bucket
        if volume is None:  # StackConfig rejects a stack with neither
            raise RuntimeError("no shared storage: enable lustre or bucket")
        return volume.claim_name

    @property
    def gcsfuse(self) -> bool:
        """/data is the GCS FUSE bucket (pods need the sidecar annotation)."""
        return self.lustre is None


def build_cloud_storage(
    cfg: StackConfig,
    nets: Networks,
    gke: Gke,
    labels: Mapping[str, str],
    apis: Sequence[pulumi.Resource] = (),
) -> CloudStorage:
    """Lustre depends only on the VPC, never on the cluster or its pools: the slowest
    resource of the stack is created in parallel with GKE. Only the bucket's grant to the
    workload's Workload Identity principal waits for the cluster (whose creation makes the
    project's identity pool)."""
    lustre = None
    if cfg.lustre.enabled:
        lustre = Lustre(
            "lustre",
            LustreArgs(
                project=cfg.project,
                zone=cfg.zone,
                names=cfg.names,
                network_id=nets.primary.network_id,
                capacity_gib=cfg.lustre.capacity_gib,
                throughput=cfg.lustre.throughput,
                filesystem=cfg.lustre.filesystem,
                gke_support=cfg.lustre.gke_support,
                psa_range=cfg.network.psa_cidr,
                protect=cfg.protect,
                create_timeout_minutes=CREATE_TIMEOUT_MINUTES,
                labels=stateful_labels(dict(labels), cfg.protection_lift),
            ),
        )
    project_number = gcp.organizations.get_project_output(project_id=cfg.project).number
    bucket = None
    if cfg.bucket.enabled:
        # The Ray pods' KSA, by its Workload Identity principal (no GSA, no key).
        principal = project_number.apply(
            lambda number: workload_principal(
                number, cfg.project, cfg.ray.namespace, cfg.workload_service_account
            )
        )
        bucket = TrainingBucket(
            "data",
            TrainingBucketArgs(
                project=cfg.project,
                location=cfg.region,
                name=cfg.bucket_name,
                soft_delete_days=cfg.bucket.soft_delete_days,
                protect=cfg.protect,
                reader_writers=[principal],
                principals_exist_after=[gke.cluster],
                labels=stateful_labels(dict(labels), cfg.protection_lift),
                apis=apis,
            ),
        )
    return CloudStorage(lustre=lustre, bucket=bucket, project_number=project_number)


def build_volumes(
    cfg: StackConfig, storage: CloudStorage, gke: Gke, *, claim_gib: int | None = None
) -> Volumes:
    """Namespace + KSA, and the PV/PVC of whichever storage the stack has; the Lustre claim
    asks for `claim_gib` (the size the instance was created at; default: its size now)."""
    identity = WorkloadIdentity(
        "workload",
        WorkloadIdentityArgs(
            project=cfg.project,
            project_number=storage.project_number,
            namespace=cfg.ray.namespace,
            service_account=cfg.workload_service_account,
            pool_exists_after=[gke.cluster],
        ),
        opts=gke.k8s_opts,
    )
    lustre_volume = None
    if storage.lustre is not None:
        lustre_volume = LustreVolume(
            "lustre-volume",
            LustreVolumeArgs(
                pv_name=cfg.names.lustre_volume,
                namespace=identity.namespace,
                claim_name="lustre-data",
                volume_handle=storage.lustre.volume_handle,
                ip=storage.lustre.ip,
                filesystem=storage.lustre.filesystem,
                capacity_gib=cfg.lustre.capacity_gib,
                claim_gib=claim_gib or cfg.lustre.capacity_gib,
                throughput=cfg.lustre.throughput,
            ),
            opts=gke.k8s_opts,
        )
    bucket_volume = None
    if storage.bucket is not None:
        bucket_volume = BucketVolume(
            "bucket-volume",
            BucketVolumeArgs(
                pv_name=cfg.names.bucket_volume,
                namespace=identity.namespace,
                claim_name="bucket-data",
                bucket_name=storage.bucket.bucket_name,
            ),
            opts=gke.k8s_opts,
        )
    return Volumes(identity=identity, lustre=lustre_volume, bucket=bucket_volume)
