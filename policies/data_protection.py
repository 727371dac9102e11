"""Data protection: nothing stateful is deleted by accident."""

from __future__ import annotations

from collections.abc import Iterator

from pulumi_policy import ResourceValidationArgs

from planning.naming import PROTECTION_LIFT_LABEL
from planning.resource_types import BUCKET, CLUSTER, LUSTRE, PERSISTENT_VOLUME
from policies.base import Config, resource_policy
from policies.props import get_bool, get_map, get_str

LUSTRE_CSI = "lustre.csi.storage.gke.io"


def _protected(args: ResourceValidationArgs, config: Config) -> Iterator[str]:
    if not config["required"]:
        return
    if args.opts.protect:
        return
    props = args.props
    if args.resource_type == CLUSTER and get_bool(props, "deletionProtection") is True:
        # GKE deletion protection blocks a delete; left unset, the provider's Check fills in
        # its default (true), so policies see it as they see every checked input.
        return
    if args.resource_type == LUSTRE and get_str(props, "deletionPolicy") == "PREVENT":
        return
    labels = get_map(props, "resourceLabels" if args.resource_type == CLUSTER else "labels")
    if get_str(labels, PROTECTION_LIFT_LABEL):
        # The documented lift (protect false with protectionLift): the step it is, on purpose.
        return
    yield "can be deleted by `pulumi destroy`; protect it (nemo-rl-gke:protect: true)"


protect_stateful_resources = resource_policy(
    name="protect-stateful-resources",
    description="Clusters, Lustre instances and buckets are protected from deletion.",
    types=[CLUSTER, LUSTRE, BUCKET],
    check=_protected,
    remediation=(
        "Set nemo-rl-gke:protect to true (protect + deletion protection); to change or delete"
        " on purpose, set it false with nemo-rl-gke:protectionLift naming why (docs/runbook.md)."
    ),
    properties={
        "required": {
            "type": "boolean",
            "default": True,
            "description": "Require protection (false for throwaway stacks such as dev).",
        }
    },
)


def _lustre_pv_retain(args: ResourceValidationArgs, _config: Config) -> Iterator[str]:
    spec = get_map(args.props, "spec")
    if get_str(get_map(spec, "csi"), "driver") != LUSTRE_CSI:
        return
    policy = get_str(spec, "persistentVolumeReclaimPolicy")
    if policy is not None and policy != "Retain":
        yield f"reclaims with {policy}; a Lustre volume must use Retain"


lustre_pv_retain = resource_policy(
    name="lustre-pv-retain",
    description="Lustre PersistentVolumes use the Retain reclaim policy.",
    types=[PERSISTENT_VOLUME],
    check=_lustre_pv_retain,
    remediation="Set persistentVolumeReclaimPolicy: Retain on the Lustre PV.",
)


def _no_force_destroy(args: ResourceValidationArgs, config: Config) -> Iterator[str]:
    if get_bool(args.props, "forceDestroy") and not config["allowForceDestroy"]:
        yield "has force_destroy, so deleting it also deletes every object in it"


bucket_no_force_destroy = resource_policy(
    name="bucket-no-force-destroy",
    description="Buckets that hold data are never force-destroyed.",
    types=[BUCKET],
    check=_no_force_destroy,
    remediation="Drop force_destroy (protected stacks never set it); empty a bucket on purpose.",
    properties={
        "allowForceDestroy": {
            "type": "boolean",
            "default": False,
            "description": "Allow force_destroy (throwaway stacks such as dev).",
        }
    },
)
