"""Errors raised for invalid stack configuration, and how values appear in them.

Every message is one line of bounded length whatever the stack file holds: values are shown
through `show` (a short repr, never a multi-megabyte one, newlines escaped) and keys through
`show_key` (non-ASCII escaped, so a look-alike such as a Cyrillic e (U+0435) is visible).
"""

from __future__ import annotations

import reprlib
from typing import Any

import pulumi

MAX_SHOWN = 80
"""Characters of a value shown in a message."""
MAX_PROBLEM = 400
"""Characters of a problem or fix (the key and the fix always survive)."""

_REPR = reprlib.Repr()
_REPR.maxstring = MAX_SHOWN
_REPR.maxother = MAX_SHOWN
_REPR.maxlevel = 3
_REPR.maxdict = _REPR.maxlist = 6


def show(value: Any) -> str:
    """A value as a message shows it: a repr cut to about MAX_SHOWN characters, one line."""
    text = _REPR.repr(value)
    if len(text) > MAX_SHOWN + 20:
        text = text[:MAX_SHOWN] + "..."
    return one_line(text)


def show_text(text: str) -> str:
    """Text as a message shows it unquoted: one line, cut to about MAX_SHOWN characters."""
    return one_line(text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN] + "...")


def show_key(key: str) -> str:
    """A config key as a message shows it: printable ASCII kept, anything else escaped."""
    shown = key if len(key) <= MAX_SHOWN else key[: MAX_SHOWN - 3] + "..."
    if shown.isascii() and shown.isprintable():
        return shown
    return "".join(
        ch if ch.isascii() and ch.isprintable() else ch.encode("unicode_escape").decode("ascii")
        for ch in shown
    )


def one_line(text: str) -> str:
    """Escape line breaks and other control characters so a message stays one line."""
    if text.isprintable():
        return text
    return "".join(
        ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text
    )


def _bounded(text: str) -> str:
    text = one_line(text)
    if len(text) <= MAX_PROBLEM:
        return text
    half = MAX_PROBLEM // 2
    return f"{text[:half]} ... {text[-half:]}"


class ConfigProblem(ValueError):  # noqa: N818 - a problem report, raised inside pydantic
    """A validation failure that knows which key is wrong and how to fix it.

    Raised inside pydantic validators; `path` is relative to the model that raised it
    (aliases, e.g. `("reservation",)`), and the loader prefixes the model's location.
    """

    def __init__(self, path: tuple[str | int, ...], problem: str, fix: str) -> None:
        super().__init__(problem)
        self.path = path
        self.problem = problem
        self.fix = fix


class InvalidStackConfig(pulumi.RunError):
    """The stack's configuration is invalid; nothing has been registered.

    A `pulumi.RunError`, so the real CLI prints the message without a traceback;
    preflight turns it into exit code 2. The message is one line of bounded length.
    """

    def __init__(self, key: str, problem: str, fix: str, more: int = 0) -> None:
        self.key = show_key(key)
        self.problem = _bounded(problem)
        self.fix = _bounded(fix)
        self.more = more
        tail = f" ({more} more problem{'s' if more != 1 else ''} after this one)" if more else ""
        stop = "" if self.problem.endswith(("?", ".")) else "."
        super().__init__(
            f"invalid stack config: {self.key}: {self.problem}{stop} Fix: {self.fix}{tail}"
        )
