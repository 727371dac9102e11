"""GpuNetworking: Network objects per tutorial-facts §7 and the gIB installer per §6.

Proof limit: mocks prove the objects sent; they cannot prove the cluster serves the
networking.gke.io CRDs (it does once multi-networking is on) or that the image exists.
"""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components import GpuNetworking, GpuNetworkingArgs
from planning.versions import VERSIONS
from tests.harness import run_component


def build(accelerator: str = "nvidia-b200") -> tuple[dict[str, Any], Any]:
    def make() -> Any:
        provider = k8s.Provider("k8s", kubeconfig="{}")
        net = GpuNetworking(
            "gpu-net",
            GpuNetworkingArgs(
                gvnic_network="g-net",
                gvnic_subnet="g-sub",
                rdma_network="r-net",
                rdma_subnets=[f"r-sub-{i}" for i in range(8)],
                rdma_nics=8,
                accelerator_type=accelerator,
                installer_image=VERSIONS.gib_installer_image.value,
                pause_image=VERSIONS.pause_image.value,
            ),
            opts=pulumi.ResourceOptions(providers=[provider]),
        )
        return {"names": net.network_names, "annotation": net.interfaces_annotation}

    return run_component(make)


def test_network_objects_match_network_mapping_yaml() -> None:
    records, out = build()
    gvnic = records["gpu-net-params-gvnic-1"].inputs
    assert gvnic["apiVersion"] == "networking.gke.io/v1"
    assert gvnic["kind"] == "GKENetworkParamSet"
    assert gvnic["spec"] == {"vpc": "g-net", "vpcSubnet": "g-sub", "deviceMode": "NetDevice"}
    for i in range(8):
        params = records[f"gpu-net-params-rdma-{i}"].inputs
        assert params["metadata"]["name"] == f"rdma-{i}"
        assert params["spec"] == {"vpc": "r-net", "vpcSubnet": f"r-sub-{i}", "deviceMode": "RDMA"}
    for name in ["gvnic-1", *(f"rdma-{i}" for i in range(8))]:
        network = records[f"gpu-net-network-{name}"]
        assert network.inputs["kind"] == "Network"
        assert network.inputs["spec"] == {
            "type": "Device",
            "parametersRef": {
                "group": "networking.gke.io",
                "kind": "GKENetworkParamSet",
                "name": name,
            },
        }
        assert records[f"gpu-net-params-{name}"].urn in network.dependencies
    assert out["names"] == ["gvnic-1", *(f"rdma-{i}" for i in range(8))]


def test_interfaces_annotation_requests_all_ten_nics() -> None:
    _, out = build()
    entries = json.loads(out["annotation"])
    assert entries[0] == {"interfaceName": "eth0", "network": "default"}
    assert entries[1] == {"interfaceName": "eth1", "network": "gvnic-1"}
    assert entries[2:] == [
        {"interfaceName": f"eth{i + 2}", "network": f"rdma-{i}"} for i in range(8)
    ]


def test_gib_installer_daemonset() -> None:
    records, _ = build("nvidia-h200-141gb")
    ds = records["gpu-net-gib-installer"]
    assert ds.type == "kubernetes:apps/v1:DaemonSet"
    assert ds.inputs["metadata"]["namespace"] == "kube-system"
    spec = ds.inputs["spec"]["template"]["spec"]
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"][0]["matchExpressions"] == [
        {
            "key": "cloud.google.com/gke-accelerator",
            "operator": "In",
            "values": ["nvidia-h200-141gb"],
        }
    ]
    assert spec["hostNetwork"] is True
    assert spec["hostPID"] is True
    assert spec["priorityClassName"] == "system-node-critical"
    assert spec["tolerations"] == [{"operator": "Exists"}]
    (init,) = spec["initContainers"]
    assert init["image"] == "us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib:v1.1.1"
    assert "/scripts/container_entry.sh install" in init["args"][0]
    assert "--install-nccl" not in init["args"][0]  # removed upstream in 2da1c92 (§6)
    assert {v["hostPath"]["path"] for v in spec["volumes"]} == {
        "/home/kubernetes/bin/nvidia/lib64",
        "/home/kubernetes/bin/gib",
    }
    assert "@sha256:" in spec["containers"][0]["image"]


def test_every_object_uses_the_explicit_provider() -> None:
    records, _ = build()
    provider = records["k8s"].urn
    for name, record in records.items():
        if record.type.startswith("kubernetes:"):
            assert record.provider == provider, name
