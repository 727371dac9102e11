"""Small helpers so every policy has the same shape.

Each policy: a kebab-case name, a one-sentence description, an enforcement level, a config
schema whose every property has a default (plus `exempt`, a list of resource names the policy
skips), remediation steps, and messages that start with the resource they are about. Check
functions are plain generators of messages, easy to read and to test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    PolicyResource,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

Config = Mapping[str, Any]
ResourceCheck = Callable[[ResourceValidationArgs, Config], Iterable[str]]
StackCheck = Callable[
    [Sequence[PolicyResource], Config], Iterable[tuple[str, PolicyResource | None]]
]

EXEMPT: dict[str, Any] = {
    "type": "array",
    "items": {"type": "string"},
    "default": [],
    "description": "Logical names of resources this policy skips (a reviewed exception).",
}


def _schema(properties: Mapping[str, Mapping[str, Any]] | None) -> PolicyConfigSchema:
    props: dict[str, dict[str, Any]] = {"exempt": dict(EXEMPT)}
    for key, spec in (properties or {}).items():
        if "default" not in spec:
            raise ValueError(f"config property {key!r} needs a default")
        props[key] = dict(spec)
    return PolicyConfigSchema(properties=props)


def _config(schema: PolicyConfigSchema, given: Mapping[str, Any] | None) -> dict[str, Any]:
    """Schema defaults under the given config: the CLI does this, direct callers may not."""
    merged = {key: spec["default"] for key, spec in schema.properties.items()}
    merged.update(dict(given or {}))
    return merged


def label(resource_type: str, name: str) -> str:
    """`Firewall 'fw-1'`: how every message names its resource."""
    return f"{resource_type.rsplit(':', 1)[-1]} '{name}'"


def resource_policy(
    *,
    name: str,
    description: str,
    types: Sequence[str],
    check: ResourceCheck,
    remediation: str,
    level: EnforcementLevel = EnforcementLevel.MANDATORY,
    properties: Mapping[str, Mapping[str, Any]] | None = None,
) -> ResourceValidationPolicy:
    """A per-resource policy applied to `types`."""
    schema = _schema(properties)
    wanted = frozenset(types)

    def validate(args: ResourceValidationArgs, report: ReportViolation) -> None:
        if args.resource_type not in wanted:
            return
        config = _config(schema, args.get_config())
        if args.name in config["exempt"]:
            return
        for message in check(args, config):
            report(f"{label(args.resource_type, args.name)}: {message}", None)

    return ResourceValidationPolicy(
        name=name,
        description=description,
        validate=validate,
        enforcement_level=level,
        config_schema=schema,
        remediation_steps=remediation,
    )


def stack_policy(
    *,
    name: str,
    description: str,
    check: StackCheck,
    remediation: str,
    level: EnforcementLevel = EnforcementLevel.MANDATORY,
    properties: Mapping[str, Mapping[str, Any]] | None = None,
) -> StackValidationPolicy:
    """A policy over every resource's outputs at once (cross-resource rules)."""
    schema = _schema(properties)

    def validate(args: StackValidationArgs, report: ReportViolation) -> None:
        config = _config(schema, args.get_config())
        resources = [r for r in args.resources if r.name not in config["exempt"]]
        for message, resource in check(resources, config):
            if resource is None:
                report(message, None)
            else:
                report(f"{label(resource.resource_type, resource.name)}: {message}", resource.urn)

    return StackValidationPolicy(
        name=name,
        description=description,
        validate=validate,
        enforcement_level=level,
        config_schema=schema,
        remediation_steps=remediation,
    )


def of_type(resources: Sequence[PolicyResource], *types: str) -> list[PolicyResource]:
    """Resources of the given types."""
    return [r for r in resources if r.resource_type in types]


def last_segment(reference: str | None) -> str | None:
    """`projects/p/global/networks/net` (or a URL, or a bare name) -> `net`."""
    if not reference:
        return None
    return reference.rstrip("/").rsplit("/", 1)[-1]
