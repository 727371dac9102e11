"""What pulumi-kubernetes 4.25.0 replaces on, for the kinds this program creates.

From the provider's `forceNewProperties` (pulumi/pulumi-kubernetes `provider/pkg/provider/
diff.go` at the v4.25.0 commit): every object is replaced when its `metadata.name` or
`metadata.namespace` changes; a Job when its template, selector, completions or parallelism
change; a PersistentVolume when its volume source (`spec.csi`) changes; a claim when its access
modes, selector, storage class or volume name change; a Secret when its type or data change
(Secrets are immutable unless the provider is told otherwise); a ConfigMap when its data
changes; a Service when its cluster IP changes; a (Cluster)RoleBinding when its roleRef
changes. Every other change is an update. A replaced object whose name stays the same is
deleted first (`provider.go`, `deleteBeforeReplace`): this program names every object.
"""

from __future__ import annotations

from pulumi_offline.bridge_diff import TypeFacts

_METADATA = frozenset({"metadata.name", "metadata.namespace"})
_BY_KIND: dict[str, frozenset[str]] = {
    "batch/v1:Job": frozenset(
        {"spec.completions", "spec.parallelism", "spec.selector", "spec.template"}
    ),
    "core/v1:PersistentVolume": frozenset({"spec.csi", "spec.hostPath", "spec.nfs", "spec.local"}),
    "core/v1:PersistentVolumeClaim": frozenset(
        {"spec.accessModes", "spec.selector", "spec.storageClassName", "spec.volumeName"}
    ),
    "core/v1:Secret": frozenset({"type", "stringData", "data"}),
    "core/v1:ConfigMap": frozenset({"data", "binaryData"}),
    "core/v1:Service": frozenset({"spec.clusterIP"}),
    "rbac.authorization.k8s.io/v1:ClusterRoleBinding": frozenset({"roleRef"}),
    "rbac.authorization.k8s.io/v1:RoleBinding": frozenset({"roleRef"}),
}


def kubernetes_facts(token: str) -> TypeFacts | None:
    """The facts of a Kubernetes object's token (`kubernetes:batch/v1:Job`); None for the
    provider itself and for Helm releases, which decide differently."""
    if not token.startswith("kubernetes:") or token.startswith("kubernetes:helm.sh/"):
        return None
    kind = token.removeprefix("kubernetes:")
    return TypeFacts(
        resource_type=token,
        force_new=_METADATA | _BY_KIND.get(kind, frozenset()),
        delete_before_replace=True,
        autoname=None,  # named objects: the provider deletes the old one first
    )
