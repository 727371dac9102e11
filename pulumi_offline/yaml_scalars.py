"""Plain YAML scalars as gopkg.in/yaml.v3 v3.0.1 resolves them (resolve.go), and Go's text of
the values the Pulumi CLI v3.276.0 passes on: ints by Go's base-0 rules (`010` is octal,
`0x1F` hex, `1_000` a thousand), YAML 1.2 booleans only (`yes` and `on` stay strings),
timestamps in yaml.v3's four layouts printed by Go's `Time.String()`, floats as Go's
encoding/json writes them. Nothing here is YAML 1.1 or PyYAML.

It re-implements those Go rules instead of running Go, so it proves only the cases its tests
pin against yaml.v3's and Go's own behaviour.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from typing import Any, Final

RESOLVABLE_TAGS: Final = frozenset(
    {"", "!!str", "!!bool", "!!int", "!!float", "!!null", "!!timestamp"}
)
_MAP: Final[dict[str, tuple[str, Any]]] = {
    **dict.fromkeys(("true", "True", "TRUE"), ("!!bool", True)),
    **dict.fromkeys(("false", "False", "FALSE"), ("!!bool", False)),
    **dict.fromkeys(("", "~", "null", "Null", "NULL"), ("!!null", None)),
    **dict.fromkeys((".nan", ".NaN", ".NAN"), ("!!float", math.nan)),
    **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), ("!!float", math.inf)),
    **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), ("!!float", -math.inf)),
}
_YAML_FLOAT: Final = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_DOT_FLOAT: Final = re.compile(r"\.[0-9]+([eE][-+]?[0-9]+)?")
_GO_INT: Final = re.compile(r"[-+]?(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)")
_STAMP: Final = re.compile(
    r"(?P<y>[0-9]{4})-(?P<m>[0-9]{1,2})-(?P<d>[0-9]{1,2})"
    r"(?:(?P<sep>[Tt ])(?P<H>[0-9]{1,2}):(?P<M>[0-9]{1,2}):(?P<S>[0-9]{1,2})"
    r"(?P<frac>\.[0-9]+)?(?P<zone>Z|[+-][0-9]{2}:[0-9]{2})?)?"
)
_INT64: Final = (-(1 << 63), (1 << 63) - 1)
_UINT64_MAX: Final = (1 << 64) - 1


@dataclass(frozen=True)
class GoTime:
    """A YAML timestamp as the CLI holds it: Go's `time.Time.String()` text is what reaches
    the program (config.unmarshalObject), e.g. `2026-01-03 04:00:00 +0000 UTC`."""

    text: str


def resolve(text: str, tag: str = "") -> tuple[str, Any]:
    """gopkg.in/yaml.v3 resolve(): the tag and value of a plain scalar."""
    hint = _hint(text)
    if hint and tag != "!!str":
        if text in _MAP:
            return _MAP[text]
        if hint == ".":
            if _DOT_FLOAT.fullmatch(text):
                dotted = float(text)
                if not math.isinf(dotted):
                    return "!!float", dotted
        elif hint in "DS":
            if tag in ("", "!!timestamp"):
                stamp = go_timestamp(text)
                if stamp is not None:
                    return "!!timestamp", stamp
            plain = text.replace("_", "")
            number = _go_int(plain)
            if number is not None:
                return "!!int", number
            if _YAML_FLOAT.fullmatch(plain):
                value = float(plain)
                if not math.isinf(value):
                    return "!!float", value
    return "!!str", text


def _hint(text: str) -> str:
    if text == "":
        return "N"
    first = text[0]
    if first in "+-":
        return "S"
    if first.isascii() and first.isdigit():
        return "D"
    if first in "yYnNtTfFoO~":
        return "M"
    if first == ".":
        return "."
    return ""


def _go_int(plain: str) -> int | None:
    """strconv.ParseInt(plain, 0, 64), then ParseUint; None when neither parses."""
    if not _GO_INT.fullmatch(plain):
        return None
    sign = -1 if plain.startswith("-") else 1
    body = plain.lstrip("+-")
    lowered = body.lower()
    if lowered.startswith("0x"):
        number = int(body[2:], 16)
    elif lowered.startswith("0o"):
        number = int(body[2:], 8)
    elif lowered.startswith("0b"):
        number = int(body[2:], 2)
    elif len(body) > 1 and body.startswith("0"):
        number = int(body, 8)  # Go's base-0 rule: a leading 0 is octal
    else:
        number = int(body)
    number *= sign
    if _INT64[0] <= number <= _INT64[1]:
        return number
    if not plain.startswith("+") and 0 <= number <= _UINT64_MAX:
        return number  # ParseUint takes no sign
    return None


def go_timestamp(text: str) -> GoTime | None:
    """A timestamp in one of yaml.v3's layouts, rendered the way the CLI passes it on."""
    match = _STAMP.fullmatch(text)
    if match is None:
        return None
    parts = match.groupdict()
    try:
        if parts["sep"] is None:
            moment = datetime(int(parts["y"]), int(parts["m"]), int(parts["d"]), tzinfo=UTC)
            return GoTime(_go_time_string(moment, 0))
        zone = parts["zone"]
        if parts["sep"] == " " and zone is not None:
            return None  # yaml.v3's space-separated layout has no zone
        offset = 0
        if zone not in (None, "Z"):
            hours, minutes = int(zone[1:3]), int(zone[4:6])
            offset = (1 if zone[0] == "+" else -1) * (hours * 3600 + minutes * 60)
        frac = parts["frac"] or ""
        nanos = int((frac[1:] + "000000000")[:9]) if frac else 0
        moment = datetime(
            int(parts["y"]),
            int(parts["m"]),
            int(parts["d"]),
            int(parts["H"]),
            int(parts["M"]),
            int(parts["S"]),
            tzinfo=timezone(timedelta(seconds=offset)),
        )
        return GoTime(_go_time_string(moment, nanos, offset))
    except ValueError:
        return None  # out of range: yaml.v3 falls through to a number or a string


def _go_time_string(moment: datetime, nanos: int, offset: int = 0) -> str:
    """Go's Time.String(): `2006-01-02 15:04:05.999999999 -0700 MST`. A zero offset is UTC;
    other offsets have no zone name, so Go prints the offset twice (as on a CLI in UTC)."""
    frac = f".{nanos:09d}".rstrip("0") if nanos else ""
    sign = "-" if offset < 0 else "+"
    hours, rest = divmod(abs(offset), 3600)
    numeric = f"{sign}{hours:02d}{rest // 60:02d}"
    name = "UTC" if offset == 0 else numeric
    return f"{moment:%Y-%m-%d %H:%M:%S}{frac} {numeric} {name}"


def go_float(value: float) -> str:
    """Go's encoding/json text of a float64 (how the CLI passes numbers on): `1` for 1.0,
    `1e+21` from 1e21 up, `1e-7` below 1e-6."""
    if value == 0:
        return "0"
    if 1e-6 <= abs(value) < 1e21:
        from decimal import Decimal

        return format(Decimal(repr(value)).normalize(), "f")
    text = repr(value)
    mantissa, _, exponent = text.partition("e")
    sign = exponent[0] if exponent[:1] in "+-" else "+"
    digits = exponent.lstrip("+-").lstrip("0") or "0"
    if sign == "+" and len(digits) < 2:
        digits = digits.rjust(2, "0")
    return f"{mantissa}e{sign}{digits}"
