"""The training workload's namespace and identity: a KSA bound through Workload Identity."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from planning.naming import role_slug

WORKLOAD_ROLES: tuple[str, ...] = ("roles/logging.logWriter", "roles/monitoring.metricWriter")
"""Project roles the Ray pods need: write logs and metrics. Storage roles are per bucket."""


def workload_principal(project_number: str, project: str, namespace: str, ksa: str) -> str:
    """Direct Workload Identity Federation principal of a KSA (tutorial §8.1: no GSA)."""
    return (
        f"principal://iam.googleapis.com/projects/{project_number}/locations/global/"
        f"workloadIdentityPools/{project}.svc.id.goog/subject/ns/{namespace}/sa/{ksa}"
    )


@dataclass(frozen=True, kw_only=True)
class WorkloadIdentityArgs:
    """Inputs of the workload identity."""

    project: str
    project_number: pulumi.Input[str]
    namespace: str
    service_account: str
    project_roles: Sequence[str] = WORKLOAD_ROLES
    pool_exists_after: Sequence[pulumi.Resource] = ()
    """The cluster: the `<project>.svc.id.goog` pool the principal lives in exists only once the
    project's first Workload Identity cluster does ("Identity Pool does not exist" otherwise)."""


class WorkloadIdentity(pulumi.ComponentResource):
    """Namespace + KSA, and IAM for the KSA's principal (no Google service account, no keys)."""

    namespace: pulumi.Output[str]
    """Namespace of the workload (PVCs, secrets and the RayCluster live here)."""
    service_account: pulumi.Output[str]
    """KSA name for the Ray pods."""
    principal: pulumi.Output[str]
    """`principal://...` of the KSA, for resource-level grants such as the bucket."""

    def __init__(
        self, name: str, args: WorkloadIdentityArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("nemo:apps:WorkloadIdentity", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata={
                "name": args.namespace,
                "labels": {"app.kubernetes.io/part-of": "nemo-rl-gke"},
            },
            opts=child,
        )
        ksa = k8s.core.v1.ServiceAccount(
            f"{name}-ksa",
            metadata={"name": args.service_account, "namespace": namespace.metadata.name},
            opts=child,
        )
        principal = pulumi.Output.from_input(args.project_number).apply(
            lambda number: workload_principal(
                number, args.project, args.namespace, args.service_account
            )
        )
        for role in args.project_roles:
            gcp.projects.IAMMember(
                f"{name}-{role_slug(role)}",
                project=args.project,
                role=role,
                member=principal,
                opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.pool_exists_after)),
            )
        self.namespace = namespace.metadata.name
        self.service_account = ksa.metadata.name
        self.principal = principal
        self.register_outputs(
            {
                "namespace": self.namespace,
                "service_account": self.service_account,
                "principal": self.principal,
            }
        )
