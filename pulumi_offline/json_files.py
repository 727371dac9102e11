"""JSON files a user hands preflight (`--reservations`, `--previous` reports), read within
bounds: a regular file of at most a given size, so a device, a pipe or a huge file stops with
one line instead of a hang."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from stack_config.errors import show, show_key, show_text


class JsonFileError(ValueError):
    """The file cannot be read as a bounded JSON file (the message says why, in one line)."""


def read_bounded(path: Path, limit: int) -> str:
    """The text of `path`, a regular UTF-8 file of at most `limit` bytes."""
    if not path.is_file():
        raise JsonFileError("not a regular file" if path.exists() else "no such file")
    with path.open("rb") as file:
        data = file.read(limit + 1)
    if len(data) > limit:
        raise JsonFileError(f"larger than {limit >> 20} MiB, more than any such file holds")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise JsonFileError(f"not UTF-8 ({error.reason} at byte {error.start})") from None


def first_problem(error: ValidationError) -> str:
    """A model's first validation error as one line: `key: message (given value)`."""
    first = error.errors(include_url=False)[0]
    key = show_key(".".join(str(part) for part in first["loc"])) or "(the whole file)"
    message = show_text(first["msg"].removeprefix("Value error, "))
    return f"{key}: {message} (given {show(first.get('input'))})"
