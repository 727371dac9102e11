"""Record every resource registration exactly as the program sends it to the engine."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, cast

from google.protobuf import json_format, struct_pb2
from pulumi.runtime import rpc
from pulumi.runtime.mocks import MockMonitor
from pulumi.runtime.rpc import UNKNOWN

from planning.resource_types import STACK
from pulumi_offline.bridge_diff import apply_check_defaults
from pulumi_offline.gcp_force_new import FACTS

SIG_KEY = "4dabf18193072939515e22adb298388d"
SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"  # noqa: S105 - Pulumi wire signature
RESOURCE_SIG = "5cf8f73096256a8f31e491e813e4eb8e"
SECRET_MASK = "[secret]"  # noqa: S105 - the mask, not a secret
UNKNOWN_MASK = "[unknown]"


@dataclass
class Record:
    """One registered resource, inputs kept in wire form (camelCase, numbers as floats)."""

    urn: str
    type: str
    name: str
    custom: bool
    parent: str | None
    dependencies: list[str]
    property_dependencies: dict[str, list[str]]
    protect: bool
    delete_before_replace: bool | None
    ignore_changes: list[str]
    additional_secret_outputs: list[str]
    provider: str | None
    """URN of the explicit provider, or None for the engine's default provider."""
    object: struct_pb2.Struct
    """The raw request object: the exact bytes an analyzer would receive as inputs."""
    create_timeout: str = ""
    """The `customTimeouts.create` sent (e.g. "120m"); empty: the provider's default."""
    state: dict[str, Any] = field(default_factory=dict)
    """What the mock returned: stands in for the resource's outputs."""
    id: str | None = None

    @cached_property
    def inputs(self) -> dict[str, Any]:
        """Wire-form inputs with each secret value masked (and nothing else)."""
        return cast(dict[str, Any], mask(json_format.MessageToDict(self.object)))

    @cached_property
    def raw_inputs(self) -> dict[str, Any]:
        """Wire-form inputs including secret wrappers; for policies and tests, never printed."""
        return json_format.MessageToDict(self.object)


def mask(value: Any) -> Any:
    """Replace each secret by `[secret]`, unknowns by `[unknown]`, resource refs by their URN."""
    if isinstance(value, dict):
        sig = value.get(SIG_KEY)
        if sig == SECRET_SIG:
            return SECRET_MASK
        if sig == RESOURCE_SIG:
            return value.get("urn")
        return {k: mask(v) for k, v in value.items()}
    if isinstance(value, list):
        return [mask(v) for v in value]
    if value == UNKNOWN:
        return UNKNOWN_MASK
    return value


def with_check_defaults(type_: str, value: struct_pb2.Struct) -> None:
    """Add, in place, the defaults the real provider's `Check` adds to a resource's inputs
    (the engine hands policies and the provider's create the checked inputs)."""
    facts = FACTS.get(type_)
    if facts is None or not facts.defaults:
        return
    inputs = json_format.MessageToDict(value)
    checked, _ = apply_check_defaults(facts, inputs)
    if checked != inputs:
        value.Clear()
        value.update(checked)


class RecordingMonitor(MockMonitor):
    """A MockMonitor that keeps the raw RegisterResource requests (after the provider's
    `Check` defaults, as the engine keeps them)."""

    def __init__(self, mocks: Any) -> None:
        super().__init__(mocks)
        self.records: dict[str, Record] = {}
        self._lock = threading.Lock()

    def RegisterResource(self, request: Any) -> Any:  # noqa: N802 - gRPC method name
        """Apply the Check defaults, record the request, then let the mock answer it."""
        if request.custom:
            with_check_defaults(request.type, request.object)
        response = super().RegisterResource(request)  # type: ignore[no-untyped-call]
        if request.type == STACK:
            return response
        provider = request.provider.rsplit("::", 1)[0] if request.provider else None
        record = Record(
            urn=response.urn,
            type=request.type,
            name=request.name,
            custom=bool(request.custom),
            parent=request.parent or None,
            dependencies=sorted(set(request.dependencies)),
            property_dependencies={
                k: sorted(set(v.urns)) for k, v in request.propertyDependencies.items()
            },
            protect=bool(request.protect),
            delete_before_replace=(
                bool(request.deleteBeforeReplace) if request.deleteBeforeReplaceDefined else None
            ),
            ignore_changes=list(request.ignoreChanges),
            additional_secret_outputs=list(request.additionalSecretOutputs),
            provider=provider,
            create_timeout=request.customTimeouts.create
            if request.HasField("customTimeouts")
            else "",
            object=request.object,
        )
        registered = self.resources.get(response.urn)
        if registered is not None:
            record.state = dict(registered.state)
            record.id = registered.id
        with self._lock:
            self.records[record.urn] = record
        return response

    def RegisterResourceOutputs(self, request: Any) -> Any:  # noqa: N802 - gRPC method name
        """A component's registered outputs become its state, as the engine records them (a
        stack policy reads them; unknown values stay unknown)."""
        response = super().RegisterResourceOutputs(request)  # type: ignore[no-untyped-call]
        outputs = rpc.deserialize_properties(request.outputs, keep_unknowns=True)
        with self._lock:
            record = self.records.get(request.urn)
            if record is not None and not record.custom:
                record.state = dict(outputs)
        return response
