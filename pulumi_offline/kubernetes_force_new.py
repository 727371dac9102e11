"""What pulumi-kubernetes 4.25.0 replaces on, for the kinds this program creates.

Follows the provider's `forceNewProperties` (pulumi/pulumi-kubernetes `provider/pkg/provider/
diff.go` at v4.25.0, commit f47bc2d6f199: the release the SDK is pinned to and the test bed
builds): every object is replaced when its `metadata.name` or `metadata.namespace` changes; a
Job when its template, selector, completions or parallelism change; a PersistentVolume when
its volume source (`spec.csi`) changes; a claim when its access modes, selector, storage class
or volume name change; a Secret when its type or data change (Secrets are immutable unless the
provider is told otherwise); a ConfigMap when its data changes; a Service when its cluster IP
changes; a (Cluster)RoleBinding when its roleRef changes. Every other change is an update. A
replaced object whose name stays the same is deleted first (`provider.go`,
`deleteBeforeReplace`): this program names every object.

It cannot see what the provider learns from the API server during a preview (a server-side
dry run can refuse a change to an immutable field that no rule here names), and it leaves Helm
releases and the provider itself to decide for themselves.
"""

from __future__ import annotations

from planning.resource_types import (
    CLUSTER_ROLE_BINDING,
    CONFIG_MAP,
    JOB,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    ROLE_BINDING,
    SECRET,
    SERVICE,
)
from pulumi_offline.bridge_diff import TypeFacts

_METADATA = frozenset({"metadata.name", "metadata.namespace"})
_BY_TYPE: dict[str, frozenset[str]] = {
    JOB: frozenset({"spec.completions", "spec.parallelism", "spec.selector", "spec.template"}),
    PERSISTENT_VOLUME: frozenset({"spec.csi", "spec.hostPath", "spec.nfs", "spec.local"}),
    PERSISTENT_VOLUME_CLAIM: frozenset(
        {"spec.accessModes", "spec.selector", "spec.storageClassName", "spec.volumeName"}
    ),
    SECRET: frozenset({"type", "stringData", "data"}),
    CONFIG_MAP: frozenset({"data", "binaryData"}),
    SERVICE: frozenset({"spec.clusterIP"}),
    CLUSTER_ROLE_BINDING: frozenset({"roleRef"}),
    ROLE_BINDING: frozenset({"roleRef"}),
}


def kubernetes_facts(token: str) -> TypeFacts | None:
    """The facts of a Kubernetes object's token (`kubernetes:batch/v1:Job`); None for the
    provider itself and for Helm releases, which decide differently."""
    if not token.startswith("kubernetes:") or token.startswith("kubernetes:helm.sh/"):
        return None
    return TypeFacts(
        resource_type=token,
        force_new=_METADATA | _BY_TYPE.get(token, frozenset()),
        delete_before_replace=True,
        autoname=None,  # named objects: the provider deletes the old one first
    )
