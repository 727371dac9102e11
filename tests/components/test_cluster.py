"""GkeCluster: the inputs the cluster is created with.

Cross-checked with tutorial-facts §4 (S5's `gcloud container clusters create`: dataplane v2,
ip alias, multi-networking, workload pool, LustreCsiDriver + legacy port) and platform-facts
§a/§c. Proof limit: mocks prove what is sent, not that GKE accepts this combination or that
the version exists in the channel on the day of `pulumi up`.
"""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pytest

from components import AuthorizedCidr, GkeCluster, GkeClusterArgs, MaintenancePlan
from tests.harness import run_component

MAINTENANCE = MaintenancePlan(
    window_start="2026-01-03T04:00:00Z",
    window_end="2026-01-03T12:00:00Z",
    recurrence="FREQ=WEEKLY;BYDAY=SA,SU",
    exclusion_scope="NO_MINOR_OR_NODE_UPGRADES",
    exclusion_start="2026-01-01T00:00:00Z",
)


def args(**changes: Any) -> GkeClusterArgs:
    base: dict[str, Any] = {
        "project": "test-project",
        "region": "us-central1",
        "zone": "us-central1-b",
        "name": "nrl",
        "node_service_account_id": "nrl-nodes",
        "network": "net-link",
        "subnetwork": "sub-link",
        "pods_range_name": "pods",
        "services_range_name": "services",
        "release_channel": "REGULAR",
        "min_version": "1.35",
        "authorized_networks": [AuthorizedCidr(name="office", cidr="203.0.113.0/24")],
        "maintenance": MAINTENANCE,
        "lustre_csi": True,
        "legacy_lustre_port": False,
        "gke_ray_addon": False,
        "protect": True,
        "labels": {"app": "nemo-rl-gke"},
    }
    base.update(changes)
    return GkeClusterArgs(**base)


def build(a: GkeClusterArgs) -> tuple[dict[str, Any], Any]:
    def make() -> Any:
        c = GkeCluster("gke", a)
        return {
            "kubeconfig": c.kubeconfig,
            "cmd": c.get_credentials_command,
            "pool": c.workload_pool,
        }

    return run_component(make)


def test_cluster_inputs_follow_the_sample_scripts() -> None:
    records, out = build(args())
    assert set(records) == {
        "gke",
        "gke-cluster",
        "gke-nodes",
        "gke-nodes-container-defaultnodeserviceaccount",
        "gke-nodes-artifactregistry-reader",
    }
    c = records["gke-cluster"].inputs
    assert c["location"] == "us-central1"  # regional control plane
    # ... whose temporary default pool starts in the GPU zone, not the region's default zones;
    # a cluster created before the pin keeps its locations (no update of an existing one)
    assert c["nodeLocations"] == ["us-central1-b"]
    assert set(records["gke-cluster"].ignore_changes) == {"nodeConfig", "nodeLocations"}
    assert (c["network"], c["subnetwork"]) == ("net-link", "sub-link")
    assert c["networkingMode"] == "VPC_NATIVE"
    assert c["ipAllocationPolicy"] == {
        "clusterSecondaryRangeName": "pods",
        "servicesSecondaryRangeName": "services",
        "stackType": "IPV4",  # the provider's Check default, as the engine records inputs
    }
    assert c["datapathProvider"] == "ADVANCED_DATAPATH"  # --enable-dataplane-v2
    assert c["enableMultiNetworking"] is True
    assert c["workloadIdentityConfig"] == {"workloadPool": "test-project.svc.id.goog"}
    assert c["removeDefaultNodePool"] is True
    assert c["releaseChannel"] == {"channel": "REGULAR"}
    assert c["minMasterVersion"] == "1.35"
    assert c["privateClusterConfig"]["enablePrivateNodes"] is True
    assert c["masterAuthorizedNetworksConfig"]["cidrBlocks"] == [
        {"displayName": "office", "cidrBlock": "203.0.113.0/24"}
    ]
    assert c["enableShieldedNodes"] is True
    assert c["enableLegacyAbac"] is False
    assert c["masterAuth"]["clientCertificateConfig"]["issueClientCertificate"] is False
    addons = c["addonsConfig"]
    assert addons["lustreCsiDriverConfig"] == {"enabled": True, "enableLegacyLustrePort": False}
    assert addons["gcsFuseCsiDriverConfig"] == {"enabled": True}
    assert "rayOperatorConfigs" not in addons
    # What a platform engineer reads about Ray workers, beside GKE's own and DCGM's metrics.
    assert c["monitoringConfig"]["enableComponents"] == [
        "SYSTEM_COMPONENTS",
        "POD",
        "KUBELET",
        "CADVISOR",
        "STORAGE",
        "DCGM",
    ]
    assert c["monitoringConfig"]["managedPrometheus"]["enabled"] is True
    assert c["deletionProtection"] is True
    assert records["gke-cluster"].protect is True
    assert c["resourceLabels"] == {"app": "nemo-rl-gke"}
    # the default pool is created with our account, never the Compute default one
    assert c["nodeConfig"]["serviceAccount"] == "nrl-nodes@test-project.iam.gserviceaccount.com"
    assert out["pool"] == "test-project.svc.id.goog"
    assert out["cmd"].startswith(
        "gcloud container clusters get-credentials nrl"
        " --location us-central1 --project test-project"
    )


def test_maintenance_window_and_upgrade_exclusion() -> None:
    records, _ = build(args())
    policy = records["gke-cluster"].inputs["maintenancePolicy"]
    assert policy["recurringWindow"] == {
        "startTime": "2026-01-03T04:00:00Z",
        "endTime": "2026-01-03T12:00:00Z",
        "recurrence": "FREQ=WEEKLY;BYDAY=SA,SU",
    }
    (exclusion,) = policy["maintenanceExclusions"]
    assert exclusion["exclusionOptions"] == {
        "scope": "NO_MINOR_OR_NODE_UPGRADES",
        "endTimeBehavior": "UNTIL_END_OF_SUPPORT",
    }
    no_exclusion = MaintenancePlan(**{**MAINTENANCE.__dict__, "exclusion_scope": None})
    records, _ = build(args(maintenance=no_exclusion))
    assert not records["gke-cluster"].inputs["maintenancePolicy"].get("maintenanceExclusions")


def test_a_no_upgrades_exclusion_ends_at_its_end_time_not_at_end_of_support() -> None:
    """GKE refuses NO_UPGRADES until end of support; with an end time the exclusion says when."""
    plan = MaintenancePlan(
        **{
            **MAINTENANCE.__dict__,
            "exclusion_scope": "NO_UPGRADES",
            "exclusion_end": "2026-01-31T00:00:00Z",
        }
    )
    records, _ = build(args(maintenance=plan))
    (exclusion,) = records["gke-cluster"].inputs["maintenancePolicy"]["maintenanceExclusions"]
    assert exclusion["endTime"] == "2026-01-31T00:00:00Z"
    assert exclusion["exclusionOptions"] == {"scope": "NO_UPGRADES"}


def test_node_service_account_is_least_privilege() -> None:
    records, _ = build(args())
    assert records["gke-nodes"].inputs["accountId"] == "nrl-nodes"
    roles = {
        records[n].inputs["role"]
        for n in (
            "gke-nodes-container-defaultnodeserviceaccount",
            "gke-nodes-artifactregistry-reader",
        )
    }
    assert roles == {"roles/container.defaultNodeServiceAccount", "roles/artifactregistry.reader"}
    for name in (
        "gke-nodes-container-defaultnodeserviceaccount",
        "gke-nodes-artifactregistry-reader",
    ):
        assert records[name].inputs["member"] == (
            "serviceAccount:nrl-nodes@test-project.iam.gserviceaccount.com"
        )


def test_kubeconfig_is_a_secret_exec_config_without_credentials() -> None:
    _, out = build(args())
    config = json.loads(out["kubeconfig"])
    user = config["users"][0]["user"]
    assert user["exec"]["command"] == "gke-gcloud-auth-plugin"
    assert "token" not in user
    assert "client-key-data" not in user
    assert config["clusters"][0]["cluster"]["server"].endswith(".gke.goog")  # fake DNS name


@pytest.mark.parametrize(("legacy", "ray"), [(True, False), (False, True)])
def test_legacy_port_and_ray_addon_follow_the_args(legacy: bool, ray: bool) -> None:
    records, _ = build(args(legacy_lustre_port=legacy, gke_ray_addon=ray))
    addons = records["gke-cluster"].inputs["addonsConfig"]
    assert addons["lustreCsiDriverConfig"]["enableLegacyLustrePort"] is legacy
    assert ("rayOperatorConfigs" in addons) is ray
    if ray:
        assert addons["rayOperatorConfigs"] == [{"enabled": True}]


def test_unprotected_cluster_for_dev() -> None:
    records, _ = build(args(protect=False))
    assert records["gke-cluster"].inputs["deletionProtection"] is False
    assert records["gke-cluster"].protect is False


def test_legacy_port_without_lustre_csi_is_rejected() -> None:
    with pytest.raises(pulumi.InputPropertyError):
        args(lustre_csi=False, legacy_lustre_port=True)


def _kubeconfig(out: dict[str, Any]) -> dict[str, Any]:
    config = json.loads(out["kubeconfig"])
    assert isinstance(config, dict)
    return config


def test_ci_reaches_the_control_plane_on_its_dns_endpoint() -> None:
    """GitHub-hosted runners have no fixed address to authorize; GKE's DNS-based endpoint is
    authorized by IAM (container.clusters.connect) instead. Pulumi's kubeconfig and the
    credentials command use its name, and name no CA (its certificate is publicly trusted)."""
    records, out = build(args())
    c = records["gke-cluster"].inputs
    assert c["controlPlaneEndpointsConfig"] == {"dnsEndpointConfig": {"allowExternalTraffic": True}}
    # the IP endpoint stays, for the authorized networks
    assert c["privateClusterConfig"]["enablePrivateEndpoint"] is False
    assert c["masterAuthorizedNetworksConfig"]["cidrBlocks"]
    (cluster,) = _kubeconfig(out)["clusters"]
    assert cluster["cluster"] == {
        "server": "https://gke-00000000000000000000000000000000-000000000000.us-central1.gke.goog"
    }
    assert out["cmd"] == (
        "gcloud container clusters get-credentials nrl"
        " --location us-central1 --project test-project --dns-endpoint"
    )


def test_the_ip_endpoint_is_a_choice() -> None:
    records, out = build(args(dns_endpoint=False))
    c = records["gke-cluster"].inputs
    assert c["controlPlaneEndpointsConfig"] == {
        "dnsEndpointConfig": {"allowExternalTraffic": False}
    }
    (cluster,) = _kubeconfig(out)["clusters"]
    assert cluster["cluster"]["server"] == "https://203.0.113.10"
    assert cluster["cluster"]["certificate-authority-data"]
    assert not out["cmd"].endswith("--dns-endpoint")
