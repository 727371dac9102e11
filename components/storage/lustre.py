"""Managed Lustre: private services access, the LNet firewall rule, the instance, its PV/PVC."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from ipaddress import IPv4Network

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from components.storage.volume_claim import bound_claim
from planning.naming import Names

LUSTRE_CSI_DRIVER = "lustre.csi.storage.gke.io"
LUSTRE_MOUNT_ANNOTATION = "nemo-rl-gke/lustre-mount"
"""On the Lustre claim: the instance's mount point (`<ip>@tcp:/<filesystem>`)."""
PORT_RECOMMENDED = 988
"""LNet port of an instance without GKE support (needs nodes at 1.33.2-gke.4780000+)."""
PORT_GKE_SUPPORT = 6988
"""LNet port of an instance created with GKE support (needs the cluster's legacy port)."""
SERVICE_NETWORKING = "servicenetworking.googleapis.com"


def lnet_port(gke_support: bool) -> int:
    """The port the instance listens on; the firewall and the cluster flag follow it."""
    return PORT_GKE_SUPPORT if gke_support else PORT_RECOMMENDED


def mount_ip(mount_point: str) -> str:
    """`10.1.2.3@tcp:/lustrefs` -> `10.1.2.3` (the PV's `ip` attribute)."""
    return mount_point.split("@", 1)[0]


@dataclass(frozen=True, kw_only=True)
class LustreArgs:
    """Inputs of the instance. Mirrors Cluster Toolkit's `managed-lustre` + PSA modules."""

    project: str
    zone: str
    names: Names
    network_id: pulumi.Input[str]
    """`projects/<p>/global/networks/<n>`: the cluster's VPC (Lustre must share it)."""
    capacity_gib: int
    throughput: int
    filesystem: str
    gke_support: bool
    psa_range: IPv4Network
    """Private services access range for the Lustre servers: part of the address plan."""
    protect: bool
    create_timeout_minutes: int
    """How long the instance's create may take (planning.storage.CREATE_TIMEOUT_MINUTES)."""
    labels: Mapping[str, str] = field(default_factory=dict)


class Lustre(pulumi.ComponentResource):
    """A Managed Lustre instance reachable from the cluster VPC.

    Private services access gives Google's Lustre servers a peered range; the firewall admits
    only that range, only on the instance's LNet port. Nothing here depends on the GKE cluster,
    so the slowest resource of the stack is created in parallel with it.
    """

    instance_id: pulumi.Output[str]
    """Instance id (the last part of the PV's volumeHandle)."""
    volume_handle: pulumi.Output[str]
    """`<project>/<zone>/<instance>`: the Lustre CSI driver's volume handle."""
    ip: pulumi.Output[str]
    """MGS address: the mount point before `@`."""
    filesystem: pulumi.Output[str]
    """Lustre file system name."""
    psa_range: pulumi.Output[str]
    """CIDR reserved for the Lustre servers (from the address plan, never chosen by Google)."""
    port: int
    """LNet port the firewall opens (988, or 6988 with GKE support)."""

    def __init__(
        self, name: str, args: LustreArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("nemo:storage:Lustre", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        names = args.names

        address = gcp.compute.GlobalAddress(
            f"{name}-psa",
            name=names.lustre_psa_range,
            project=args.project,
            purpose="VPC_PEERING",
            address_type="INTERNAL",
            # The range is planned, not left to Google: Google looks only at this VPC and would
            # not know that GPU nodes also route the gVNIC and RDMA ranges on their other NICs.
            # Being ours, it is also known during a first preview, where policies check it.
            address=str(args.psa_range.network_address),
            prefix_length=args.psa_range.prefixlen,
            network=args.network_id,
            description="Managed Lustre private services access",
            opts=child,
        )
        connection = gcp.servicenetworking.Connection(
            f"{name}-psa-connection",
            network=args.network_id,
            service=SERVICE_NETWORKING,
            reserved_peering_ranges=[address.name],
            # Not relied on: the destroy order is (the instance depends on this connection and
            # is deleted first). In the provider code read (google-beta 7.45) it deletes as any
            # connection does; providers with magic-modules#18476 fall back to removing the
            # peering when producers linger, which ABANDON would leave, blocking the VPC's delete.
            deletion_policy="REMOVE_PEERING",
            opts=child,
        )
        psa_range = pulumi.Output.from_input(str(args.psa_range))
        self.port = lnet_port(args.gke_support)
        gcp.compute.Firewall(
            f"{name}-lnet",
            name=names.lustre_firewall,
            project=args.project,
            network=args.network_id,
            direction="INGRESS",
            priority=1000,
            source_ranges=[str(args.psa_range)],
            allows=[gcp.compute.FirewallAllowArgs(protocol="tcp", ports=[str(self.port)])],
            description=f"Managed Lustre LNet (tcp:{self.port}) from the private services range",
            opts=child,
        )
        instance = gcp.lustre.Instance(
            f"{name}-instance",
            instance_id=names.lustre_instance,
            project=args.project,
            location=args.zone,
            network=args.network_id,
            filesystem=args.filesystem,
            # The API takes both numbers as strings.
            capacity_gib=str(args.capacity_gib),
            per_unit_storage_throughput=str(args.throughput),
            gke_support_enabled=args.gke_support,
            description="nemo-rl-gke training data and checkpoints",
            labels=dict(args.labels),
            # Two locks in production: Pulumi's protect, and the provider refusing to delete.
            deletion_policy="PREVENT" if args.protect else "DELETE",
            opts=pulumi.ResourceOptions(
                parent=self,
                protect=args.protect,
                depends_on=[connection],
                # The instance id is fixed (the stack's name): a replacement created first would
                # ask the API for an id that still exists and be refused, so the old instance
                # goes first (pulumi-gcp does not say so itself: instanceId is not auto-named).
                delete_before_replace=True,
                custom_timeouts=pulumi.CustomTimeouts(
                    create=f"{args.create_timeout_minutes}m", delete="60m"
                ),
            ),
        )

        self.instance_id = instance.instance_id
        self.volume_handle = pulumi.Output.concat(
            args.project, "/", args.zone, "/", instance.instance_id
        )
        self.ip = instance.mount_point.apply(mount_ip)
        self.filesystem = instance.filesystem
        self.psa_range = psa_range
        self.register_outputs(
            {
                "instance_id": self.instance_id,
                "volume_handle": self.volume_handle,
                "ip": self.ip,
                "filesystem": self.filesystem,
                "psa_range": self.psa_range,
                "port": self.port,
            }
        )


@dataclass(frozen=True, kw_only=True)
class LustreVolumeArgs:
    """Inputs of the static PV/PVC, all taken from the Lustre component's outputs."""

    pv_name: str
    namespace: pulumi.Input[str]
    claim_name: str
    volume_handle: pulumi.Input[str]
    ip: pulumi.Input[str]
    filesystem: pulumi.Input[str]
    capacity_gib: int
    """The instance's size now: the PersistentVolume's capacity (a PV may grow)."""
    claim_gib: int
    """What the claim asks for: the size the instance was created at, never changed after. The
    API server refuses to grow a claim without an expandable StorageClass of its class name
    (admission plugin PersistentVolumeClaimResize) and to shrink one at all, and a static PV
    binds any claim no larger than itself, so the claim stays as it was while Lustre grows."""
    throughput: int


class LustreVolume(pulumi.ComponentResource):
    """A static PersistentVolume for the instance and a ReadWriteMany claim bound to it."""

    claim_name: pulumi.Output[str]
    """PVC name for pods to mount (namespace-scoped)."""

    def __init__(
        self, name: str, args: LustreVolumeArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("nemo:storage:LustreVolume", name, None, opts)
        # Only a label for static binding (the sample's naming); no provisioner behind it.
        storage_class = f"lustre-rwx-{args.throughput}mbps-per-tib"
        size = f"{args.capacity_gib}Gi"
        pv = k8s.core.v1.PersistentVolume(
            f"{name}-pv",
            metadata={"name": args.pv_name},
            spec={
                "storage_class_name": storage_class,
                "capacity": {"storage": size},
                "access_modes": ["ReadWriteMany"],
                "volume_mode": "Filesystem",
                # Deleting the claim must never delete training data.
                "persistent_volume_reclaim_policy": "Retain",
                "claim_ref": {"namespace": args.namespace, "name": args.claim_name},
                "csi": {
                    "driver": LUSTRE_CSI_DRIVER,
                    "volume_handle": args.volume_handle,
                    "volume_attributes": {"ip": args.ip, "filesystem": args.filesystem},
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
            size=f"{args.claim_gib}Gi",
            parent=self,
            # The mount the claim reaches, for whoever reads the claim - and so that a preview
            # which replaces the instance has a claim with an unknown input. A throughput change
            # renames the storage class, so the claim is replaced; with every input known, the
            # Kubernetes provider (4.25.0) previews that replacement as a server dry-run of the
            # same claim, which the API server refuses ("spec is immutable after creation": the
            # provider renames only on "field is immutable") and the preview fails. A replaced
            # instance's mount is unknown until it exists, and the provider skips the dry-run.
            annotations={
                LUSTRE_MOUNT_ANNOTATION: pulumi.Output.concat(args.ip, "@tcp:/", args.filesystem)
            },
        )
        self.claim_name = pvc.metadata.name
        self.register_outputs({"claim_name": self.claim_name})
