"""In-cluster GPU networking: GKE Network objects for each extra NIC and the gIB installer."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from planning.kube import ACCELERATOR_LABEL, interfaces_annotation

NETWORKING_API = "networking.gke.io/v1"
GVNIC_NETWORK = "gvnic-1"
INSTALLER = "nccl-rdma-installer"
HOST_NVIDIA_LIB = "/home/kubernetes/bin/nvidia/lib64"
HOST_GIB = "/home/kubernetes/bin/gib"
# The installer image expects the host directories under /usr/local/home/... and copies the
# plugin there; workloads mount the same host paths at /usr/local/nvidia and /usr/local/gib.
INSTALL_SCRIPT = """set -ex
/scripts/container_entry.sh install
cp -r /var/lib/gib/lib64/. /usr/local/home/kubernetes/bin/nvidia/lib64
cp -r /var/lib/gib/. /usr/local/home/kubernetes/bin/gib
echo "gIB NCCL plugin installed"
"""


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
        self._installer(name, args)

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

    def _installer(self, name: str, args: GpuNetworkingArgs) -> k8s.apps.v1.DaemonSet:
        labels = {"k8s-app": INSTALLER}
        return k8s.apps.v1.DaemonSet(
            f"{name}-gib-installer",
            metadata={"name": INSTALLER, "namespace": "kube-system", "labels": labels},
            spec={
                "selector": {"match_labels": labels},
                "update_strategy": {"type": "RollingUpdate"},
                "template": {
                    "metadata": {"labels": {**labels, "name": INSTALLER}},
                    "spec": {
                        "priority_class_name": "system-node-critical",
                        "affinity": {
                            "node_affinity": {
                                "required_during_scheduling_ignored_during_execution": {
                                    "node_selector_terms": [
                                        {
                                            "match_expressions": [
                                                {
                                                    "key": ACCELERATOR_LABEL,
                                                    "operator": "In",
                                                    "values": [args.accelerator_type],
                                                }
                                            ]
                                        }
                                    ]
                                }
                            }
                        },
                        "tolerations": [{"operator": "Exists"}],
                        # It never talks to the API server.
                        "automount_service_account_token": False,
                        "security_context": {"seccomp_profile": {"type": "RuntimeDefault"}},
                        "host_network": True,
                        "host_pid": True,
                        "volumes": [
                            {
                                "name": "library-dir-host",
                                "host_path": {"path": HOST_NVIDIA_LIB, "type": "DirectoryOrCreate"},
                            },
                            {"name": "gib", "host_path": {"path": HOST_GIB}},
                        ],
                        "init_containers": [
                            {
                                "name": INSTALLER,
                                "image": args.installer_image,
                                "resources": {
                                    "requests": {"cpu": "150m", "memory": "128Mi"},
                                    "limits": {"cpu": "1", "memory": "512Mi"},
                                },
                                # Writes into host paths read by the GPU driver's loader.
                                "security_context": {"privileged": True},
                                "volume_mounts": [
                                    {
                                        "name": "library-dir-host",
                                        "mount_path": "/usr/local" + HOST_NVIDIA_LIB,
                                    },
                                    {"name": "gib", "mount_path": "/usr/local" + HOST_GIB},
                                ],
                                "command": ["/bin/sh", "-c"],
                                "args": [INSTALL_SCRIPT],
                            }
                        ],
                        "containers": [
                            {
                                "name": "pause",
                                "image": args.pause_image,
                                "resources": {
                                    "requests": {"cpu": "10m", "memory": "16Mi"},
                                    "limits": {"cpu": "50m", "memory": "32Mi"},
                                },
                                "security_context": {
                                    "allow_privilege_escalation": False,
                                    "read_only_root_filesystem": True,
                                    "run_as_non_root": True,
                                    "run_as_user": 65535,
                                    "capabilities": {"drop": ["ALL"]},
                                    "seccomp_profile": {"type": "RuntimeDefault"},
                                },
                            }
                        ],
                    },
                },
            },
            opts=pulumi.ResourceOptions(parent=self),
        )
