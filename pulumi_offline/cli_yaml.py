"""Read a stack or project file the way the Pulumi CLI reads it, within fixed bounds.

Follows gopkg.in/yaml.v3 v3.0.1, the YAML library of the Pulumi CLI v3.276.0 the test bed
builds (its go.mod), which decodes these files (sdk/go/common/workspace, encoding.YAML) into
plain Go values. This reader follows yaml.v3 where the two disagree with PyYAML's defaults, so
preflight sees what the engine would hand the program:

- plain scalars resolve as yaml.v3 resolves them (`yes`, `on`, `no` stay strings; `0x1F`,
  `1_000` and `010` are numbers; `2026-01-03` is a timestamp);
- a mapping key given twice is refused (`mapping key "x" already defined at line N`), as is
  an alias bomb (`document contains excessive aliasing`, with yaml.v3's own budget), an alias
  to an anchor that contains it, and bytes that are not UTF-8;
- merge keys (`<<`) merge, explicit keys winning.

It never builds a Python object from a tag and never recurses, so any input is read in time
and memory bounded by MAX_FILE_BYTES, MAX_DEPTH and MAX_NODES, which are far above any real
stack file and far below what would take seconds. Where preflight stops earlier than the CLI
(a file over 256 KiB, nesting past 64 levels, more than one document), the message says so.

The text is tokenised by PyYAML's parser, not yaml.v3's: where the two parsers disagree on
syntax itself (rather than on what a scalar means), it cannot prove the CLI reads the file the
same way.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Any, Final

import yaml

from pulumi_offline.yaml_scalars import RESOLVABLE_TAGS, GoTime, go_float, go_timestamp, resolve

__all__ = [
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_NODES",
    "GoTime",
    "YamlRefused",
    "go_float",
    "go_timestamp",
    "load",
    "load_text",
    "resolve",
]

MAX_FILE_BYTES: Final = 256 << 10
"""Preflight reads at most 256 KiB (about a third of a second here): the committed stack files
are under 1 KiB, and the engine hands the whole configuration to the program in one
environment variable anyway."""
MAX_DEPTH: Final = 64
"""Deepest nesting read. The deepest setting of this project is 4 levels down; yaml.v3 stops at
10000 ("exceeded max depth"), and Python's JSON reader in the program far earlier."""
MAX_NODES: Final = 50_000
"""Values decoded, aliases expanded. A stack file of this project holds a few hundred."""

# gopkg.in/yaml.v3 decode.go: the alias budget of `document contains excessive aliasing`.
_ALIAS_RATIO_LOW: Final = 400_000
_ALIAS_RATIO_HIGH: Final = 4_000_000

_TAG_PREFIX: Final = "tag:yaml.org,2002:"


class YamlRefused(ValueError):  # noqa: N818 - a refusal, reported as one line
    """The file cannot be read as the CLI reads it; `line` is 1-based when known."""

    def __init__(self, problem: str, line: int | None = None) -> None:
        super().__init__(problem if line is None else f"line {line}: {problem}")
        self.problem = problem
        self.line = line


@dataclass
class _Frame:
    """A mapping or sequence being built."""

    kind: str  # "map" | "seq"
    value: Any
    line: int
    anchor: str | None
    size: int = 1
    """yaml.v3's decode operations for this node, aliases expanded."""
    key: Any = None
    key_line: int = 0
    has_key: bool = False
    merge: bool = False
    """The pending value is a merge (`<<`)."""
    merges: list[dict[str, Any]] = field(default_factory=list)
    seen: dict[tuple[str, str], int] = field(default_factory=dict)
    """Keys of this mapping as yaml.v3 compares them (kind, text) -> line."""


def decode(data: bytes) -> str:
    """The file's text: a UTF-8 byte order mark is dropped (as the CLI does), UTF-16 with a
    byte order mark is read as yaml.v3 reads it, any other encoding is refused."""
    if len(data) > MAX_FILE_BYTES:
        raise YamlRefused(
            f"is {len(data) >> 10} KiB or more; preflight reads stack files of at most"
            f" {MAX_FILE_BYTES >> 10} KiB (this project's are under 1 KiB)"
        )
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    elif data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            raise YamlRefused("is not valid UTF-16 (yaml: invalid UTF-16)") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        kind = {
            "invalid start byte": "invalid leading UTF-8 octet",
            "invalid continuation byte": "invalid trailing UTF-8 octet",
            "unexpected end of data": "incomplete UTF-8 octet sequence",
        }.get(err.reason, "invalid UTF-8")
        raise YamlRefused(
            f"byte 0x{data[err.start]:02x} is not UTF-8; the Pulumi CLI refuses the file too"
            f" (yaml: {kind}). Save the file as UTF-8",
            line,
        ) from None


def load(data: bytes) -> Any:
    """Decode `data` as yaml.v3 decodes it into `any`; raise YamlRefused otherwise."""
    return load_text(decode(data))


def load_text(text: str) -> Any:  # noqa: C901, PLR0915 - yaml.v3's decoding, event by event
    """Decode YAML text (the first and only document) as yaml.v3 decodes it into `any`."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    stack: list[_Frame] = []
    anchors: dict[str, tuple[Any, int, str]] = {}
    """Completed anchors: value, expanded size, kind."""
    open_anchors: set[str] = set()
    counts = [0, 0]  # decode operations, of which by alias expansion
    result: Any = None
    documents = 0
    events = yaml.parse(text, Loader=loader)
    try:
        for event in events:
            if isinstance(event, yaml.DocumentStartEvent):
                documents += 1
                if documents > 1:
                    raise YamlRefused(
                        "a second YAML document starts here; the Pulumi CLI reads only the first"
                        " and ignores the rest, so its settings would do nothing. Keep one"
                        " document",
                        _line(event),
                    )
                continue
            if isinstance(
                event, yaml.StreamStartEvent | yaml.StreamEndEvent | yaml.DocumentEndEvent
            ):
                continue
            line = _line(event)
            if isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
                if len(stack) >= MAX_DEPTH:
                    raise YamlRefused(
                        f"nested more than {MAX_DEPTH} levels deep (this project's settings nest"
                        " 4 levels at most)",
                        line,
                    )
                kind = "map" if isinstance(event, yaml.MappingStartEvent) else "seq"
                if stack and stack[-1].kind == "map" and not stack[-1].has_key:
                    raise YamlRefused("invalid map key: a mapping key must be a scalar", line)
                if event.anchor:
                    open_anchors.add(event.anchor)
                stack.append(_Frame(kind, {} if kind == "map" else [], line, event.anchor))
                _count(counts, 1, 0, line)
                continue
            if isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
                frame = stack.pop()
                value = frame.value
                if frame.kind == "map":
                    for source in frame.merges:
                        for key, merged in source.items():
                            value.setdefault(key, merged)
                if frame.anchor:
                    open_anchors.discard(frame.anchor)
                    anchors[frame.anchor] = (value, frame.size, frame.kind)
                result = _place(stack, value, frame.size, frame.kind, None, line, result)
                continue
            if isinstance(event, yaml.AliasEvent):
                name = event.anchor
                if name in open_anchors:
                    raise YamlRefused(f"anchor '{name}' value contains itself", line)
                if name not in anchors:
                    raise YamlRefused(f"unknown anchor '{name}' referenced", line)
                value, size, kind = anchors[name]
                _count(counts, 1 + size, size, line)
                result = _place(stack, value, 1 + size, kind, ("alias", name), line, result)
                continue
            if isinstance(event, yaml.ScalarEvent):
                _count(counts, 1, 0, line)
                value = _scalar(event, line)
                if event.anchor:
                    anchors[event.anchor] = (value, 1, "scalar")
                style = event.style or ""
                ident = ("scalar", event.value)
                merge = style == "" and event.value == "<<" and event.tag in (None, "!", "")
                result = _place(stack, value, 1, "scalar", ident, line, result, merge=merge)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        if "nesting depth" in problem:  # libyaml's own limit, met while scanning ahead
            raise YamlRefused(
                f"nested more than {MAX_DEPTH} levels deep (this project's settings nest 4"
                " levels at most)",
                mark.line + 1 if mark is not None else None,
            ) from None
        raise YamlRefused(
            f"is not valid YAML: {problem}", mark.line + 1 if mark is not None else None
        ) from None
    return result


def _line(event: yaml.Event) -> int:
    mark = event.start_mark
    return mark.line + 1 if mark is not None else 0


def _count(counts: list[int], decoded: int, aliased: int, line: int) -> None:
    """yaml.v3's budget: past 100 aliased decodes and 1000 decodes in all, the share of
    aliased decodes may not exceed 99% (falling to 10% for multi-megabyte documents)."""
    counts[0] += decoded
    counts[1] += aliased
    total, aliases = counts
    if aliases > 100 and total > 1000 and aliases / total > _allowed_alias_ratio(total):
        raise YamlRefused(
            "document contains excessive aliasing (the Pulumi CLI refuses it too: an alias"
            " bomb would expand it without end)",
            line,
        )
    if total > MAX_NODES:
        raise YamlRefused(
            f"holds more than {MAX_NODES} values (aliases expanded); this project's stack"
            " files hold a few hundred",
            line,
        )


def _allowed_alias_ratio(total: int) -> float:
    if total <= _ALIAS_RATIO_LOW:
        return 0.99
    if total >= _ALIAS_RATIO_HIGH:
        return 0.10
    return 0.99 - 0.89 * (total - _ALIAS_RATIO_LOW) / (_ALIAS_RATIO_HIGH - _ALIAS_RATIO_LOW)


def _place(
    stack: list[_Frame],
    value: Any,
    size: int,
    kind: str,
    ident: tuple[str, str] | None,
    line: int,
    result: Any,
    *,
    merge: bool = False,
) -> Any:
    """Put a finished node into its parent (or make it the document's value)."""
    if not stack:
        return value
    parent = stack[-1]
    parent.size += size
    if parent.kind == "seq":
        parent.value.append(value)
        return result
    if not parent.has_key:
        # A key. yaml.v3 compares keys by kind and text before decoding them.
        seen_at = parent.seen.get(ident) if ident is not None else None
        if ident is not None and seen_at is not None:
            raise YamlRefused(
                f"mapping key {_go_quote(ident[1])} already defined at line {seen_at} (the"
                " Pulumi CLI refuses duplicate keys too). Keep one",
                line,
            )
        if ident is not None:
            parent.seen[ident] = line
        if kind != "scalar" and not isinstance(value, str | int | float | bool | GoTime):
            raise YamlRefused("invalid map key: a mapping key must be a scalar", line)
        parent.key, parent.key_line, parent.has_key, parent.merge = value, line, True, merge
        return result
    parent.has_key = False
    if parent.merge:
        sources = value if isinstance(value, list) and kind == "seq" else [value]
        if not all(isinstance(s, dict) for s in sources) or kind == "scalar":
            raise YamlRefused(
                "map merge requires map or sequence of maps as the value", parent.key_line
            )
        parent.merges.extend(sources)
        return result
    key = parent.key
    if not isinstance(key, str):
        raise YamlRefused(
            f"mapping key {_show_key(key)} is not a string (the Pulumi CLI expects only string"
            " keys); quote it",
            parent.key_line,
        )
    parent.value[key] = value
    return result


def _show_key(key: Any) -> str:
    if key is None:
        return "null"
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, GoTime):
        return key.text
    return str(key)


def _go_quote(text: str) -> str:
    """Go's %#v of a string, shortened: how yaml.v3 names a key in its messages."""
    shown = text if len(text) <= 60 else text[:57] + "..."
    return '"' + shown.encode("unicode_escape").decode("ascii").replace('"', '\\"') + '"'


def _short_tag(tag: str | None) -> str:
    if not tag:
        return ""
    if tag.startswith(_TAG_PREFIX):
        return "!!" + tag[len(_TAG_PREFIX) :]
    return tag


def _scalar(event: yaml.ScalarEvent, line: int) -> Any:
    tag = _short_tag(event.tag)
    text = event.value
    style = event.style or ""
    if tag == "!!str" or (tag in ("", "!") and style != ""):
        return text  # quoted, literal and folded scalars are strings (yaml.v3 indicatedString)
    if tag == "!!binary":
        try:
            return base64.b64decode(text, validate=True).decode("utf-8", "replace")
        except (binascii.Error, ValueError):
            raise YamlRefused("!!binary value contains invalid base64 data", line) from None
    if tag not in RESOLVABLE_TAGS:
        return text  # an unknown tag leaves the text as it is; nothing is constructed
    rtag, value = resolve(text, tag)
    if tag in ("", rtag):
        return value
    if tag == "!!float" and rtag == "!!int":
        return float(value)
    raise YamlRefused(f"cannot decode {rtag} `{text[:60]}` as a {tag}", line)
