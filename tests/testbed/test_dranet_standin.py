"""The test bed's stand-in for GKE's networking DRA driver publishes what the API server takes."""

from __future__ import annotations

import kubernetes_validate

from planning.rdma import DRA_DRIVER, RDMA_DEVICE_CLASS
from testbed.dranet_standin import STANDIN_ANNOTATION, dranet_objects
from testbed.local_cluster import RDMA_NICS, stack_nodes
from tests.program.test_ray_schemas import KUBERNETES_VERSION


def test_one_slice_per_rdma_gpu_node_with_every_nic() -> None:
    nodes = [
        (n["metadata"]["name"], int(n["metadata"]["annotations"][RDMA_NICS]))
        for n in stack_nodes("b200")
    ]
    objects = dranet_objects(nodes)
    device_class, *slices = objects
    assert device_class["metadata"]["name"] == RDMA_DEVICE_CLASS
    assert [s["spec"]["nodeName"] for s in slices] == ["b200-gpu-0", "b200-gpu-1"]
    for piece in objects:
        kubernetes_validate.validate(piece, KUBERNETES_VERSION, strict=True)
        assert "stand-in" in piece["metadata"]["annotations"][STANDIN_ANNOTATION]
    for piece in slices:
        assert piece["spec"]["driver"] == DRA_DRIVER
        devices = piece["spec"]["devices"]
        assert len(devices) == 8
        assert len({d["name"] for d in devices}) == 8
        assert [d["attributes"]["dra.net/ifName"]["string"] for d in devices] == [
            f"gpu{i}rdma0" for i in range(8)
        ]


def test_no_slice_for_gpus_without_rdma() -> None:
    nodes = [
        (n["metadata"]["name"], int(n["metadata"]["annotations"][RDMA_NICS]))
        for n in stack_nodes("dev")
    ]
    assert [o["kind"] for o in dranet_objects(nodes)] == ["DeviceClass"]
