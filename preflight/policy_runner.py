"""Run the policy pack in-process, through the same analyzer servicer the CLI talks to.

The Pulumi CLI starts the pack as a gRPC server and calls `Configure`, `Analyze` (once per
resource, with its inputs) and `AnalyzeStack` (once, with every resource's outputs). Here
the servicer is called directly with the same protobuf requests built from the recorded
registrations, so policies see exactly the argument shapes (camelCase proxies, float numbers,
unwrapped secrets) they see under `pulumi preview`. What the CLI does before `Configure`
(`ReconcilePolicyPackConfig`: schema defaults, then the config file, then validation) is
reproduced in `reconcile_config`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from google.protobuf import struct_pb2
from pulumi.runtime import proto
from pulumi.runtime.rpc import serialize_properties
from pulumi.runtime.sync_await import _sync_await
from pulumi_policy import EnforcementLevel, Policy
from pulumi_policy.policy import _PolicyAnalyzerServicer

from preflight.recorder import Record

_LEVELS = {level.value: level for level in EnforcementLevel}
_PROTO_LEVEL_NAMES = {
    proto.ADVISORY: "advisory",
    proto.MANDATORY: "mandatory",
    proto.REMEDIATE: "remediate",
    proto.DISABLED: "disabled",
}


class PolicyConfigError(Exception):
    """The policy config file is unusable (exit code 2)."""


@dataclass(frozen=True)
class PolicyInfo:
    """A policy that was evaluated, with the level it ran at."""

    name: str
    enforcement_level: str


@dataclass(frozen=True)
class Violation:
    """One diagnostic, as `pulumi preview` would print it."""

    policy: str
    enforcement_level: str
    urn: str | None
    message: str


@dataclass(frozen=True)
class PolicyConfig:
    """Reconciled config: per-policy properties and levels, plus what the CLI lets pass."""

    properties: dict[str, dict[str, Any]]
    levels: dict[str, EnforcementLevel]
    warnings: tuple[str, ...] = ()
    """Entries the CLI accepts silently but that are almost certainly mistakes."""


def load_policy_config_file(path: Path | None) -> dict[str, Any]:
    """Read a `--policy-pack-config` file as the CLI does (`resource/analyzer/config.go`).

    Empty content is no config; a numeric `version` marks a version-2 file whose policies sit
    under `policies`; an `environments` key names ESC environments, not a policy.
    """
    if path is None:
        return {}
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise PolicyConfigError(f"cannot read policy config {path}: {err.strerror}") from None
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise PolicyConfigError(f"policy config {path} is not valid JSON: {err}") from None
    if not isinstance(data, dict):
        raise PolicyConfigError(f"policy config {path} must be a JSON object")
    version = data.get("version")
    if isinstance(version, int | float) and not isinstance(version, bool):
        if version != 2:
            raise PolicyConfigError(f'policy config {path}: "version" must be 2')
        policies = data.get("policies") or {}
        if not isinstance(policies, dict):
            raise PolicyConfigError(f'policy config {path}: "policies" must be an object')
        return dict(policies)
    environments = data.pop("environments", None)
    if environments is not None and not (
        isinstance(environments, list) and all(isinstance(e, str) for e in environments)
    ):
        raise PolicyConfigError(f'policy config {path}: "environments" must be an array of strings')
    return data


def _level(value: Any, where: str) -> EnforcementLevel:
    level = _LEVELS.get(str(value)) if isinstance(value, str) else None
    if level is None:
        raise PolicyConfigError(
            f"{where}: enforcement level {value!r} is not one of {', '.join(sorted(_LEVELS))}"
        )
    return level


def reconcile_config(policies: Sequence[Policy], raw: dict[str, Any]) -> PolicyConfig:
    """The CLI's ReconcilePolicyPackConfig: schema defaults, then the file, then validation.

    Like the CLI, a name that is no policy of the pack and a property a schema does not
    declare are accepted (the schema is checked with its properties and required list only);
    both are reported as warnings, since they usually are typos that silently do nothing.
    """
    known = {p.name for p in policies}
    warnings: list[str] = []
    parsed: dict[str, tuple[EnforcementLevel | None, dict[str, Any]]] = {}
    for key, value in raw.items():
        if isinstance(value, str):
            parsed[key] = (_level(value, key), {})
        elif isinstance(value, dict):
            entry = dict(value)
            level = (
                _level(entry.pop("enforcementLevel"), key) if "enforcementLevel" in entry else None
            )
            parsed[key] = (level, entry)
        else:
            raise PolicyConfigError(
                f"policy config {key!r}: {value!r} is not a valid value; must be a string or object"
            )
        if key != "all" and key not in known:
            warnings.append(
                f"policy config names {key!r}, which is no policy of the pack (the CLI ignores"
                f" it); known: {', '.join(sorted(known))}"
            )
    all_level = parsed.get("all", (None, {}))[0]

    properties: dict[str, dict[str, Any]] = {}
    levels: dict[str, EnforcementLevel] = {}
    for policy in policies:
        schema = policy.config_schema
        props: dict[str, Any] = {}
        if schema is not None:
            props = {k: v["default"] for k, v in schema.properties.items() if "default" in v}
        level, given = parsed.get(policy.name, (None, {}))
        level = level or all_level
        props.update(given)
        if level is not None:
            levels[policy.name] = level
        declared = set(schema.properties) if schema is not None else set()
        extra = sorted(set(given) - declared)
        if extra:
            warnings.append(
                f"policy config for {policy.name} sets {', '.join(extra)}, which its schema does"
                " not declare (the CLI passes it on; the policy ignores it)"
            )
        if schema is not None:
            _validate(policy.name, props, schema.properties, schema.required or [])
        properties[policy.name] = props
    return PolicyConfig(properties, levels, tuple(warnings))


def _validate(
    name: str, props: dict[str, Any], schema: dict[str, Any], required: list[str]
) -> None:
    import jsonschema  # only needed here; keeps preflight's start-up lean

    # The CLI's convertSchema: type object, the properties and the required list, nothing more.
    full: dict[str, Any] = {"type": "object"}
    if schema:
        full["properties"] = schema
    if required:
        full["required"] = required
    try:
        jsonschema.validate(props, full)
    except jsonschema.ValidationError as err:
        path = ".".join(str(p) for p in err.absolute_path)
        raise PolicyConfigError(
            f"policy config for {name}{'.' + path if path else ''}: {err.message}"
        ) from None


def _struct(value: dict[str, Any]) -> struct_pb2.Struct:
    struct = struct_pb2.Struct()
    struct.update(value)
    return struct


def _options(record: Record) -> Any:
    return proto.AnalyzerResourceOptions(
        protect=record.protect,
        ignoreChanges=record.ignore_changes,
        deleteBeforeReplace=bool(record.delete_before_replace),
        deleteBeforeReplaceDefined=record.delete_before_replace is not None,
        additionalSecretOutputs=record.additional_secret_outputs,
        parent=record.parent or "",
    )


def _state_struct(record: Record) -> struct_pb2.Struct:
    # Outputs travel to analyzers serialized the same way inputs do (secrets stay wrapped).
    return _sync_await(serialize_properties(record.state, {}))


def evaluate(
    records: Sequence[Record],
    policies: Sequence[Policy],
    config: PolicyConfig,
    pack_name: str,
    pack_version: str,
    pack_level: EnforcementLevel,
) -> tuple[list[PolicyInfo], list[Violation]]:
    """Run every policy over the records; return what ran and what it found."""
    servicer = _PolicyAnalyzerServicer(pack_name, pack_version, list(policies), pack_level)
    policy_config = {
        name: proto.PolicyConfig(
            enforcementLevel=servicer._map_enforcement_level(  # the engine's own mapping
                config.levels.get(name) or _default_level(policies, name, pack_level)
            ),
            properties=_struct(props),
        )
        for name, props in config.properties.items()
    }
    servicer.Configure(proto.ConfigureAnalyzerRequest(policyConfig=policy_config), None)  # type: ignore[no-untyped-call]

    by_urn = {r.urn: r for r in records}
    violations: list[Violation] = []

    def provider_of(record: Record) -> Any:
        prov = by_urn.get(record.provider or "")
        if prov is None:
            return None
        return proto.AnalyzerProviderResource(
            type=prov.type, properties=prov.object, urn=prov.urn, name=prov.name
        )

    def collect(response: Any, urn: str | None) -> None:
        for diag in response.diagnostics:
            message = diag.message
            prefix = f"{diag.description}\n"
            if message.startswith(prefix):
                message = message[len(prefix) :]
            violations.append(
                Violation(
                    policy=diag.policyName,
                    enforcement_level=_PROTO_LEVEL_NAMES.get(diag.enforcementLevel, "advisory"),
                    urn=diag.urn or urn,
                    message=message,
                )
            )

    for record in records:
        request = proto.AnalyzeRequest(
            type=record.type,
            properties=record.object,
            urn=record.urn,
            name=record.name,
            options=_options(record),
            provider=provider_of(record),
        )
        collect(servicer.Analyze(request, None), record.urn)  # type: ignore[no-untyped-call]

    stack_request = proto.AnalyzeStackRequest(
        resources=[
            proto.AnalyzerResource(
                type=r.type,
                properties=_state_struct(r),
                urn=r.urn,
                name=r.name,
                options=_options(r),
                provider=provider_of(r),
                parent=r.parent or "",
                dependencies=r.dependencies,
                propertyDependencies={
                    key: proto.AnalyzerPropertyDependencies(urns=urns)
                    for key, urns in r.property_dependencies.items()
                },
            )
            for r in records
        ]
    )
    collect(servicer.AnalyzeStack(stack_request, None), None)  # type: ignore[no-untyped-call]

    infos = [
        PolicyInfo(
            p.name,
            (config.levels.get(p.name) or _default_level(policies, p.name, pack_level)).value,
        )
        for p in policies
    ]
    return infos, violations


def _default_level(
    policies: Sequence[Policy], name: str, pack_level: EnforcementLevel
) -> EnforcementLevel:
    for policy in policies:
        if policy.name == name:
            return policy.enforcement_level or pack_level
    return pack_level
