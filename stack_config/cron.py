"""Cron schedules as the Kubernetes API server reads a CronJob's `spec.schedule`.

The API server parses a schedule with robfig/cron v3's standard parser (five fields: minute,
hour, day of month, month, day of week; or a descriptor such as `@daily` or `@every 6h`) and
refuses `TZ=` or `CRON_TZ=` in it once `spec.timeZone` is set (pkg/apis/batch/validation).
The same rules are applied here so a bad schedule stops at preflight, naming the key, instead
of at the CronJob's create after the GPU pool is built. A schedule that parses but can never
fire (the 30th of February) does nothing and is refused too.
"""

from __future__ import annotations

import re
import zoneinfo
from dataclasses import dataclass
from typing import Final

_DESCRIPTORS: Final = frozenset(
    {"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}
)
_GO_UNITS: Final = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,  # U+00B5 micro sign
    "μs": 1_000,  # U+03BC Greek mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_GO_PART: Final = re.compile(r"(\d*)(?:\.(\d*))?([^\d.]*)")
_TWO_63: Final = 1 << 63
_ZONE_PART: Final = re.compile(r"[A-Za-z.\-_0-9+]{1,14}")
"""One part of a time zone name as pkg/apis/batch/validation allows it (IANA's naming rules
plus the digits and '+' of legacy names)."""
_MONTHS: Final = (
    "jan",
    "feb",
    "mar",
    "apr",
    "may",
    "jun",
    "jul",
    "aug",
    "sep",
    "oct",
    "nov",
    "dec",
)
_DAYS: Final = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_LONGEST_MONTH: Final = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


@dataclass(frozen=True)
class _Bounds:
    name: str
    low: int
    high: int
    names: tuple[str, ...] = ()
    name_base: int = 0


_FIELDS: Final = (
    _Bounds("minute", 0, 59),
    _Bounds("hour", 0, 23),
    _Bounds("day of month", 1, 31),
    _Bounds("month", 1, 12, _MONTHS, 1),
    _Bounds("day of week", 0, 6, _DAYS, 0),
)


class CronError(ValueError):
    """A schedule the API server would refuse, or one that never fires."""


def _number(text: str, bounds: _Bounds) -> int:
    lowered = text.lower()
    if lowered in bounds.names:
        return bounds.names.index(lowered) + bounds.name_base
    if not re.fullmatch(r"[+-]?\d{1,9}", text):
        raise CronError(f"{text!r} is not a number or a name in the {bounds.name} field")
    value = int(text)
    if value < 0:
        raise CronError(f"negative number ({value}) in the {bounds.name} field")
    return value


def _values(field: str, bounds: _Bounds) -> tuple[set[int], bool]:
    """The values one field selects, and whether it is `*` (or `?`) as a whole."""
    values: set[int] = set()
    star = False
    for part in field.split(","):
        range_and_step = part.split("/")
        if len(range_and_step) > 2:
            raise CronError(f"too many slashes in {part!r} ({bounds.name})")
        low_high = range_and_step[0].split("-")
        if len(low_high) > 2:
            raise CronError(f"too many hyphens in {part!r} ({bounds.name})")
        if low_high[0] in ("*", "?"):
            # robfig reads "*-5" as "*": whatever follows the star's hyphen is ignored.
            start, end = bounds.low, bounds.high
            whole = True
        else:
            start = _number(low_high[0], bounds)
            end = _number(low_high[1], bounds) if len(low_high) == 2 else start
            whole = False
        step = 1
        if len(range_and_step) == 2:
            step = _number(range_and_step[1], bounds)
            if len(low_high) == 1:
                end = bounds.high  # "N/step" means N-max/step
            whole = whole and step <= 1
        if start < bounds.low:
            raise CronError(f"{start} is below the {bounds.name} minimum {bounds.low}")
        if end > bounds.high:
            raise CronError(f"{end} is above the {bounds.name} maximum {bounds.high}")
        if start > end:
            raise CronError(f"range {start}-{end} runs backwards ({bounds.name})")
        if step == 0:
            raise CronError(f"step 0 in {part!r} ({bounds.name}): a step is a positive number")
        values.update(range(start, end + 1, step))
        star = star or whole
    return values, star


def _go_fraction(digits: str) -> tuple[int, float]:
    """Go's leadingFraction: the digits' value and scale, precision dropped past 2**63."""
    value, scale = 0, 1.0
    for digit in digits:
        if value > (_TWO_63 - 1) // 10 or value * 10 + int(digit) > _TWO_63:
            break
        value, scale = value * 10 + int(digit), scale * 10
    return value, scale


def go_duration(text: str) -> int | None:
    """Nanoseconds of `text` as Go's time.ParseDuration reads it (robfig's `@every` calls
    it), or None where it returns an error, overflow past int64 included."""
    body = text[1:] if text[:1] in "+-" else text
    negative = text[:1] == "-"
    if body == "0":
        return 0
    if not body:
        return None
    total, position = 0, 0
    while position < len(body):
        match = _GO_PART.match(body, position)
        if match is None or match.end() == position:
            return None
        whole, fraction, unit = match.group(1), match.group(2) or "", match.group(3)
        if not whole and not fraction:
            return None  # no digits (".s"), or a unit first
        if int(whole or "0") > _TWO_63 or unit not in _GO_UNITS:
            return None
        value, scale = _go_fraction(fraction)
        part = int(whole or "0")
        if part > _TWO_63 // _GO_UNITS[unit]:
            return None
        part *= _GO_UNITS[unit]
        if value > 0:
            # Go's float64 arithmetic, truncated as its uint64 conversion truncates.
            part += int(float(value) * (float(_GO_UNITS[unit]) / scale))
            if part > _TWO_63:
                return None
        total += part
        if total > _TWO_63:
            return None
        position = match.end()
    if negative:
        return -total
    return None if total > _TWO_63 - 1 else total


def check_schedule(schedule: str) -> None:
    """Raise CronError when the API server would refuse `schedule` or it never fires."""
    if "TZ" in schedule:
        raise CronError("a time zone in the schedule is refused: use health.timeZone instead")
    # No trimming: robfig matches a descriptor exactly and splits fields on whitespace.
    spec = schedule
    if not spec:
        raise CronError("the schedule is empty")
    if spec.startswith("@"):
        if spec.startswith("@every "):
            duration = spec[len("@every ") :]
            nanoseconds = go_duration(duration)
            if nanoseconds is None:
                raise CronError(
                    f"{duration!r} is not a duration such as 6h or 90m"
                    " (Go's time.ParseDuration: at most 2562047h47m16s)"
                )
            if nanoseconds <= 0:
                raise CronError(f"{duration!r} is not a period: give a positive duration")
            return
        if spec not in _DESCRIPTORS:
            raise CronError(f"{spec!r} is not a descriptor (@hourly, @daily, @weekly, @monthly)")
        return
    fields = spec.split()
    if len(fields) != len(_FIELDS):
        raise CronError(
            f"{len(fields)} field(s): a schedule has exactly 5 (minute hour day-of-month month"
            " day-of-week)"
        )
    parsed = [_values(f, b) for f, b in zip(fields, _FIELDS, strict=True)]
    (days, day_star), (months, _), (_, week_star) = parsed[2], parsed[3], parsed[4]
    # With a day of week given too, robfig fires on either: only a lone day of month can miss.
    if week_star and not day_star and all(min(days) > _LONGEST_MONTH[m - 1] for m in months):
        raise CronError(
            f"day {min(days)} of month never comes in month(s) {sorted(months)}: the schedule"
            " never fires"
        )


def check_time_zone(zone: str) -> None:
    """Raise CronError when the API server would refuse `zone` as a CronJob's spec.timeZone:
    its naming rules, `Local`, then the zone database (a folder such as `America` is no zone)."""
    if not zone:
        raise CronError("the time zone is empty")
    for part in zone.split("/"):
        if part in (".", "..") or part.startswith("-") or not _ZONE_PART.fullmatch(part):
            raise CronError(f"{zone!r} is not an IANA time zone name")
    if zone.lower() == "local":
        raise CronError(f"{zone!r} is the API server's own zone, not a zone of the database")
    try:
        zoneinfo.ZoneInfo(zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        # OSError: the name is a folder of the database (IsADirectoryError), not a zone.
        raise CronError(f"{zone!r} is not an IANA time zone") from None
