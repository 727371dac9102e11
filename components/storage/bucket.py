"""GCS bucket for datasets and checkpoints, mounted in pods through the GCS FUSE CSI driver."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from components.storage.volume_claim import bound_claim

GCSFUSE_CSI_DRIVER = "gcsfuse.csi.storage.gke.io"
BUCKET_ROLE = "roles/storage.objectUser"
"""Read, write and delete objects; nothing on bucket settings or IAM (tutorial §8.1)."""

# Tuned for training as in Google's verl sample (tutorial-facts §8.4): parallel downloads and
# an unbounded file cache for large shards, streaming writes for checkpoints, and metadata
# TTLs of 0 so a checkpoint one worker writes is visible to the others at once.
TRAINING_MOUNT_OPTIONS: tuple[str, ...] = (
    "implicit-dirs",
    "metadata-cache:negative-ttl-secs:0",
    "metadata-cache:ttl-secs:0",
    "metadata-cache:stat-cache-max-size-mb:-1",
    "metadata-cache:type-cache-max-size-mb:-1",
    "file-cache:max-size-mb:-1",
    "file-cache:cache-file-for-range-read:true",
    "file-cache:enable-parallel-downloads:true",
    "read_ahead_kb=1024",
    "write:enable-streaming-writes:true",
    "write:global-max-blocks:200000",
)


@dataclass(frozen=True, kw_only=True)
class TrainingBucketArgs:
    """Inputs of the bucket."""

    project: str
    location: str
    name: str
    soft_delete_days: int
    protect: bool
    reader_writers: Sequence[pulumi.Input[str]] = ()
    """IAM principals granted `roles/storage.objectUser` on this bucket only."""
    principals_exist_after: Sequence[pulumi.Resource] = ()
    """What must exist before the principals can be named in IAM: the Workload Identity pool
    `<project>.svc.id.goog` exists only once the project's first WI cluster does."""
    labels: Mapping[str, str] = field(default_factory=dict)
    apis: Sequence[pulumi.Resource] = ()
    """What enables the APIs this component calls (the project's `projects.Service`s)."""


class TrainingBucket(pulumi.ComponentResource):
    """Uniform-access, hierarchical-namespace bucket with soft delete; protected in production."""

    bucket_name: pulumi.Output[str]
    """The bucket's name (the GCS FUSE volume handle)."""
    url: pulumi.Output[str]
    """`gs://<name>`."""

    def __init__(
        self, name: str, args: TrainingBucketArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("nemo:storage:Bucket", name, None, opts)
        bucket = gcp.storage.Bucket(
            f"{name}-bucket",
            name=args.name,
            project=args.project,
            location=args.location,
            storage_class="STANDARD",
            uniform_bucket_level_access=True,
            public_access_prevention="enforced",
            # Hierarchical namespace: real folders, faster listing and atomic renames for
            # checkpoint directories (tutorial §8.1 --enable-hierarchical-namespace).
            hierarchical_namespace=gcp.storage.BucketHierarchicalNamespaceArgs(enabled=True),
            # HNS buckets cannot version objects; soft delete is what recovers a deleted
            # checkpoint.
            soft_delete_policy=gcp.storage.BucketSoftDeletePolicyArgs(
                retention_duration_seconds=args.soft_delete_days * 86_400
            ),
            # Only a throwaway stack may delete a bucket that still holds objects.
            force_destroy=not args.protect,
            labels=dict(args.labels),
            opts=pulumi.ResourceOptions(
                parent=self, protect=args.protect, depends_on=list(args.apis)
            ),
        )
        for index, member in enumerate(args.reader_writers):
            gcp.storage.BucketIAMMember(
                f"{name}-object-user-{index}",
                bucket=bucket.name,
                role=BUCKET_ROLE,
                member=member,
                opts=pulumi.ResourceOptions(
                    parent=self, depends_on=list(args.principals_exist_after)
                ),
            )
        self.bucket_name = bucket.name
        self.url = bucket.url
        self.register_outputs({"bucket_name": self.bucket_name, "url": self.url})


@dataclass(frozen=True, kw_only=True)
class BucketVolumeArgs:
    """Inputs of the GCS FUSE PV/PVC."""

    pv_name: str
    namespace: pulumi.Input[str]
    claim_name: str
    bucket_name: pulumi.Input[str]
    capacity: str = "1Ti"
    """Nominal: GCS has no size, Kubernetes needs one for binding."""
    mount_options: Sequence[str] = TRAINING_MOUNT_OPTIONS


class BucketVolume(pulumi.ComponentResource):
    """Static GCS FUSE PersistentVolume and its ReadWriteMany claim.

    Pods that mount it need the `gke-gcsfuse/volumes: "true"` annotation (the sidecar) and a
    service account with access to the bucket.
    """

    claim_name: pulumi.Output[str]
    """PVC name for pods to mount."""

    def __init__(
        self, name: str, args: BucketVolumeArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("nemo:storage:BucketVolume", name, None, opts)
        storage_class = "gcsfuse-static"  # label for static binding; no provisioner behind it
        pv = k8s.core.v1.PersistentVolume(
            f"{name}-pv",
            metadata={"name": args.pv_name},
            spec={
                "storage_class_name": storage_class,
                "capacity": {"storage": args.capacity},
                "access_modes": ["ReadWriteMany"],
                # Static volume: the PV never owns the bucket, and Delete would only leave the
                # PV Failed (the driver cannot delete a bucket).
                "persistent_volume_reclaim_policy": "Retain",
                "claim_ref": {"namespace": args.namespace, "name": args.claim_name},
                "mount_options": list(args.mount_options),
                "csi": {
                    "driver": GCSFUSE_CSI_DRIVER,
                    "volume_handle": args.bucket_name,
                    "volume_attributes": {"gcsfuseMetadataPrefetchOnMount": "true"},
                },
            },
            opts=pulumi.ResourceOptions(parent=self),
        )
        pvc = bound_claim(
            f"{name}-pvc",
            pv,
            namespace=args.namespace,
            claim_name=args.claim_name,
            storage_class=storage_class,
            size=args.capacity,
            parent=self,
        )
        self.claim_name = pvc.metadata.name
        self.register_outputs({"claim_name": self.claim_name})
