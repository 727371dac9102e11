"""Cloud resource names and labels, derived from one base name.

Pulumi logical names (URNs) and GCP names are kept apart: logical names are fixed roles
(`primary-net`, `rdma-sub-3`) so renaming the base name never changes a URN by itself,
while GCP names carry the base name so two stacks can share a project.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

PROJECT: Final = "nemo-rl-gke"

BASE_NAME_PATTERN: Final = r"^[a-z]([-a-z0-9]{0,18}[a-z0-9])?$"
"""1-20 chars: the longest derived name (`<base>-rdma-sub-7`, a service account id
`<base>-nodes` of at most 30 chars) must stay inside GCP's limits."""

LABEL_KEY_PATTERN: Final = r"[a-z][a-z0-9_-]{0,62}"
"""A GCP label key (match with re.fullmatch: a `$` anchor would let a trailing newline in)."""
LABEL_VALUE_PATTERN: Final = r"[a-z0-9_-]{0,63}"


def default_base_name(stack: str) -> str:
    """`nemo-rl-<stack>`, lower-cased and cut to a valid GCP name."""
    cleaned = re.sub(r"[^a-z0-9-]+", "-", f"nemo-rl-{stack}".lower()).strip("-")
    return cleaned[:20].rstrip("-")


@dataclass(frozen=True)
class Names:
    """GCP names of every resource the program creates, from one base name."""

    base: str

    @property
    def primary_network(self) -> str:
        """Cluster VPC."""
        return f"{self.base}-net"

    @property
    def primary_subnet(self) -> str:
        """Cluster subnet (nodes), with the pods and services secondary ranges."""
        return f"{self.base}-sub"

    @property
    def pods_range(self) -> str:
        """Secondary range name for pods."""
        return "pods"

    @property
    def services_range(self) -> str:
        """Secondary range name for services."""
        return "services"

    @property
    def router(self) -> str:
        """Cloud Router that carries the NAT."""
        return f"{self.base}-router"

    @property
    def nat(self) -> str:
        """Cloud NAT for private nodes."""
        return f"{self.base}-nat"

    @property
    def primary_internal_firewall(self) -> str:
        """Allow node and pod traffic inside the cluster VPC."""
        return f"{self.base}-internal"

    @property
    def gvnic_network(self) -> str:
        """Second NIC (eth1) VPC."""
        return f"{self.base}-gvnic-net"

    @property
    def gvnic_subnet(self) -> str:
        """Second NIC subnet."""
        return f"{self.base}-gvnic-sub"

    @property
    def gvnic_firewall(self) -> str:
        """Allow traffic between gVNIC interfaces."""
        return f"{self.base}-gvnic-internal"

    @property
    def rdma_network(self) -> str:
        """RoCE VPC (network profile `<zone>-vpc-roce`)."""
        return f"{self.base}-rdma-net"

    def rdma_subnet(self, index: int) -> str:
        """RoCE subnet for GPU NIC `index` (0-based)."""
        return f"{self.base}-rdma-sub-{index}"

    @property
    def cluster(self) -> str:
        """GKE cluster."""
        return self.base

    @property
    def lustre_instance(self) -> str:
        """Managed Lustre instance id."""
        return f"{self.base}-lustre"

    @property
    def lustre_psa_range(self) -> str:
        """Global address reserved for private services access (Lustre servers)."""
        return f"{self.base}-psa"

    @property
    def lustre_firewall(self) -> str:
        """Allow LNet from the Lustre servers' range."""
        return f"{self.base}-lustre"

    @property
    def lustre_volume(self) -> str:
        """Static PersistentVolume for the Lustre instance."""
        return f"{self.base}-lustre"

    @property
    def bucket_volume(self) -> str:
        """Static PersistentVolume for the GCS bucket."""
        return f"{self.base}-bucket"

    @property
    def workload_service_account(self) -> str:
        """Kubernetes service account of the Ray pods and the gates.

        Its Workload Identity principal (`principal://.../<project>.svc.id.goog/subject/ns/
        <namespace>/sa/<ksa>`) names the project's pool, the namespace and the account, never
        the cluster: every cluster of a project shares the pool. A per-stack account keeps two
        stacks in one project apart - their grants, and their IAM bindings, which would
        otherwise be one binding that destroying either stack removes."""
        return f"{self.base}-workload"

    @property
    def node_service_account(self) -> str:
        """Account id of the least-privilege node service account."""
        return f"{self.base}-nodes"


def base_labels(stack: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    """Labels put on every labelable resource: who made it and for which stack."""
    labels = {"app": PROJECT, "stack": label_value(stack), "managed-by": "pulumi"}
    labels.update(extra or {})
    return labels


PROTECTION_LIFT_LABEL = "nemo-rl-gke-protection-lift"
"""Label on the stateful resources (cluster, Lustre, bucket) of a stack whose protection was
lifted on purpose (`protectionLift`): the policy pack takes it as that step."""


def stateful_labels(labels: dict[str, str], lift: str | None) -> dict[str, str]:
    """`labels` for the stateful resources: with the protection-lift label while one is on."""
    return {**labels, PROTECTION_LIFT_LABEL: lift} if lift else dict(labels)


def role_slug(role: str) -> str:
    """`roles/logging.logWriter` -> `logging-logwriter`, for logical names of IAM bindings."""
    return role.split("/", 1)[1].replace(".", "-").lower()


def label_value(text: str) -> str:
    """Make any text a valid GCP label value (lower case, [a-z0-9_-], at most 63)."""
    return re.sub(r"[^a-z0-9_-]", "-", text.lower())[:63]
