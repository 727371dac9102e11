"""Times and recurrences as GKE's API and the provider read them, evaluated within bounds.

A time is RFC 3339 exactly as pulumi-gcp checks it (Go's `time.Parse(time.RFC3339, v)`): a
date, a `T`, the time with seconds, an optional fraction, then `Z` or an offset `+hh:mm`.
Python's `fromisoformat` takes far more (bare dates, a space, naive times, the basic format,
week dates), which the provider then refuses at `pulumi up`. A recurrence is an RFC 5545 RRULE
evaluated only within bounds: a positive INTERVAL, at most `MAX_OCCURRENCES` occurrences
walked and `MAX_SECONDS` of evaluation, so no stack can make preflight or the program spin.
"""

from __future__ import annotations

import calendar
import re
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import Final, TypeVar

from dateutil.rrule import rrule, rrulestr

from stack_config.errors import ConfigProblem, show

_RFC3339: Final = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{1,2}):(\d{2}):(\d{2})(\.\d+)?(Z|([+-])(\d{2}):(\d{2}))"
)
"""Go's RFC 3339 layout `2006-01-02T15:04:05Z07:00` as its parser applies it: the hour may be
one digit (layout `15`), a fraction may follow the seconds, the zone is `Z` or `+hh:mm`."""
_GO_TIME: Final = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d+)? [+-]\d{4} \S+")
EARLIEST_YEAR: Final = 1970
LATEST_YEAR: Final = 9000
"""Maintenance times outside these years are refused: GKE's windows and exclusions are about
now, and the checks look more than a year past each time (Python's datetime ends at 9999)."""
MAX_OCCURRENCES: Final = 10_000
"""Occurrences of a window walked over the checked 400 days: windows last at least 4 hours,
so a rule with more (every minute, say) is finer than any window GKE keeps."""
MAX_SECONDS: Final = 0.5
"""Wall time an RRULE may take to evaluate before it is refused as too fine-grained (or as one
that almost never occurs: dateutil walks to year 9999 looking for it)."""
FIX_TIME: Final = 'write it like "2026-01-03T04:00:00Z" (RFC 3339: date, T, time, Z or +hh:mm)'


def parse_rfc3339(value: str) -> datetime:
    """The time `value` names, or ConfigProblem where Go's RFC 3339 parser would refuse it."""
    match = _RFC3339.fullmatch(value)
    if match is None:
        unquoted = _GO_TIME.fullmatch(value) is not None
        raise ConfigProblem(
            (),
            f"{show(value)} is not an RFC 3339 time"
            + (" (the Pulumi CLI rewrote an unquoted YAML timestamp)" if unquoted else ""),
            FIX_TIME + (", in quotes" if unquoted else ""),
        )
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    problem = None
    if not 1 <= month <= 12:
        problem = f"month {month:02d} does not exist"
    elif not 1 <= day <= calendar.monthrange(max(year, 1), month)[1]:
        problem = f"{year:04d}-{month:02d} has no day {day:02d}"
    elif hour > 23 or minute > 59 or second > 59:
        problem = f"{hour:02d}:{minute:02d}:{second:02d} is not a time of day"
    elif match.group(9) and (int(match.group(10)) > 23 or int(match.group(11)) > 59):
        problem = f"offset {match.group(8)} is not an offset"
    elif not EARLIEST_YEAR <= year <= LATEST_YEAR:
        problem = f"year {year} is outside {EARLIEST_YEAR}..{LATEST_YEAR}"
    if problem:
        raise ConfigProblem((), f"{show(value)} is not a usable RFC 3339 time: {problem}", FIX_TIME)
    zone = UTC
    if match.group(9):
        sign = 1 if match.group(9) == "+" else -1
        zone = timezone(sign * timedelta(hours=int(match.group(10)), minutes=int(match.group(11))))
    fraction = match.group(7) or ".0"
    micro = int((fraction[1:] + "000000")[:6])
    return datetime(year, month, day, hour, minute, second, micro, tzinfo=zone)


_T = TypeVar("_T")


def within(seconds: float, work: Callable[[], _T]) -> _T | None:
    """`work()`'s result, or None when it takes longer than `seconds` (the work goes on in a
    daemon thread, which ends with the process; only bounded work is handed here)."""
    result: list[_T] = []
    error: list[BaseException] = []

    def run() -> None:
        try:
            result.append(work())
        except BaseException as err:  # noqa: BLE001 - handed to the caller's thread
            error.append(err)

    thread = threading.Thread(target=run, daemon=True, name="rrule-evaluation")
    thread.start()
    thread.join(seconds)
    if error:
        raise error[0]
    return result[0] if result else None


def parse_rrule(recurrence: str, start: datetime) -> rrule:
    """The rule, after the checks dateutil leaves out: INTERVAL a positive integer (RFC 5545)."""
    for part in recurrence.split(";"):
        name, _, value = part.partition("=")
        if name.upper() == "INTERVAL" and not re.fullmatch(r"[1-9][0-9]{0,3}", value):
            raise ConfigProblem(
                (),
                f"INTERVAL={value} is not a positive integer (RFC 5545: the rule repeats every"
                " INTERVAL days or weeks; 0 would never move on)",
                "write INTERVAL=1 (the default) or another whole number from 1 to 9999",
            )
    rule = rrulestr(recurrence, dtstart=start)
    if not isinstance(rule, rrule):
        raise ConfigProblem(
            (), f"{recurrence!r} is not one RRULE", "write one rule, e.g. FREQ=WEEKLY;BYDAY=SA,SU"
        )
    return rule


def occurrences(rule: rrule, start: datetime, horizon: timedelta) -> list[datetime]:
    """Every occurrence from `start` within `horizon`, or ConfigProblem when there are more
    than MAX_OCCURRENCES or the walk takes longer than MAX_SECONDS."""

    def walk() -> list[datetime] | int:
        found: list[datetime] = []
        end = start + horizon
        for moment in rule:
            if moment > end:
                break
            if moment >= start:
                found.append(moment)
            if len(found) > MAX_OCCURRENCES:
                return len(found)
        return found

    walked = within(MAX_SECONDS, walk)
    if walked is None or isinstance(walked, int):
        how = (
            f"more than {MAX_OCCURRENCES} occurrences in {horizon.days} days"
            if isinstance(walked, int)
            else f"longer than {MAX_SECONDS:g} s to evaluate (it occurs almost never or"
            " far too often)"
        )
        raise ConfigProblem(
            (),
            f"the rule is too fine-grained to check: {how}",
            "give whole days, e.g. FREQ=WEEKLY;BYDAY=SA,SU or FREQ=DAILY, without BYHOUR,"
            " BYMINUTE or BYSECOND lists",
        )
    return walked
