"""Storage components: Managed Lustre (tutorial-facts §9, platform-facts §a) and the GCS bucket
with GCS FUSE (§8.1, §8.4).

Proof limit: mocks prove the requests, not that the zone has Lustre capacity, that the PSA
range is free, or that the CSI drivers mount these volumes.
"""

from __future__ import annotations

from ipaddress import IPv4Network
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pytest

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
from components.storage.bucket import TRAINING_MOUNT_OPTIONS
from components.storage.lustre import mount_ip
from planning.naming import Names
from preflight.mock_run import run_in_mocks
from preflight.recorder import UNKNOWN_MASK
from pulumi_offline.fake_cloud import FakeCloud
from tests.harness import PROJECT, run_component

NET = "projects/test-project/global/networks/nrl-net"


def lustre_args(**changes: Any) -> LustreArgs:
    base: dict[str, Any] = {
        "project": "test-project",
        "zone": "us-central1-b",
        "names": Names("nrl"),
        "network_id": NET,
        "capacity_gib": 18000,
        "throughput": 500,
        "filesystem": "lustrefs",
        "gke_support": False,
        "psa_range": IPv4Network("172.16.0.0/20"),
        "protect": True,
        "create_timeout_minutes": 120,
        "labels": {"app": "nemo-rl-gke"},
    }
    base.update(changes)
    return LustreArgs(**base)


def test_lustre_instance_and_private_services_access() -> None:
    records, out = run_component(
        lambda: {"handle": (lu := Lustre("lustre", lustre_args())).volume_handle, "ip": lu.ip}
    )
    assert set(records) == {
        "lustre",
        "lustre-psa",
        "lustre-psa-connection",
        "lustre-lnet",
        "lustre-instance",
    }
    psa = records["lustre-psa"].inputs
    # §9: gcloud compute addresses create ... --global --purpose=VPC_PEERING --prefix-length=20
    assert (psa["purpose"], psa["addressType"], psa["address"], psa["prefixLength"]) == (
        "VPC_PEERING",
        "INTERNAL",
        "172.16.0.0",  # planned (network.psaCidr), never left to Google
        20.0,
    )
    assert psa["network"] == NET
    conn = records["lustre-psa-connection"].inputs
    assert conn["service"] == "servicenetworking.googleapis.com"
    assert conn["reservedPeeringRanges"] == ["nrl-psa"]
    assert conn["deletionPolicy"] == "REMOVE_PEERING"  # never ABANDON: it would block VPC deletion
    inst = records["lustre-instance"]
    # §9: --per-unit-storage-throughput=500 --capacity-gib=18000 --filesystem=lustrefs
    #     --location=ZONE --network=projects/P/global/networks/N (strings on the API)
    assert inst.inputs["capacityGib"] == "18000"
    assert inst.inputs["perUnitStorageThroughput"] == "500"
    assert inst.inputs["filesystem"] == "lustrefs"
    assert inst.inputs["location"] == "us-central1-b"
    assert inst.inputs["network"] == NET
    assert inst.inputs["gkeSupportEnabled"] is False
    assert inst.inputs["deletionPolicy"] == "PREVENT"
    assert inst.protect is True
    assert records["lustre-psa-connection"].urn in inst.dependencies
    assert out == {"handle": "test-project/us-central1-b/nrl-lustre", "ip": "192.0.2.10"}


@pytest.mark.parametrize(("gke_support", "port"), [(False, "988"), (True, "6988")])
def test_firewall_port_follows_gke_support(gke_support: bool, port: str) -> None:
    records, _ = run_component(lambda: Lustre("lustre", lustre_args(gke_support=gke_support)).ip)
    fw = records["lustre-lnet"].inputs
    assert fw["allows"] == [{"protocol": "tcp", "ports": [port]}]
    # only from the private services range reserved for the Lustre servers
    assert fw["sourceRanges"] == ["172.16.0.0/20"]
    assert records["lustre-instance"].inputs["gkeSupportEnabled"] is gke_support


def test_unprotected_lustre_can_be_deleted() -> None:
    records, _ = run_component(lambda: Lustre("lustre", lustre_args(protect=False)).ip)
    assert records["lustre-instance"].inputs["deletionPolicy"] == "DELETE"
    assert records["lustre-instance"].protect is False


class OtherMountPoint(FakeCloud):
    """A cloud that answers a different mount point, to prove the PV reads the instance."""

    def new_resource(
        self, args: pulumi.runtime.MockResourceArgs
    ) -> tuple[str | None, dict[Any, Any]]:
        rid, outputs = super().new_resource(args)
        if args.typ == "gcp:lustre/instance:Instance":
            outputs["mountPoint"] = "10.9.8.7@tcp:/other"
            outputs["filesystem"] = "other"
            outputs["instanceId"] = "renamed-by-cloud"
        return rid, outputs


def lustre_volume() -> Any:
    """A Lustre instance and its volume; the claim's name."""
    provider = k8s.Provider("k8s", kubeconfig="{}")
    lu = Lustre("lustre", lustre_args())
    return LustreVolume(
        "vol",
        LustreVolumeArgs(
            pv_name="nrl-lustre",
            namespace="nemo-rl",
            claim_name="lustre-data",
            volume_handle=lu.volume_handle,
            ip=lu.ip,
            filesystem=lu.filesystem,
            capacity_gib=18000,
            claim_gib=18000,
            throughput=500,
        ),
        opts=pulumi.ResourceOptions(providers=[provider]),
    ).claim_name


def test_lustre_pv_is_built_from_instance_outputs() -> None:
    records, claim = run_in_mocks(
        lustre_volume,
        project=PROJECT,
        stack="test",
        values={},
        secret_keys=[],
        fake=OtherMountPoint("test-project", "us-central1", "us-central1-b"),
    )
    by_name = {r.name: r for r in records}
    pv = by_name["vol-pv"].inputs["spec"]
    assert pv["csi"] == {
        "driver": "lustre.csi.storage.gke.io",
        "volumeHandle": "test-project/us-central1-b/renamed-by-cloud",
        "volumeAttributes": {"ip": "10.9.8.7", "filesystem": "other"},
    }
    assert pv["persistentVolumeReclaimPolicy"] == "Retain"
    assert pv["accessModes"] == ["ReadWriteMany"]
    assert pv["capacity"] == {"storage": "18000Gi"}
    assert pv["claimRef"] == {"namespace": "nemo-rl", "name": "lustre-data"}
    pvc = by_name["vol-pvc"].inputs
    assert pvc["metadata"] == {
        "name": "lustre-data",
        "namespace": "nemo-rl",
        "annotations": {"nemo-rl-gke/lustre-mount": "10.9.8.7@tcp:/other"},
    }
    assert pvc["spec"]["volumeName"] == "nrl-lustre"
    assert pvc["spec"]["accessModes"] == ["ReadWriteMany"]
    assert pvc["spec"]["storageClassName"] == pv["storageClassName"]
    assert claim == "lustre-data"


def test_mount_ip() -> None:
    assert mount_ip("172.16.0.3@tcp:/lustrefs") == "172.16.0.3"


def bucket(protect: bool) -> dict[str, Any]:
    records, _ = run_component(
        lambda: (
            TrainingBucket(
                "data",
                TrainingBucketArgs(
                    project="test-project",
                    location="us-central1",
                    name="test-project-nrl-data",
                    soft_delete_days=7,
                    protect=protect,
                    reader_writers=["principal://example/ns/nemo-rl/sa/generic-ksa"],
                    labels={"app": "nemo-rl-gke"},
                ),
            ).url
        )
    )
    return records


def test_bucket_settings() -> None:
    records = bucket(protect=False)
    b = records["data-bucket"].inputs
    # §8.1: --uniform-bucket-level-access --enable-hierarchical-namespace, in the region
    assert b["uniformBucketLevelAccess"] is True
    assert b["hierarchicalNamespace"] == {"enabled": True}
    assert b["location"] == "us-central1"
    assert b["publicAccessPrevention"] == "enforced"
    assert b["softDeletePolicy"] == {"retentionDurationSeconds": 604800.0}
    assert b["labels"] == {"app": "nemo-rl-gke"}
    assert b["forceDestroy"] is True
    iam = records["data-object-user-0"].inputs
    assert iam == {
        "bucket": "test-project-nrl-data",
        "role": "roles/storage.objectUser",
        "member": "principal://example/ns/nemo-rl/sa/generic-ksa",
    }


def test_protected_bucket_is_never_force_destroyed() -> None:
    records = bucket(protect=True)
    assert records["data-bucket"].inputs["forceDestroy"] is False
    assert records["data-bucket"].protect is True


def test_gcsfuse_volume() -> None:
    def build() -> Any:
        provider = k8s.Provider("k8s", kubeconfig="{}")
        return BucketVolume(
            "vol",
            BucketVolumeArgs(
                pv_name="nrl-bucket",
                namespace="nemo-rl",
                claim_name="bucket-data",
                bucket_name="b1",
            ),
            opts=pulumi.ResourceOptions(providers=[provider]),
        ).claim_name

    records, claim = run_component(build)
    pv = records["vol-pv"].inputs["spec"]
    assert pv["csi"]["driver"] == "gcsfuse.csi.storage.gke.io"
    assert pv["csi"]["volumeHandle"] == "b1"
    assert pv["mountOptions"] == list(TRAINING_MOUNT_OPTIONS)
    # §8.4's list, option by option
    for option in (
        "implicit-dirs",
        "file-cache:enable-parallel-downloads:true",
        "write:enable-streaming-writes:true",
        "read_ahead_kb=1024",
    ):
        assert option in pv["mountOptions"]
    assert pv["persistentVolumeReclaimPolicy"] == "Retain"
    assert records["vol-pvc"].inputs["spec"]["volumeName"] == "nrl-bucket"
    assert claim == "bucket-data"


def test_workload_identity_principal_and_roles() -> None:
    def build() -> Any:
        provider = k8s.Provider("k8s", kubeconfig="{}")
        return WorkloadIdentity(
            "workload",
            WorkloadIdentityArgs(
                project="test-project",
                project_number="123456789012",
                namespace="nemo-rl",
                service_account="generic-ksa",
            ),
            opts=pulumi.ResourceOptions(providers=[provider]),
        ).principal

    records, principal = run_component(build)
    # §8.1's principal:// form: direct Workload Identity Federation, no GSA
    assert principal == (
        "principal://iam.googleapis.com/projects/123456789012/locations/global/"
        "workloadIdentityPools/test-project.svc.id.goog/subject/ns/nemo-rl/sa/generic-ksa"
    )
    roles = {
        r.inputs["role"]: r.inputs["member"]
        for r in records.values()
        if r.type.endswith("IAMMember")
    }
    assert roles == {
        "roles/logging.logWriter": principal,
        "roles/monitoring.metricWriter": principal,
    }
    assert records["workload-namespace"].inputs["metadata"]["name"] == "nemo-rl"
    assert records["workload-ksa"].inputs["metadata"] == {
        "name": "generic-ksa",
        "namespace": "nemo-rl",
    }


def test_the_claim_of_an_instance_not_yet_created_has_an_unknown_input() -> None:
    """Previewed with the instance to be created (or replaced), the claim's mount annotation is
    unknown: the Kubernetes provider then plans the claim without a server dry-run. With every
    input known, a throughput change (a new storage class: the claim is replaced) made it
    dry-run the same claim, which the API server refused (seen on the engine test bed's b200
    stack: "spec is immutable after creation"), and the preview failed."""
    records, _ = run_in_mocks(
        lustre_volume,
        project=PROJECT,
        stack="test",
        values={},
        secret_keys=[],
        fake=FakeCloud("test-project", "us-central1", "us-central1-b", preview=True),
        preview=True,
    )
    by_name = {r.name: r for r in records}
    claim = by_name["vol-pvc"].inputs
    assert claim["metadata"]["annotations"] == {"nemo-rl-gke/lustre-mount": UNKNOWN_MASK}
    assert claim["spec"]["storageClassName"] == "lustre-rwx-500mbps-per-tib"  # known
