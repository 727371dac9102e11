"""In-cluster GPU networking: GKE Network objects for each extra NIC and the gIB installer."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.network.gib import gib_installer
from planning.kube import interfaces_annotation

NETWORKING_API = "networking.gke.io/v1"
GVNIC_NETWORK = "gvnic-1"


def _registered_name(resource: k8s.apiextensions.CustomResource, name: str) -> pulumi.Output[str]:
    """`name`, available once `resource` is registered, so consumers depend on the object."""
    return resource.urn.apply(lambda _: name)


def _item(index: int) -> Callable[[list[str]], str]:
    return lambda items: items[index]


def rdma_network_name(index: int) -> str:
    """Kubernetes Network name of RDMA NIC `index` (rdma-0 ... rdma-7)."""
    return f"rdma-{index}"


@dataclass(frozen=True, kw_only=True)
class GpuNetworkingArgs:
    """Inputs: VPC and subnet names from the network components, never retyped."""

    gvnic_network: pulumi.Input[str]
    gvnic_subnet: pulumi.Input[str]
    rdma_network: pulumi.Input[str]
    rdma_subnets: pulumi.Input[list[str]]
    rdma_nics: int
    """How many RDMA Network objects to create (from the GPU catalog: a count, not an Output)."""
    accelerator_type: str
    """Only nodes with this accelerator run the gIB installer."""
    installer_image: str
    pause_image: str

    def __post_init__(self) -> None:
        if self.rdma_nics < 1:
            raise pulumi.InputPropertyError("rdma_nics", "GPU networking needs RDMA NICs")


class GpuNetworking(pulumi.ComponentResource):
    """`GKENetworkParamSet` + `Network` per extra NIC, and the NCCL gIB plugin DaemonSet.

    Mirrors tutorial step 7 (network-mapping.yaml) and the gIB installer of
    container-engine-accelerators, authored here so its image is pinned and its node
    affinity is exactly the stack's accelerator.
    """

    network_names: pulumi.Output[list[str]]
    """Kubernetes Network names in NIC order: gvnic-1, rdma-0 ... rdma-N."""
    interfaces_annotation: pulumi.Output[str]
    """Value of `networking.gke.io/interfaces` requesting eth0 + gvnic-1 + every rdma-N."""

    def __init__(
        self, name: str, args: GpuNetworkingArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("nemo:gke:GpuNetworking", name, None, opts)
        names = [GVNIC_NETWORK, *(rdma_network_name(i) for i in range(args.rdma_nics))]
        subnets = pulumi.Output.from_input(args.rdma_subnets)
        networks = [
            self._device_network(
                name, GVNIC_NETWORK, "NetDevice", args.gvnic_network, args.gvnic_subnet
            )
        ]
        networks += [
            self._device_network(
                name, names[i + 1], "RDMA", args.rdma_network, subnets.apply(_item(i))
            )
            for i in range(args.rdma_nics)
        ]
        gib_installer(
            name, args.accelerator_type, args.installer_image, args.pause_image, parent=self
        )

        self.network_names = pulumi.Output.all(
            *[_registered_name(net, n) for net, n in zip(networks, names, strict=True)]
        ).apply(list)
        self.interfaces_annotation = self.network_names.apply(interfaces_annotation)
        self.register_outputs(
            {
                "network_names": self.network_names,
                "interfaces_annotation": self.interfaces_annotation,
            }
        )

    def _device_network(
        self,
        name: str,
        network: str,
        device_mode: str,
        vpc: pulumi.Input[str],
        subnet: pulumi.Input[str],
    ) -> k8s.apiextensions.CustomResource:
        params = k8s.apiextensions.CustomResource(
            f"{name}-params-{network}",
            api_version=NETWORKING_API,
            kind="GKENetworkParamSet",
            metadata={"name": network},
            spec={"vpc": vpc, "vpcSubnet": subnet, "deviceMode": device_mode},
            opts=pulumi.ResourceOptions(parent=self),
        )
        return k8s.apiextensions.CustomResource(
            f"{name}-network-{network}",
            api_version=NETWORKING_API,
            kind="Network",
            metadata={"name": network},
            spec={
                "type": "Device",
                "parametersRef": {
                    "group": "networking.gke.io",
                    "kind": "GKENetworkParamSet",
                    "name": network,
                },
            },
            opts=pulumi.ResourceOptions(parent=self, depends_on=[params]),
        )
