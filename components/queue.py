"""Kueue: the pinned Helm release, and the queue in front of the GPU pool.

Two components, because the acceptance gates sit between them in the dependency graph:

- `KueueOperator` installs the chart (its CRDs are chart templates, so Helm installs and
  upgrades them with the release, before anything uses them) and waits for the controller to
  be ready: its readiness probe passes only once its webhook server serves with injected
  certificates. The chart's job webhooks intercept Job and Ray creates in the workload
  namespace with failurePolicy Fail, so everything created there waits for this release. It
  also holds the PriorityClasses (training vs smoke/gate work).
- `JobQueue` holds the Topology, the ResourceFlavors, the ClusterQueue, on flex-start pools the
  ProvisioningRequest admission check, and the LocalQueue. Each goes through Kueue's
  validating webhooks (so a controller that is not serving fails the update instead of being
  skipped). The LocalQueue - the only way into the queue - is created after `open_after` (the
  acceptance gates), so nothing is admitted before the platform passed them.

Teardown: every object here carries Kueue's `resource-in-use` finalizer, which only the running
controller removes. Pulumi deletes in reverse dependency order - the Ray objects, then the
LocalQueue, ClusterQueue, flavors and Topology, and only then the release - so the controller
is still there to release them, and the release's uninstall finds no object left behind its
CRDs (Cluster Toolkit's destroy timed out on Kueue's uninstall: #5091, #5109).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from planning.queue import (
    KUEUE_API,
    PriorityClassPlan,
    QueuePlan,
    admission_check_spec,
    cluster_queue_spec,
    flavor_spec,
    helm_values,
    local_queue_spec,
    provisioning_config_spec,
    topology_spec,
)

RELEASE_NAME = "kueue"
"""Release name: the chart names its objects `kueue-*` (a name containing "kueue" is used as
the full name)."""


@dataclass(frozen=True, kw_only=True)
class KueueOperatorArgs:
    """Inputs of the Kueue installation."""

    chart: str
    """A local chart folder or .tgz, or the chart's OCI reference."""
    chart_version: str
    image: str
    workload_namespace: str
    """The only namespace whose Ray objects Kueue manages (and whose creates its webhooks see)."""
    priority_classes: Sequence[PriorityClassPlan]
    namespace: str = "kueue-system"
    node_selector: pulumi.Input[Mapping[str, str]] = field(default_factory=dict)
    """Where the controller runs (the system pool)."""
    dranet: bool = False
    """Map GKE's RDMA device class to Kueue's logical resource (pods claim NICs)."""
    batch_jobs: bool = False
    """Manage batch Jobs labelled with a queue (the scheduled health checks' Jobs)."""


class KueueOperator(pulumi.ComponentResource):
    """Namespace, the `kueue` Helm release, and the PriorityClasses of queued work."""

    namespace: pulumi.Output[str]
    """Kueue's namespace."""
    release_name: pulumi.Output[str]
    """Helm release name."""
    release: k8s.helm.v3.Release
    """The release: ready once the controller serves its webhooks."""
    priority_classes: dict[str, k8s.scheduling.v1.PriorityClass]
    """PriorityClass name -> resource (pods that use one depend on it)."""

    def __init__(
        self, name: str, args: KueueOperatorArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("nemo:apps:KueueOperator", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        ns = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata={
                "name": args.namespace,
                "labels": {"app.kubernetes.io/part-of": "nemo-rl-gke"},
            },
            opts=child,
        )
        values = helm_values(
            args.workload_namespace, args.image, dranet=args.dranet, batch_jobs=args.batch_jobs
        )
        values["controllerManager"]["nodeSelector"] = args.node_selector
        self.release = k8s.helm.v3.Release(
            f"{name}-release",
            name=RELEASE_NAME,
            chart=args.chart,
            version=args.chart_version,
            namespace=ns.metadata.name,
            create_namespace=False,
            # Helm waits for the controller's readiness probe (/readyz: certificates injected,
            # webhook server up); a failed install or upgrade is rolled back.
            atomic=True,
            timeout=600,
            values=values,
            opts=child,
        )
        self.priority_classes = {
            plan.name: k8s.scheduling.v1.PriorityClass(
                f"{name}-{plan.role}-priority",
                metadata={
                    "name": plan.name,
                    "labels": {"app.kubernetes.io/part-of": "nemo-rl-gke"},
                },
                value=plan.value,
                global_default=False,
                preemption_policy="PreemptLowerPriority" if plan.preempts else "Never",
                description=plan.description,
                opts=child,
            )
            for plan in args.priority_classes
        }
        self.namespace = ns.metadata.name
        self.release_name = self.release.name.apply(lambda n: n or RELEASE_NAME)
        self.register_outputs({"namespace": self.namespace, "release_name": self.release_name})


@dataclass(frozen=True, kw_only=True)
class JobQueueArgs:
    """Inputs of the queue."""

    plan: QueuePlan
    operator: KueueOperator
    open_after: Sequence[pulumi.Resource] = ()
    """What must exist or finish before anything is admitted: the workload namespace, and the
    acceptance gates (they need every GPU of the pool and run outside the queue)."""
    labels: Mapping[str, str] = field(default_factory=dict)


class JobQueue(pulumi.ComponentResource):
    """Topology, ResourceFlavors, ClusterQueue (+ ProvisioningRequest check) and LocalQueue."""

    local_queue: pulumi.Output[str]
    """LocalQueue name in the workload namespace: the `kueue.x-k8s.io/queue-name` label value."""
    cluster_queue: pulumi.Output[str]
    """ClusterQueue name."""
    gpu_quota: pulumi.Output[int]
    """GPUs the queue admits at once."""
    entry: k8s.apiextensions.CustomResource
    """The LocalQueue resource: queued objects depend on it."""
    objects: pulumi.Output[dict[str, dict[str, object]]]
    """Every Kueue object created here, by logical name, as sent (metadata and spec): known
    in a first preview, when the objects themselves have no state yet, so the policy pack can
    judge the queue before its cluster exists (policies.job_queue)."""

    def __init__(
        self, name: str, args: JobQueueArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("nemo:apps:JobQueue", name, None, opts)
        plan = args.plan
        labels = {"app.kubernetes.io/part-of": "nemo-rl-gke", **args.labels}
        after_release = pulumi.ResourceOptions(parent=self, depends_on=[args.operator.release])
        published: dict[str, dict[str, object]] = {}

        def kueue_object(
            logical: str,
            kind: str,
            object_name: str,
            spec: dict[str, object],
            depends_on: Sequence[pulumi.Resource],
            namespace: str | None = None,
        ) -> k8s.apiextensions.CustomResource:
            metadata: dict[str, object] = {"name": object_name, "labels": labels}
            if namespace is not None:
                metadata["namespace"] = namespace
            published[f"{name}-{logical}"] = {"metadata": metadata, "spec": spec}
            return k8s.apiextensions.CustomResource(
                f"{name}-{logical}",
                api_version=KUEUE_API,
                kind=kind,
                metadata=metadata,
                spec=spec,
                opts=pulumi.ResourceOptions.merge(
                    after_release, pulumi.ResourceOptions(depends_on=list(depends_on))
                ),
            )

        # The Topology only where a flavor places pods by it (GPUs whose nodes report one).
        topology = (
            [kueue_object("topology", "Topology", plan.topology, topology_spec(), [])]
            if plan.gpu.topology
            else []
        )
        flavors = [
            kueue_object(
                f"flavor-{flavor.name}",
                "ResourceFlavor",
                flavor.name,
                flavor_spec(flavor),
                topology if flavor.topology else [],
            )
            for flavor in (plan.system, plan.gpu)
        ]
        checks: list[pulumi.Resource] = []
        if plan.provisioning:
            config = kueue_object(
                "provisioning-config",
                "ProvisioningRequestConfig",
                plan.provisioning_config,
                provisioning_config_spec(),
                [],
            )
            checks.append(
                kueue_object(
                    "admission-check",
                    "AdmissionCheck",
                    plan.admission_check,
                    admission_check_spec(plan),
                    [config],
                )
            )
        cluster_queue = kueue_object(
            "cluster-queue",
            "ClusterQueue",
            plan.cluster_queue,
            cluster_queue_spec(plan),
            [*flavors, *checks],
        )
        self.entry = kueue_object(
            "local-queue",
            "LocalQueue",
            plan.local_queue,
            local_queue_spec(plan),
            [cluster_queue, *args.open_after],
            namespace=plan.namespace,
        )
        self.local_queue = self.entry.urn.apply(lambda _: plan.local_queue)
        self.cluster_queue = pulumi.Output.from_input(plan.cluster_queue)
        self.gpu_quota = pulumi.Output.from_input(plan.gpu_quota)
        self.objects = pulumi.Output.from_input(published)
        self.register_outputs(
            {
                "local_queue": self.local_queue,
                "cluster_queue": self.cluster_queue,
                "gpu_quota": self.gpu_quota,
                "objects": self.objects,
            }
        )
