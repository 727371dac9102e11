"""Errors raised for invalid stack configuration."""

from __future__ import annotations

import pulumi


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
    preflight turns it into exit code 2.
    """

    def __init__(self, key: str, problem: str, fix: str, more: int = 0) -> None:
        self.key = key
        self.problem = problem
        self.fix = fix
        self.more = more
        tail = f" ({more} more problem{'s' if more != 1 else ''} after this one)" if more else ""
        stop = "" if problem.endswith(("?", ".")) else "."
        super().__init__(f"invalid stack config: {key}: {problem}{stop} Fix: {fix}{tail}")
