"""In-cluster RDMA through GKE managed DRANET: the claim template pods use, and the gIB plugin.

GKE itself runs the networking DRA driver on the labelled GPU nodes and installs the
`mrdma.google.com` DeviceClass; what the stack adds is the workload namespace's
ResourceClaimTemplate (a pod's template name is looked up in the pod's own namespace) and the
same gIB installer the multi-network path uses.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.network.gib import gib_installer
from planning.rdma import CLAIM_TEMPLATE, RESOURCE_API, claim_template_spec


@dataclass(frozen=True, kw_only=True)
class DranetNetworkingArgs:
    """Inputs: where the workloads run and how many NICs each GPU pod claims."""

    namespace: pulumi.Input[str]
    """The workload namespace (Ray workers and gate pods claim from it)."""
    devices: int
    """RDMA NICs each claim asks for (the node's NICs unless the stack says fewer)."""
    accelerator_type: str
    """Only nodes with this accelerator run the gIB installer."""
    installer_image: str
    pause_image: str

    def __post_init__(self) -> None:
        if self.devices < 1:
            raise pulumi.InputPropertyError("devices", "a claim takes at least one RDMA NIC")


class DranetNetworking(pulumi.ComponentResource):
    """The `default-rdma` ResourceClaimTemplate and the NCCL gIB plugin DaemonSet.

    Cluster Toolkit applies the same template (one request on `mrdma.google.com`); this one
    asks for an exact count, which Kueue can admit, where Cluster Toolkit asks for all.
    """

    claim_template: pulumi.Output[str]
    """Name of the ResourceClaimTemplate, available once the object exists."""

    def __init__(
        self, name: str, args: DranetNetworkingArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("nemo:gke:DranetNetworking", name, None, opts)
        # pulumi-kubernetes 4.25 types resource.k8s.io only up to v1beta2, which GKE leaves
        # off; the v1 kind (stable since Kubernetes 1.34) goes as a generic object.
        template = k8s.apiextensions.CustomResource(
            f"{name}-claim-template",
            api_version=RESOURCE_API,
            kind="ResourceClaimTemplate",
            metadata={"name": CLAIM_TEMPLATE, "namespace": args.namespace},
            spec=claim_template_spec(args.devices),
            opts=pulumi.ResourceOptions(parent=self),
        )
        gib_installer(
            name, args.accelerator_type, args.installer_image, args.pause_image, parent=self
        )
        self.claim_template = template.urn.apply(lambda _: CLAIM_TEMPLATE)
        self.register_outputs({"claim_template": self.claim_template})
