"""What a change to a stack recreates, before any engine runs.

Given the stack as it was (its previous stack file, run again here, or the `--json` record of
an earlier preflight) and as it is now, `compare` diffs every resource's recorded inputs the
way its provider plans them (`bridge_diff`, with `gcp_force_new`'s facts for pulumi-gcp and
`kubernetes_force_new`'s for pulumi-kubernetes), then follows the engine's cascade: a resource
that is recreated hands its dependents unknown values for the properties that name it, and
those whose provider replaces on such a property are recreated too (pulumi/pulumi
`step_generator.go` `calculateDependentReplacements`). The engine does this for resources
deleted first; for one created first its dependents see the new resource's preview outputs,
unknown where the cloud computes them. Preflight cannot tell which of those a dependent reads,
so it treats both alike, which may over-report a dependent that reads only an input of the
recreated resource. Providers and Helm releases decide for themselves; they are listed when
their inputs change.

The config keys behind it come from `planning.replacements`, with what a user loses, and a
protected stack's change the program would refuse is reported with the program's message.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from planning.cluster import NODE_RECREATING_FIELDS, upgrade_notes
from planning.replacements import Change, changes, refusals
from planning.resource_types import NODE_POOL
from planning.versions import parse_gke_version
from preflight.mock_run import ProgramRun
from program.guard import REPLACEMENT_EXPORT, versions_of
from pulumi_offline.bridge_diff import UNKNOWN_VALUES, InputDiff, diff_inputs, top_level
from pulumi_offline.gcp_force_new import FACTS
from pulumi_offline.json_files import first_problem, read_bounded
from pulumi_offline.kubernetes_force_new import kubernetes_facts
from pulumi_offline.stackfiles import StackFileError

MAX_REPORT_BYTES = 64 << 20
"""A report of the b200 stack is about 0.4 MiB: room for far larger stacks."""
UNKNOWN = next(iter(sorted(UNKNOWN_VALUES)))


@dataclass(frozen=True)
class Resource:
    """A resource as a plan sees it: its checked inputs and what they depend on."""

    urn: str
    type: str
    name: str
    custom: bool
    protect: bool
    inputs: Mapping[str, Any]
    property_dependencies: Mapping[str, list[str]]
    ignore_changes: list[str]
    delete_before_replace: bool | None


@dataclass(frozen=True)
class Snapshot:
    """Every resource of one run of the program, and its replacement-relevant config."""

    stack: str
    mode: str
    """"preview" (computed values unknown) or "known"."""
    resources: dict[str, Resource]
    replacement_config: Mapping[str, Any]


def snapshot(run: ProgramRun, mode: str) -> Snapshot:
    """A preflight run as a snapshot."""
    resources = {
        r.urn: Resource(
            urn=r.urn,
            type=r.type,
            name=r.name,
            custom=r.custom,
            protect=r.protect,
            inputs=r.inputs,
            property_dependencies=r.property_dependencies,
            ignore_changes=r.ignore_changes,
            delete_before_replace=r.delete_before_replace,
        )
        for r in run.records
    }
    export = run.exports.get(REPLACEMENT_EXPORT)
    config = export.value if export is not None and isinstance(export.value, dict) else {}
    return Snapshot(run.stack, mode, resources, config)


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, populate_by_name=True)


class _ReportedResource(_Strict):
    """One resource of a --json report, as `Resource` needs it."""

    model_config = ConfigDict(extra="ignore")
    urn: str
    type: str
    name: str
    custom: bool = True
    protect: bool | None = None
    inputs: dict[str, Any] | None = None
    property_dependencies: dict[str, list[str]] | None = Field(None, alias="propertyDependencies")
    ignore_changes: list[str] | None = Field(None, alias="ignoreChanges")
    delete_before_replace: bool | None = Field(None, alias="deleteBeforeReplace")


class _ReportedConfig(_Strict):
    """The values the guard compares (program.guard.replacement_values), each of its type;
    a key an older or newer program exported is kept as it is."""

    model_config = ConfigDict(extra="allow")
    project: str | None = Field(None, alias="gcp:project")
    region: str | None = Field(None, alias="gcp:region")
    zone: str | None = None
    name: str | None = None
    protect: bool | None = None
    gpu_type: str | None = Field(None, alias="gpu.type")
    gpu_capacity: str | None = Field(None, alias="gpu.capacity")
    gpu_reservation: str | None = Field(None, alias="gpu.reservation")
    gpu_reservation_project: str | None = Field(None, alias="gpu.reservationProject")
    gpu_placement: str | None = Field(None, alias="gpu.placement")
    gpu_driver_version: str | None = Field(None, alias="gpu.driverVersion")
    gpu_rdma_networks: bool | None = Field(None, alias="gpu.rdmaNetworks")
    primary_cidr: str | None = Field(None, alias="network.primaryCidr")
    gvnic_cidr: str | None = Field(None, alias="network.gvnicCidr")
    rdma_cidrs: list[str] | None = Field(None, alias="network.rdmaCidrs")
    rdma: str | None = Field(None, alias="network.rdma")
    psa_cidr: str | None = Field(None, alias="network.psaCidr")
    lustre_throughput: int | None = Field(None, alias="lustre.throughput")
    lustre_filesystem: str | None = Field(None, alias="lustre.filesystem")
    lustre_capacity: int | None = Field(None, alias="lustre.capacityGib")
    lustre_created: int | None = Field(None, alias="lustre.createdCapacityGib")
    system_shape: str | None = Field(None, alias="cluster.systemPool.shape")
    system_consent: str | None = Field(None, alias="cluster.systemPool.recreateNodesAs")
    release_channel: str | None = Field(None, alias="cluster.releaseChannel")
    min_version: str | None = Field(None, alias="cluster.minVersion")
    system_version: str | None = Field(None, alias="cluster.systemPool.version")
    gpu_version: str | None = Field(None, alias="gpu.version")

    @field_validator("min_version", "system_version", "gpu_version")
    @classmethod
    def _version(cls, value: str | None) -> str | None:
        if value is not None:
            parse_gke_version(value)  # its ValueError names the value and the form
        return value


class _ReportedOutputs(_Strict):
    model_config = ConfigDict(extra="ignore")
    replacement_config: _ReportedConfig | None = Field(None, alias=REPLACEMENT_EXPORT)


class _Report(_Strict):
    """What `load_snapshot` reads of a `python -m preflight --json FILE` report."""

    model_config = ConfigDict(extra="ignore")
    stack: str
    mode: str = "preview"
    resources: list[_ReportedResource]
    outputs: _ReportedOutputs | None = None


def load_snapshot(path: Path) -> Snapshot:
    """The snapshot an earlier `python -m preflight --json FILE` recorded (StackFileError in
    one line, naming the key, when a value has the wrong shape)."""
    try:
        text = read_bounded(path, MAX_REPORT_BYTES)
        json.loads(text)  # JSON's own message (line and column) before the model's
        doc = _Report.model_validate_json(text)
    except ValidationError as error:
        raise StackFileError(
            f"{path}: {first_problem(error)}: pass a report written by python -m preflight"
            " --json, or the earlier stack file"
        ) from None
    except (OSError, ValueError, RecursionError) as err:
        raise StackFileError(f"{path}: not a preflight --json report ({err})") from None
    config = doc.outputs.replacement_config if doc.outputs else None
    raw = config.model_dump(by_alias=True, exclude_unset=True) if config else {}
    resources = {
        r.urn: Resource(
            urn=r.urn,
            type=r.type,
            name=r.name,
            custom=r.custom,
            protect=bool(r.protect),
            inputs=r.inputs or {},
            property_dependencies=r.property_dependencies or {},
            ignore_changes=list(r.ignore_changes or []),
            delete_before_replace=r.delete_before_replace,
        )
        for r in doc.resources
    }
    return Snapshot(doc.stack, doc.mode, resources, raw)


@dataclass(frozen=True)
class Planned:
    """One resource the change touches."""

    resource: Resource
    op: str
    """replace, update, create, delete, or change (a provider or a Helm release, which
    decide themselves what a change of their inputs means)."""
    why: list[str] = field(default_factory=list)
    delete_before_replace: bool = False
    refused_by_protect: bool = False
    """Pulumi refuses to replace a resource protected before and after (this stack's protect)."""
    note: str = ""
    """What the plan does not show (e.g. GKE recreating a pool's nodes for an update)."""


@dataclass(frozen=True)
class ChangeReport:
    """What a change recreates and why."""

    previous: str
    keys: list[Change]
    planned: list[Planned]
    refusals: list[str]
    notes: list[str] = field(default_factory=list)
    """What the change leaves to a next step or costs beyond the plan (an upgrade's pools)."""

    def of(self, op: str) -> list[Planned]:
        """The resources with one kind of step, by name."""
        return sorted(
            (p for p in self.planned if p.op == op),
            key=lambda p: (p.resource.type, p.resource.name),
        )


def _value_at(inputs: Mapping[str, Any], path: str) -> Any:
    value: Any = inputs
    for part in path.replace("[", ".[").split("."):
        if not part:
            continue
        if part.startswith("["):
            index = int(part[1:-1])
            value = value[index] if isinstance(value, list) and index < len(value) else None
        else:
            value = value.get(part) if isinstance(value, Mapping) else None
    return value


def _show(value: Any) -> str:
    if value is None:
        return "(unset)"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, str) and value in UNKNOWN_VALUES:
        return "(known after the change)"
    text = json.dumps(value) if not isinstance(value, str) else value
    return text if len(text) <= 60 else "..." + text[-57:]  # the tail names the object


def _reasons(old: Resource, new_inputs: Mapping[str, Any], diff: InputDiff) -> list[str]:
    reasons = []
    for path in diff.replacing_paths():
        if path == "__meta":
            continue
        before, after = _value_at(old.inputs, path), _value_at(new_inputs, path)
        reasons.append(f"{path}: {_show(before)} -> {_show(after)}")
    if "__meta" in diff.detailed:
        changed = [p for p in diff.detailed if p != "__meta"]
        reasons.extend(
            f"{p}: {_show(_value_at(old.inputs, p))} -> {_show(_value_at(new_inputs, p))}"
            " (a range that shrinks or moves)"
            for p in changed
        )
    return reasons


def _diff(resource: Resource, old: Resource, inputs: Mapping[str, Any]) -> InputDiff | None:
    facts = FACTS.get(resource.type) or kubernetes_facts(resource.type)
    if facts is None:
        return None
    return diff_inputs(facts, old.inputs, inputs, resource.ignore_changes)


def compare(previous: Snapshot, current: Snapshot, previous_name: str) -> ChangeReport:
    """Every resource the change from `previous` to `current` creates, replaces, updates or
    deletes, with the reasons, and the config keys behind the replacements."""
    if previous.stack != current.stack:
        raise StackFileError(
            f"{previous_name} is stack {previous.stack!r}, this is {current.stack!r}: compare a"
            " stack with its own earlier configuration"
        )
    planned: dict[str, Planned] = {}
    old, new = previous.resources, current.resources
    for urn in sorted(set(new) - set(old)):
        if new[urn].custom:
            planned[urn] = Planned(new[urn], "create")
    for urn in sorted(set(old) - set(new)):
        if old[urn].custom:
            planned[urn] = Planned(old[urn], "delete")
    for urn in sorted(set(old) & set(new)):
        resource = new[urn]
        if not resource.custom:
            continue
        diff = _diff(resource, old[urn], resource.inputs)
        if diff is None:
            if dict(old[urn].inputs) != dict(resource.inputs):
                changed = _changed_keys(old[urn].inputs, resource.inputs)
                planned[urn] = Planned(resource, "change", [", ".join(changed)])
            continue
        if diff.replaces:
            planned[urn] = _replacement(
                resource, old[urn], diff, _reasons(old[urn], resource.inputs, diff)
            )
        elif diff.changed:
            planned[urn] = Planned(
                resource, "update", diff.diffs, note=_node_note(old[urn], resource)
            )
    _cascade(planned, old, new)
    report_keys = list(changes(previous.replacement_config, current.replacement_config))
    protected = bool(current.replacement_config.get("protect"))
    stops = refusals(previous.replacement_config, current.replacement_config, protected)
    notes = (
        upgrade_notes(
            versions_of(previous.replacement_config), versions_of(current.replacement_config)
        )
        if "cluster.minVersion" in previous.replacement_config
        else []
    )
    return ChangeReport(previous_name, report_keys, list(planned.values()), stops, notes)


def _node_note(old: Resource, new: Resource) -> str:
    """For a node pool whose update GKE carries out by recreating its nodes, what it costs."""
    if new.type != NODE_POOL:
        return ""
    before, after = old.inputs.get("nodeConfig") or {}, new.inputs.get("nodeConfig") or {}
    fields = [f for f in NODE_RECREATING_FIELDS if before.get(f) != after.get(f)]
    if not fields:
        return ""
    return (
        f"GKE recreates every node of the pool for {', '.join(fields)}, and what runs on them"
        " (the system pool: the Ray head and every Ray job)"
    )


def _replacement(resource: Resource, old: Resource, diff: InputDiff, why: list[str]) -> Planned:
    return Planned(
        resource,
        "replace",
        why,
        delete_before_replace=diff.delete_before_replace or bool(resource.delete_before_replace),
        refused_by_protect=old.protect and resource.protect,
    )


def _changed_keys(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    return sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))


def _cascade(
    planned: dict[str, Planned], old: Mapping[str, Resource], new: Mapping[str, Resource]
) -> None:
    """Dependents of recreated resources: unknown where they name them, re-diffed."""
    queue = [urn for urn, p in planned.items() if p.op == "replace"]
    while queue:
        condemned = queue.pop(0)
        gone = new[condemned]
        for urn, resource in sorted(new.items()):
            if urn == condemned or urn not in old or not resource.custom:
                continue
            keys = [
                k
                for k, deps in resource.property_dependencies.items()
                if condemned in deps and k in resource.inputs
            ]
            if not keys:
                continue
            current = planned.get(urn)
            if current is not None and current.op == "replace":
                continue
            inputs = {**resource.inputs, **dict.fromkeys(keys, UNKNOWN)}
            diff = _diff(resource, old[urn], inputs)
            because = f"{gone.name} is recreated and {', '.join(keys)} names it"
            if diff is None:
                continue  # a provider or a Helm release: it decides with the new values
            if diff.replaces:
                replacing = sorted({top_level(p) for p in diff.replacing_paths()})
                planned[urn] = _replacement(
                    resource, old[urn], diff, [f"{because} ({', '.join(replacing)} is ForceNew)"]
                )
                queue.append(urn)
            # Otherwise the engine diffs it with the real new values: the direct pass did.


def _line(p: Planned) -> str:
    from preflight.report import display_type

    extra = ""
    if p.op == "replace":
        extra = " (deleted first)" if p.delete_before_replace else " (created first)"
    if p.refused_by_protect:
        extra += " [protected: Pulumi refuses until protect is lifted]"
    why = f": {'; '.join(p.why)}" if p.why else ""
    note = f" [{p.note}]" if p.note else ""
    return f"  {display_type(p.resource.type)} {p.resource.name}{extra}{why}{note}"


def render(report: ChangeReport) -> str:
    """The human-readable block `python -m preflight --previous` prints."""
    lines = [f"Changes from {report.previous}:"]
    if not report.keys:
        lines.append("  no config change that recreates anything")
    for change in report.keys:
        lines.append(
            f"  {change.row.key}: {_show(change.old)} -> {_show(change.new)} recreates"
            f" {', '.join(change.row.recreates)}; a user loses {change.row.loses}"
        )
    sections: Iterable[tuple[str, str]] = (
        ("replace", "Recreated"),
        ("update", "Updated in place"),
        ("create", "Created"),
        ("delete", "Deleted"),
        ("change", "Providers and Helm releases with new inputs"),
    )
    for op, title in sections:
        found = report.of(op)
        if found:
            lines.append(f"{title} ({len(found)}):")
            lines.extend(_line(p) for p in found)
    lines.extend(f"Note: {note}" for note in report.notes)
    for refusal in report.refusals:
        lines.append(f"pulumi preview stops here: {refusal}")
    return "\n".join(lines)


def to_json(report: ChangeReport) -> dict[str, Any]:
    """The `changes` section of the `--json` document."""
    return {
        "previous": report.previous,
        "keys": [
            {
                "key": c.row.key,
                "old": c.old,
                "new": c.new,
                "recreates": list(c.row.recreates),
                "loses": c.row.loses,
            }
            for c in report.keys
        ],
        "resources": [
            {
                "urn": p.resource.urn,
                "type": p.resource.type,
                "name": p.resource.name,
                "op": p.op,
                "why": p.why,
                "deleteBeforeReplace": p.delete_before_replace,
                "refusedByProtect": p.refused_by_protect,
                **({"note": p.note} if p.note else {}),
            }
            for p in sorted(report.planned, key=lambda p: p.resource.urn)
        ],
        "refusals": report.refusals,
        "notes": report.notes,
    }


def replaced_names(report: ChangeReport) -> set[str]:
    """Logical names of the resources a change recreates (for tests and scripts)."""
    return {p.resource.name for p in report.planned if p.op == "replace"}
