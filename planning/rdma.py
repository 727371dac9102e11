"""RDMA through GKE managed DRANET: the objects and names of the second RDMA path, no Pulumi.

Google's current A4 / A3 Ultra path (Cluster Toolkit's blueprints since August 2026, XPK's
`--accelerator-network-profile=auto`): the GPU pool asks GKE to manage its RDMA networks
(`networkConfig.acceleratorNetworkProfile: auto`), GKE runs the networking DRA driver on nodes
labelled for it and publishes each RDMA NIC as a device of the `mrdma.google.com` class, and a
pod gets NICs by claiming them instead of through multi-network annotations. The other path
(`multi-network`) keeps the project's own RoCE VPC, eight subnets and Network objects.
"""

from __future__ import annotations

from typing import Any, Final, Literal

RdmaPath = Literal["multi-network", "dranet"]
"""How GPU pods reach their RDMA NICs (stack key `network.rdma`)."""

ACCELERATOR_NETWORK_PROFILE: Final = "auto"
"""The only value GKE takes for `NodeNetworkConfig.acceleratorNetworkProfile` (immutable)."""
DRA_DRIVER_LABEL: Final = "cloud.google.com/gke-networking-dra-driver"
"""Node label that makes GKE run its networking DRA driver on the pool's nodes."""
DRA_DRIVER: Final = "dra.net"
"""`spec.driver` of the ResourceSlices GKE's managed DRANET publishes."""
RDMA_DEVICE_CLASS: Final = "mrdma.google.com"
"""The DeviceClass of RDMA NICs GKE installs itself from 1.34.1-gke.1829001."""
CLAIM_TEMPLATE: Final = "default-rdma"
"""The ResourceClaimTemplate's name, as Cluster Toolkit's and Google's samples call it."""
CLAIM_REQUEST: Final = "req-mrdma"
"""The template's one device request."""
POD_CLAIM: Final = "rdma"
"""The claim's name inside a pod (pod `resourceClaims` and container `resources.claims`)."""
KUEUE_RDMA_RESOURCE: Final = "rdma-nics"
"""Kueue's logical resource for the class: Kueue 0.19 counts a queued pod set's claimed devices
into it (`deviceClassMappings`) and admits only what the ClusterQueue's quota covers."""
RESOURCE_API: Final = "resource.k8s.io/v1"


def claim_template_spec(devices: int) -> dict[str, Any]:
    """The ResourceClaimTemplate's `spec`: `devices` RDMA NICs of the managed class.

    ExactCount, not Cluster Toolkit's `All`: Kueue 0.19 refuses a pod set whose claim asks
    for all devices (`AllocationMode 'All' is not supported`), and the queue is on for RDMA
    stacks. One worker per node claiming every NIC of its node gets the same NICs either way.
    """
    if devices < 1:
        raise ValueError("an RDMA claim takes at least one device")
    return {
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": CLAIM_REQUEST,
                        "exactly": {
                            "deviceClassName": RDMA_DEVICE_CLASS,
                            "allocationMode": "ExactCount",
                            "count": devices,
                        },
                    }
                ]
            }
        }
    }


def pod_claims(template: str) -> list[dict[str, str]]:
    """A pod's `resourceClaims`: one claim made from the namespace's template per pod."""
    return [{"name": POD_CLAIM, "resourceClaimTemplateName": template}]


def container_claims() -> list[dict[str, str]]:
    """A container's `resources.claims`: the NICs enter its network namespace (Google's and
    Cluster Toolkit's samples list the claim in both places)."""
    return [{"name": POD_CLAIM}]


def kueue_device_mappings() -> list[dict[str, Any]]:
    """Kueue Configuration `resources.deviceClassMappings`: without it Kueue marks every pod
    set that claims the class inadmissible ("DeviceClass ... is not mapped")."""
    return [{"name": KUEUE_RDMA_RESOURCE, "deviceClassNames": [RDMA_DEVICE_CLASS]}]


def device_class_spec() -> dict[str, Any]:
    """The DeviceClass GKE installs (the test bed creates it as GKE would). Its real selector
    was not found in any source; the open-source driver's examples select on the driver."""
    return {"selectors": [{"cel": {"expression": f'device.driver == "{DRA_DRIVER}"'}}]}
