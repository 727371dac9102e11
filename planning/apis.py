"""The Google APIs a stack needs, each with what needs it. Pure data.

Derived from what the program creates and runs: every resource type the program registers is
served by one API (`RESOURCE_APIS`, checked against the recorded plan by a test), and a few
APIs are needed by what runs afterwards rather than by a resource (`RUNTIME_APIS`).
"""

from __future__ import annotations

from typing import Final

from planning.resource_types import PROJECT_SERVICE

RESOURCE_APIS: Final[dict[str, tuple[str, str]]] = {
    # resource type prefix -> (API, what of ours needs it)
    "gcp:compute/": (
        "compute.googleapis.com",
        "the VPCs, subnets, firewall rules, Cloud Router and NAT, Lustre's private services"
        " range; reading the GPU reservation",
    ),
    "gcp:container/": ("container.googleapis.com", "the GKE cluster and its node pools"),
    "gcp:serviceaccount/": ("iam.googleapis.com", "the nodes' least-privilege service account"),
    "gcp:projects/iAMMember": (
        "cloudresourcemanager.googleapis.com",
        "project IAM bindings (node and workload roles: the project's IAM policy)",
    ),
    "gcp:servicenetworking/": (
        "servicenetworking.googleapis.com",
        "private services access peering for Managed Lustre",
    ),
    "gcp:lustre/": ("lustre.googleapis.com", "the Managed Lustre instance"),
    "gcp:storage/": ("storage.googleapis.com", "the GCS FUSE bucket and its IAM binding"),
}

RUNTIME_APIS: Final[dict[str, str]] = {
    "monitoring.googleapis.com": (
        "the cluster's monitoring (system, pod, kubelet, cAdvisor, storage and DCGM metrics,"
        " Managed Service for Prometheus) and the workload's roles/monitoring.metricWriter"
    ),
    "logging.googleapis.com": (
        "the cluster's system and workload logs and the workload's roles/logging.logWriter"
    ),
    "sts.googleapis.com": (
        "Workload Identity Federation token exchange: the Ray pods' principal:// identity"
        " (GKE metadata server) and the CI runner's GitHub OIDC token (google-github-actions/auth)"
    ),
    "iamcredentials.googleapis.com": (
        "the CI runner's impersonation of its preview / deploy service account"
        " (generateAccessToken)"
    ),
}

MANAGED_TYPE: Final = PROJECT_SERVICE
"""The resource that enables an API; it needs only Service Usage, which is on before it."""


def api_of(resource_type: str) -> str | None:
    """The API that serves a resource type, or None when none is known."""
    for prefix, (api, _) in RESOURCE_APIS.items():
        if resource_type.startswith(prefix):
            return api
    return None


def required_apis(*, lustre: bool, bucket: bool) -> dict[str, str]:
    """API -> why, for a stack with or without Lustre and the bucket."""
    skipped = set()
    if not lustre:
        skipped |= {"gcp:servicenetworking/", "gcp:lustre/"}
    if not bucket:
        skipped.add("gcp:storage/")
    apis = {api: why for prefix, (api, why) in RESOURCE_APIS.items() if prefix not in skipped}
    apis.update(RUNTIME_APIS)
    return dict(sorted(apis.items()))
