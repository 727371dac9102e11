"""What the operators' charts share: the rules for their objects and the handle others wait on.

Both operators are `helm.v4.Chart`s: every object of the chart is a Pulumi resource of its
own, seen by the policy pack and by previews. A resource that waits on a chart waits on the
chart's objects themselves (`chart_objects`, `after`), not only on the chart: the engine deletes a
dependent before what it depends on, and only the objects' own edges keep a queue object or a
RayJob from outliving the controller that must remove its finalizer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from planning.resource_types import CUSTOM_RESOURCE_DEFINITION

PATCH_FORCE = "pulumi.com/patchForce"
"""pulumi-kubernetes' annotation: apply with force, taking fields other managers own."""


def retain_definitions(args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult | None:
    """A chart's CRDs outlive the chart's resource (deleting a CRD deletes all its objects), and
    a later deployment takes a retained CRD over (server-side apply's force: its fields were
    another stack's)."""
    if args.type_ != CUSTOM_RESOURCE_DEFINITION:
        return None
    props = dict(args.props)
    given = props.get("metadata")
    metadata: dict[str, Any] = dict(given) if isinstance(given, dict) else {}
    metadata["annotations"] = {**(metadata.get("annotations") or {}), PATCH_FORCE: "true"}
    props["metadata"] = metadata
    return pulumi.ResourceTransformResult(
        props=props,
        opts=pulumi.ResourceOptions.merge(args.opts, pulumi.ResourceOptions(retain_on_delete=True)),
    )


def chart_objects(chart: k8s.helm.v4.Chart) -> pulumi.Output[Sequence[pulumi.Resource]]:
    """The chart and each of its objects (only the chart where they are unknown: a preview
    without the cluster's kubeconfig)."""

    def listed(found: Sequence[object] | None) -> Sequence[pulumi.Resource]:
        return [*(r for r in found or () if isinstance(r, pulumi.Resource)), chart]

    return chart.resources.apply(listed)


def after(
    objects: pulumi.Input[Sequence[pulumi.Resource]], *more: pulumi.Resource
) -> pulumi.Output[Sequence[pulumi.Resource]]:
    """`depends_on` for `objects` (a chart's, from `chart_objects`) and `more`. The Output carries
    `more` (and the chart) itself, so they are waited on even where the objects are unknown."""

    def joined(found: list[object]) -> Sequence[pulumi.Resource]:
        first = found[0] if isinstance(found[0], list) else []
        return [*(r for r in first if isinstance(r, pulumi.Resource)), *more]

    return pulumi.Output.all(objects, *(r.urn for r in more)).apply(joined)
