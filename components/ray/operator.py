"""KubeRay operator: a pinned Helm release whose CRDs are kept current by server-side apply.

Helm installs a chart's `crds/` only on first install and never upgrades them, and KubeRay's
CRDs (0.9 MB RayCluster, 1.4 MB RayJob) exceed the 256 KiB annotation a client-side
`kubectl apply` writes. So the release runs with `skip_crds`, and a Job applies the CRDs of
the same KubeRay version with `kubectl apply --server-side` (no annotation, field ownership
instead) before the release is installed or upgraded. The Job's name carries the version:
bumping the chart replaces the Job, which re-applies the new CRDs first.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

CRD_KINDS: tuple[str, ...] = ("rayclusters", "raycronjobs", "rayjobs", "rayservices")
"""CRDs of KubeRay v1.7.0 (ray-operator/config/crd/bases at the tag)."""
CRD_FIELD_MANAGER = "nemo-rl-gke-kuberay-crds"
RESTRICTED_SECURITY_CONTEXT: k8s.core.v1.SecurityContextArgsDict = {
    "run_as_non_root": True,
    "run_as_user": 65532,
    "allow_privilege_escalation": False,
    "read_only_root_filesystem": True,
    "capabilities": {"drop": ["ALL"]},
    "seccomp_profile": {"type": "RuntimeDefault"},
}


def crd_urls(version: str) -> list[str]:
    """Raw URLs of the CRDs at the KubeRay tag matching the chart version."""
    base = f"https://raw.githubusercontent.com/ray-project/kuberay/v{version}"
    return [f"{base}/ray-operator/config/crd/bases/ray.io_{kind}.yaml" for kind in CRD_KINDS]


@dataclass(frozen=True, kw_only=True)
class KubeRayOperatorArgs:
    """Inputs of the operator."""

    chart_version: str
    repository: str | None
    """Helm repository URL; None when `chart` is a local chart folder or .tgz."""
    kubectl_image: str
    chart: str = "kuberay-operator"
    """Chart name in the repository, or the path of a local chart."""
    namespace: str = "kuberay-system"
    node_selector: pulumi.Input[Mapping[str, str]] = field(default_factory=dict)
    """Where the operator and the CRD Job run (the system pool)."""


class KubeRayOperator(pulumi.ComponentResource):
    """Namespace, CRD apply Job (with least-privilege RBAC) and the `kuberay-operator` release."""

    namespace: pulumi.Output[str]
    """Operator namespace."""
    release_name: pulumi.Output[str]
    """Helm release name."""

    def __init__(
        self, name: str, args: KubeRayOperatorArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("nemo:apps:KubeRayOperator", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        ns = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata={
                "name": args.namespace,
                "labels": {"app.kubernetes.io/part-of": "nemo-rl-gke"},
            },
            opts=child,
        )
        crd_names = [f"{kind}.ray.io" for kind in CRD_KINDS]
        sa = k8s.core.v1.ServiceAccount(
            f"{name}-crd-applier-sa",
            metadata={"name": "kuberay-crd-applier", "namespace": ns.metadata.name},
            opts=child,
        )
        role = k8s.rbac.v1.ClusterRole(
            f"{name}-crd-applier-role",
            metadata={"name": "nemo-rl-gke-kuberay-crd-applier"},
            rules=[
                # create cannot be limited by name; everything else is limited to Ray's CRDs.
                {
                    "api_groups": ["apiextensions.k8s.io"],
                    "resources": ["customresourcedefinitions"],
                    "verbs": ["create"],
                },
                {
                    "api_groups": ["apiextensions.k8s.io"],
                    "resources": ["customresourcedefinitions"],
                    "resource_names": crd_names,
                    "verbs": ["get", "patch"],
                },
            ],
            opts=child,
        )
        binding = k8s.rbac.v1.ClusterRoleBinding(
            f"{name}-crd-applier-binding",
            metadata={"name": "nemo-rl-gke-kuberay-crd-applier"},
            role_ref={
                "api_group": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": role.metadata.name,
            },
            subjects=[
                {"kind": "ServiceAccount", "name": sa.metadata.name, "namespace": args.namespace}
            ],
            opts=child,
        )
        apply_args = [
            "apply",
            "--server-side",
            "--force-conflicts",
            f"--field-manager={CRD_FIELD_MANAGER}",
        ]
        for url in crd_urls(args.chart_version):
            apply_args += ["-f", url]
        job = k8s.batch.v1.Job(
            f"{name}-crds",
            metadata={
                "name": f"kuberay-crds-v{args.chart_version.replace('.', '-')}",
                "namespace": ns.metadata.name,
            },
            spec={
                "backoff_limit": 4,
                "template": {
                    "spec": {
                        # The token is what kubectl applies the CRDs with; nothing else runs here.
                        "service_account_name": sa.metadata.name,
                        "restart_policy": "OnFailure",
                        "security_context": {
                            "run_as_non_root": True,
                            "run_as_user": 65532,
                            "run_as_group": 65532,
                            "seccomp_profile": {"type": "RuntimeDefault"},
                        },
                        "node_selector": args.node_selector,
                        "containers": [
                            {
                                "name": "kubectl",
                                "image": args.kubectl_image,
                                "command": ["/bin/kubectl"],
                                "args": apply_args,
                                # kubectl caches discovery under $HOME; the root FS is read-only.
                                "env": [{"name": "HOME", "value": "/tmp"}],
                                "volume_mounts": [{"name": "tmp", "mount_path": "/tmp"}],
                                "resources": {
                                    "requests": {"cpu": "100m", "memory": "128Mi"},
                                    "limits": {"cpu": "500m", "memory": "256Mi"},
                                },
                                "security_context": RESTRICTED_SECURITY_CONTEXT,
                            }
                        ],
                        "volumes": [{"name": "tmp", "empty_dir": {}}],
                    }
                },
            },
            opts=pulumi.ResourceOptions(parent=self, depends_on=[binding]),
        )
        release = k8s.helm.v3.Release(
            f"{name}-release",
            name="kuberay-operator",
            chart=args.chart,
            version=args.chart_version,
            repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=args.repository)
            if args.repository
            else None,
            namespace=ns.metadata.name,
            create_namespace=False,
            # CRDs belong to the Job above (server-side apply); Helm would never upgrade them.
            skip_crds=True,
            atomic=True,
            timeout=600,
            values={
                "nodeSelector": args.node_selector,
                "resources": {
                    "requests": {"cpu": "100m", "memory": "512Mi"},
                    "limits": {"cpu": "1", "memory": "1Gi"},
                },
            },
            opts=pulumi.ResourceOptions(parent=self, depends_on=[job]),
        )
        self.namespace = ns.metadata.name
        self.release_name = release.name.apply(lambda n: n or "kuberay-operator")
        self.register_outputs({"namespace": self.namespace, "release_name": self.release_name})
