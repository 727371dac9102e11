"""STAND-IN for GKE managed DRANET's driver: what GKE itself puts in a cluster.

On GKE, from 1.34.1-gke.1829001, the cluster holds the `mrdma.google.com` DeviceClass, and on
every GPU node labelled for it the `networking-dra-driver` DaemonSet publishes the node's RDMA
NICs in a ResourceSlice of driver `dra.net`. Under kwok no driver runs, so the test bed
publishes the same kinds of objects on its fake RDMA GPU nodes: the real API server validates
them and the real kube-scheduler's DRA plugin allocates claims from them. What this cannot
show: the real class's selector (not found in any source; the open-source driver's examples
select on the driver), the real driver's attributes beyond the four Google's tutorial prints,
and anything the driver does on the node (moving the NICs into the pod's network namespace).
"""

from __future__ import annotations

from typing import Any

from planning.rdma import DRA_DRIVER, RDMA_DEVICE_CLASS, RESOURCE_API, device_class_spec

STANDIN_ANNOTATION = "nemo-rl-gke/stand-in"
STANDIN_NOTE = "test bed stand-in for GKE's networking DRA driver (dra.net); not GKE's object"


def device_class() -> dict[str, Any]:
    """The DeviceClass GKE installs."""
    return {
        "apiVersion": RESOURCE_API,
        "kind": "DeviceClass",
        "metadata": {"name": RDMA_DEVICE_CLASS, "annotations": {STANDIN_ANNOTATION: STANDIN_NOTE}},
        "spec": device_class_spec(),
    }


def resource_slice(node: str, nics: int) -> dict[str, Any]:
    """One node's RDMA NICs as the driver publishes them: devices named after their PCI
    address, with the attributes Google's DRA tutorial shows on an A3 Ultra node."""
    devices = [
        {
            "name": f"pci-0000-{0x91 + i:02x}-00-0",
            "attributes": {
                "dra.net/ifName": {"string": f"gpu{i}rdma0"},
                "dra.net/rdma": {"bool": True},
                "dra.net/numaNode": {"int": 0 if i < nics // 2 else 1},
                "resource.kubernetes.io/pcieRoot": {"string": f"pci0000:{0x8C + i:02x}"},
            },
        }
        for i in range(nics)
    ]
    return {
        "apiVersion": RESOURCE_API,
        "kind": "ResourceSlice",
        "metadata": {
            "name": f"{node}-{DRA_DRIVER}",
            "annotations": {STANDIN_ANNOTATION: STANDIN_NOTE},
        },
        "spec": {
            "driver": DRA_DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def dranet_objects(nodes: list[tuple[str, int]]) -> list[dict[str, Any]]:
    """The class and one slice per (node, RDMA NICs) with NICs."""
    return [device_class(), *(resource_slice(node, nics) for node, nics in nodes if nics)]
