"""How pulumi-gcp (a Terraform provider behind pulumi-terraform-bridge) plans a change.

Follows pulumi-terraform-bridge v3.136.0 (commit 59de6c661d, the release whose source the
shared reference facts were read from; no source here states which bridge release pulumi-gcp
10.2.0 was built with). Given what a resource type replaces on (`TypeFacts`), `diff_inputs`
compares a resource's old and new inputs the way the bridge reports it to the engine:

- `detailed_diff` keys are full property paths (`nodeConfig.guestAccelerators[0].type`), each
  with a kind (ADD, DELETE, UPDATE) that carries `_REPLACE` when the change forces a new
  resource;
- `replaces` holds top-level property names only: every key is cut at its first `.` or `[`
  (`pkg/tfbridge/provider.go:1236-1257`); a replacement that Terraform's CustomizeDiff forces
  on a field that is not ForceNew is reported as `__meta` (`detailed_diff.go:800-812`);
- `delete_before_replace` follows the bridge's rule (`provider.go:1275`): a replacement of a
  resource whose auto-named input the program set (or with an explicit override) deletes the
  old resource first;
- ForceNew blocks replace only when they appear, disappear or change their element count; a
  ForceNew attribute (a scalar, or a list, set or map of scalars) replaces on any change; an
  Optional+Computed ForceNew field dropped from the program keeps its state value (no diff);
  an unknown value where a change could force a replacement plans one
  (`detailed_diff.go` `makeShortCircuitDiff`).

`apply_check_defaults` adds the schema defaults the bridge's `Check` adds (truthy ones only,
at every object level the inputs have), so policies see them as they do under the engine.

The same code serves two tables: the engine test bed's stand-in provider reads the facts
gathered from the Terraform, pulumi-gcp and bridge sources (shared test data), and preflight
carries its own for the properties this program sets (`pulumi_offline.gcp_force_new`).

It cannot prove what Terraform's own plan decides beyond those facts: a CustomizeDiff rule the
table does not list, a diff suppression other than "a name and a self link of the same
object", or whether an in-place update then succeeds at the Google API.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

UNKNOWN_VALUES = frozenset({"04da6b54-80e4-46f7-96ec-b56ff0331ba9", "[unknown]"})
"""An unknown value as the engine sends it, and as preflight's records print it."""
META = "__meta"
DEFAULTS_KEY = "__defaults"


class Kind(enum.Enum):
    """A property change as the provider protocol's `PropertyDiff.Kind` names it."""

    ADD = "ADD"
    ADD_REPLACE = "ADD_REPLACE"
    DELETE = "DELETE"
    DELETE_REPLACE = "DELETE_REPLACE"
    UPDATE = "UPDATE"
    UPDATE_REPLACE = "UPDATE_REPLACE"

    @property
    def replaces(self) -> bool:
        """The change forces a new resource."""
        return self.value.endswith("_REPLACE")


@dataclass(frozen=True)
class CustomizeRule:
    """A replacement Terraform's CustomizeDiff forces on a field that is not ForceNew."""

    path: str
    when: Callable[[Any, Any], bool]
    """(old, new) -> does the change force a new resource."""
    source: str


@dataclass(frozen=True)
class TypeFacts:
    """What one resource type replaces on, and what its `Check` adds."""

    resource_type: str
    force_new: frozenset[str]
    """Paths (`a.b[].c`) whose change replaces; blocks are listed in `blocks` too."""
    blocks: frozenset[str] = frozenset()
    """ForceNew blocks: replace when added, removed or when their element count changes."""
    optional_computed: frozenset[str] = frozenset()
    """ForceNew fields the API fills in: dropping them from the program changes nothing."""
    diff_suppress: frozenset[str] = frozenset()
    """ForceNew fields where a name and a self link of the same object are no change."""
    customize: tuple[CustomizeRule, ...] = ()
    delete_before_replace: bool = False
    """The bridge's rule for this type when the program sets `autoname` (or always, when
    `autoname` is None and this is True: an explicit override)."""
    autoname: str | None = "name"
    """The auto-named input whose presence in the program makes replacements delete first."""
    defaults: Mapping[str, Any] = field(default_factory=dict)
    """Check defaults by path (`management.autoRepair`, `nodePools[].upgradeSettings.strategy`)."""
    falsy_defaults: Mapping[str, Any] = field(default_factory=dict)
    """Schema defaults Check no longer adds (false, 0, ""), which Terraform still plans with:
    an unset `spot` is `false`, so setting `spot: false` changes nothing and dropping
    `spot: true` is a change to `false`."""


@dataclass(frozen=True)
class InputDiff:
    """What the provider reports for one resource."""

    detailed: dict[str, Kind]
    replaces: list[str]
    delete_before_replace: bool

    @property
    def changed(self) -> bool:
        """Any difference at all (an update or a replacement)."""
        return bool(self.detailed)

    @property
    def diffs(self) -> list[str]:
        """Top-level properties that changed (the protocol's `diffs`)."""
        return sorted({top_level(path) for path in self.detailed if path != META})

    def replacing_paths(self) -> list[str]:
        """Full paths of the changes that force a new resource."""
        return sorted(path for path, kind in self.detailed.items() if kind.replaces)


def top_level(path: str) -> str:
    """`nodeConfig.guestAccelerators[0].type` -> `nodeConfig` (the bridge's `replaces` key)."""
    return re.split(r"[.\[]", path, maxsplit=1)[0]


def normalized(path: str) -> str:
    """`a[0].b` -> `a[].b`: list indices dropped, as the facts table spells paths."""
    return re.sub(r"\[\d+\]", "[]", path)


def is_unknown(value: Any) -> bool:
    """The value is an unknown placeholder (a preview's computed value)."""
    return isinstance(value, str) and value in UNKNOWN_VALUES


def _contains_unknown(value: Any) -> bool:
    if isinstance(value, Mapping):
        return any(_contains_unknown(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_contains_unknown(v) for v in value)
    return is_unknown(value)


class _Walker:
    def __init__(self, facts: TypeFacts) -> None:
        self.facts = facts
        self.attributes = facts.force_new - facts.blocks
        self.entries: dict[str, Kind] = {}
        self.meta = False

    # -- what a path means ----------------------------------------------------------------

    def _ancestors(self, norm: str) -> Iterator[str]:
        for match in re.finditer(r"[.\[]", norm):
            yield norm[: match.start()]

    def forces(self, norm: str) -> bool:
        """A change of this value (as a whole) replaces."""
        return norm in self.facts.force_new or any(
            a in self.attributes for a in self._ancestors(norm)
        )

    def holds_force_new(self, norm: str) -> bool:
        """Something inside this value replaces when it changes."""
        return any(p.startswith((norm + ".", norm + "[]")) for p in self.facts.force_new)

    def record(self, path: str, kind: Kind, replace: bool) -> None:
        if replace:
            kind = Kind[f"{kind.value}_REPLACE"]
        self.entries[path] = kind

    # -- the walk ---------------------------------------------------------------------------

    def walk(self, path: str, old: Any, new: Any) -> None:  # noqa: C901 - the bridge's diff rules, one per case
        norm = normalized(path)
        if norm in self.facts.falsy_defaults:
            falsy = self.facts.falsy_defaults[norm]
            old = falsy if old is None else old
            new = falsy if new is None else new
        inside_attribute = norm in self.attributes or any(
            a in self.attributes for a in self._ancestors(norm)
        )
        if is_unknown(new) or (inside_attribute and _contains_unknown(new)):
            if old is not None and new == old:
                return
            # An unknown can be anything: it replaces wherever a change could.
            replace = self.forces(norm) or self.holds_force_new(norm)
            self.record(path, Kind.UPDATE if old is not None else Kind.ADD, replace)
            return
        if old == new:
            return
        if new is None:
            if norm in self.facts.optional_computed:
                return  # the API's value stays in state: no diff
            replace = self.forces(norm) or self.holds_force_new(norm)
            self.record(path, Kind.DELETE, replace)
            return
        if old is None:
            replace = self.forces(norm) or (self.holds_force_new(norm) and _has_value(new))
            self.record(path, Kind.ADD, replace)
            return
        if inside_attribute:
            if norm in self.facts.diff_suppress and _same_object(old, new):
                return
            if (
                isinstance(old, list | tuple)
                and isinstance(new, list | tuple)
                and len(old) == len(new)
            ):
                # The bridge names the elements that changed (`values[0]`, as the real provider's
                # plan of a reservation move does), not the whole list.
                for index, (before, after) in enumerate(zip(old, new, strict=True)):
                    if before != after:
                        self.record(f"{path}[{index}]", Kind.UPDATE, True)
                return
            self.record(path, Kind.UPDATE, True)
            return
        if isinstance(old, Mapping) and isinstance(new, Mapping):
            for key in sorted(set(old) | set(new)):
                if key.startswith("__"):
                    continue
                self.walk(f"{path}.{key}" if path else key, old.get(key), new.get(key))
            return
        if isinstance(old, list | tuple) and isinstance(new, list | tuple):
            if len(old) != len(new) and norm in self.facts.blocks:
                self.record(path, Kind.UPDATE, True)
                return
            for index in range(max(len(old), len(new))):
                self.walk(
                    f"{path}[{index}]",
                    old[index] if index < len(old) else None,
                    new[index] if index < len(new) else None,
                )
            return
        if norm in self.facts.diff_suppress and _same_object(old, new):
            return
        self.record(path, Kind.UPDATE, norm in self.facts.force_new)


def _has_value(value: Any) -> bool:
    if isinstance(value, Mapping):
        return any(_has_value(v) for k, v in value.items() if not str(k).startswith("__"))
    if isinstance(value, list | tuple):
        return bool(value)
    return value is not None


def _same_object(old: Any, new: Any) -> bool:
    """A name and a self link (or a relative path) of the same GCP object."""
    if not (isinstance(old, str) and isinstance(new, str)):
        return False

    def relative(value: str) -> str:
        index = value.find("projects/")
        return value[index:] if index >= 0 else value

    return (
        relative(old) == relative(new)
        or old.rsplit("/", 1)[-1] == new
        or new.rsplit("/", 1)[-1] == old
    )


def _get(value: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def diff_inputs(
    facts: TypeFacts,
    olds: Mapping[str, Any],
    news: Mapping[str, Any],
    ignore_changes: Sequence[str] = (),
) -> InputDiff:
    """The provider's answer to `Diff(olds, news)` for one resource of `facts.resource_type`."""
    walker = _Walker(facts)
    for key in sorted(set(olds) | set(news)):
        if key.startswith("__"):
            continue
        walker.walk(key, olds.get(key), news.get(key))
    for rule in facts.customize:
        old, new = _get(olds, rule.path), _get(news, rule.path)
        if old is None or new is None or is_unknown(new) or old == new:
            continue
        if rule.when(old, new):
            walker.entries[META] = Kind.UPDATE_REPLACE
    ignored = [normalized(p) for p in ignore_changes]
    detailed = {
        path: kind
        for path, kind in walker.entries.items()
        if not any(
            normalized(path) == p or normalized(path).startswith((p + ".", p + "["))
            for p in ignored
        )
    }
    replaces = sorted({top_level(p) for p, k in detailed.items() if k.replaces})
    return InputDiff(
        detailed=detailed,
        replaces=replaces,
        delete_before_replace=bool(replaces) and _deletes_first(facts, news),
    )


def _deletes_first(facts: TypeFacts, news: Mapping[str, Any]) -> bool:
    if not facts.delete_before_replace:
        return False
    if facts.autoname is None:
        return True  # an explicit DeleteBeforeReplace in the provider's resource info
    filled = news.get(DEFAULTS_KEY) or []
    # The bridge does not look at whether the name changed: a name the program chose is
    # enough (pulumi-terraform-bridge pkg/tfbridge/schema.go:195-246).
    return news.get(facts.autoname) is not None and facts.autoname not in filled


def true_to_false(old: Any, new: Any) -> bool:
    """`customdiff.ForceNewIfChange(isBeenEnabled)`: turning the feature off replaces."""
    return old is True and new is False


def apply_check_defaults(
    facts: TypeFacts, inputs: Mapping[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    """Inputs with the Check defaults filled where the program left them out, and the
    top-level keys filled (the bridge lists those in `__defaults`)."""
    result = _copy(inputs)
    filled: list[str] = []
    for path, default in sorted(facts.defaults.items()):
        if default is False or default == 0 or default == "":
            continue  # falsy defaults are not synthesized (bridge #3398)
        if _fill(result, path.split("."), default) and "." not in path and "[" not in path:
            filled.append(path)
    return result, filled


def _copy(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_copy(v) for v in value]
    return value


def _fill(target: Any, parts: list[str], default: Any) -> bool:
    """Set the default under every present parent (`a[].b` visits each element of `a`)."""
    head, rest = parts[0], parts[1:]
    is_list = head.endswith("[]")
    key = head[:-2] if is_list else head
    if not isinstance(target, dict):
        return False
    if not rest:
        if key in target and target[key] is not None:
            return False
        target[key] = default
        return True
    child = target.get(key)
    if child is None or is_unknown(child):
        return False  # defaults apply only where the parent object is present
    if is_list:
        if not isinstance(child, list):
            return False
        results = [_fill(element, rest, default) for element in child]  # fill every element
        return any(results)
    return _fill(child, rest, default)
