"""KubeRay operator: the pinned chart rendered into Pulumi resources (`helm.v4.Chart`).

Each object of the chart is a resource of its own, so the policy pack and previews see the
operator's Deployment and RBAC, and a change shows per object. The chart's own CRDs (`crds/`)
are applied with them by server-side apply (KubeRay's RayJob CRD is 1.4 MB, far over the
256 KiB annotation a client-side apply writes), from the chart the program was given: nothing
is fetched from the internet while `pulumi up` runs. The CRDs are retained on delete: removing
the operator (or moving to GKE's Ray add-on) must not delete every RayCluster and RayJob with
them. Helm's `atomic` has no counterpart: the provider waits for the Deployment to roll out and
fails the update when it does not; the chart has no hooks to run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from components.charts import chart_objects, retain_definitions
from planning.operators import KUBERAY_PORTS, POD_SECURITY, serving_only

RELEASE_NAME = "kuberay-operator"
"""Release name the chart's templates see (its objects are named after it)."""


@dataclass(frozen=True, kw_only=True)
class KubeRayOperatorArgs:
    """Inputs of the operator."""

    chart_version: str
    repository: str | None
    """Helm repository URL; None when `chart` is a local chart folder or .tgz."""
    chart: str = "kuberay-operator"
    """Chart name in the repository, or the path of a local chart."""
    namespace: str = "kuberay-system"
    node_selector: pulumi.Input[Mapping[str, str]] = field(default_factory=dict)
    """Where the operator runs (the system pool)."""


class KubeRayOperator(pulumi.ComponentResource):
    """Namespace and the `kuberay-operator` chart's objects, its CRDs included."""

    namespace: pulumi.Output[str]
    """Operator namespace."""
    release_name: pulumi.Output[str]
    """Release name the chart was rendered with."""
    chart: k8s.helm.v4.Chart
    """The chart: ready once its Deployment rolled out and its CRDs were applied."""
    objects: pulumi.Output[Sequence[pulumi.Resource]]
    """The chart and its objects: Ray objects depend on these (`components.charts`)."""

    def __init__(
        self, name: str, args: KubeRayOperatorArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("nemo:apps:KubeRayOperator", name, None, opts)
        ns = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata={
                "name": args.namespace,
                "labels": {"app.kubernetes.io/part-of": "nemo-rl-gke"},
            },
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.chart = k8s.helm.v4.Chart(
            f"{name}-chart",
            name=RELEASE_NAME,
            chart=args.chart,
            version=args.chart_version,
            repository_opts=k8s.helm.v4.RepositoryOptsArgs(repo=args.repository)
            if args.repository
            else None,
            namespace=ns.metadata.name,
            skip_crds=False,
            values={
                "nodeSelector": args.node_selector,
                "podSecurityContext": dict(POD_SECURITY),
                "resources": {
                    "requests": {"cpu": "100m", "memory": "512Mi"},
                    "limits": {"cpu": "1", "memory": "1Gi"},
                },
            },
            opts=pulumi.ResourceOptions(parent=self, transforms=[retain_definitions]),
        )
        k8s.networking.v1.NetworkPolicy(
            f"{name}-ingress",
            metadata={"name": "kuberay-operator-ingress", "namespace": ns.metadata.name},
            spec=serving_only(KUBERAY_PORTS),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.namespace = ns.metadata.name
        self.objects = chart_objects(self.chart)
        self.release_name = pulumi.Output.from_input(RELEASE_NAME)
        self.register_outputs({"namespace": self.namespace, "release_name": self.release_name})
