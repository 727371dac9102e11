"""Errors raised for invalid stack configuration, and how values appear in them.

Every message is one line of bounded length whatever the stack file holds: values are shown
through `show` (a short repr, never a multi-megabyte one, newlines escaped) and keys through
`show_key` (non-ASCII escaped, so a look-alike such as a Cyrillic e (U+0435) is visible).
"""

from __future__ import annotations

import reprlib
import unicodedata
from collections.abc import Iterable
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


_CONFUSABLES: dict[str, str] = {
    # Cyrillic and Greek letters drawn like Latin ones (Unicode's confusables.txt, the common
    # ones); fullwidth forms are folded by NFKC first.
    **dict(
        zip(
            "\u0430\u0435\u043e\u0440\u0441\u0443\u0445\u0456\u0458\u0455\u0501\u04bb\u04cf",
            "aeopcyxijsdhl",
            strict=True,
        )
    ),
    **dict(
        zip(
            "\u0410\u0412\u0415\u041a\u041c\u041d\u041e\u0420\u0421\u0422\u0425\u0406\u0408\u0405",
            "ABEKMHOPCTXIJS",
            strict=True,
        )
    ),
    **dict(zip("\u03bf\u03b1\u03b9\u03bd\u03c1\u03ba\u03c4\u03c5\u03c7", "oaivpktux", strict=True)),
    **dict(
        zip(
            "\u0391\u0392\u0395\u0397\u0399\u039a\u039c\u039d\u039f\u03a1\u03a4\u03a7\u03a5\u0396",
            "ABEHIKMNOPTXYZ",
            strict=True,
        )
    ),
    "\u0261": "g",
    "\u0131": "i",
}
_INVISIBLE = frozenset("\u200b\u200c\u200d\u2060\ufeff\u00ad")


def skeleton(text: str) -> str:
    """`text` as it looks: NFKC-folded, look-alike letters as the Latin ones, invisible
    characters dropped (so `z\\u043ene`, a Cyrillic o, reads `zone`)."""
    folded = unicodedata.normalize("NFKC", text)
    return "".join(_CONFUSABLES.get(ch, ch) for ch in folded if ch not in _INVISIBLE)


def look_alike_of(written: str, known: Iterable[str]) -> str | None:
    """The known key `written` imitates with a look-alike character, or None."""
    if written.isascii():
        return None
    drawn = skeleton(written)
    return next((key for key in known if key != written and skeleton(key) == drawn), None)


def strange_characters(written: str) -> str:
    """The characters of `written` that are not printable ASCII, named: `'\\u043e' (U+043E
    CYRILLIC SMALL LETTER O)`."""
    names = []
    for ch in dict.fromkeys(written):
        if not (ch.isascii() and ch.isprintable()):
            name = unicodedata.name(ch, "an unnamed character")
            names.append(f"{ch.encode('unicode_escape').decode('ascii')} (U+{ord(ch):04X} {name})")
    return ", ".join(names)
