"""The replacement guard's read of its stack's last outputs, when the backend is caught writing.

The file backend rewrites a checkpoint's `.attrs` file in place while the engine saves the
stack, and a read at that moment fails with "failed to load checkpoint: EOF" (a real
`pulumi up` of the engine tests failed so). The guard reads again; it never goes on without
the outputs (it would then let a protected stack's replacement through).
"""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import pulumi
import pytest

from planning.resource_types import READ_STACK_OUTPUTS
from program import guard
from program.guard import read_with_retries

CAUGHT_WRITING = Exception(
    "invoke of pulumi:pulumi:readStackOutputs failed: invocation of"
    " pulumi:pulumi:readStackOutputs returned an error: failed to load checkpoint: EOF"
)


def reader(*answers: Any) -> tuple[list[int], Any]:
    """A read that raises or returns `answers` in turn, and the count of its calls."""
    calls: list[int] = []

    def read() -> Any:
        calls.append(1)
        answer = answers[len(calls) - 1]
        if isinstance(answer, Exception):
            raise answer
        return answer

    return calls, read


def test_a_read_that_met_the_backend_writing_is_read_again() -> None:
    calls, read = reader(CAUGHT_WRITING, CAUGHT_WRITING, {"replacementConfig": {"zone": "a"}})
    assert read_with_retries(read, pause=0) == {"replacementConfig": {"zone": "a"}}
    assert len(calls) == 3


def test_the_guard_fails_closed_when_the_backend_never_answers() -> None:
    calls, read = reader(*[CAUGHT_WRITING] * 3)
    with pytest.raises(pulumi.RunError, match="could not read this stack's last outputs") as raised:
        read_with_retries(read, tries=3, pause=0)
    assert "failed to load checkpoint: EOF" in str(raised.value)
    assert "run it again" in str(raised.value)
    assert len(calls) == 3


def test_any_other_error_is_not_retried() -> None:
    calls, read = reader(Exception("invoke failed: permission denied"), {})
    with pytest.raises(Exception, match="permission denied"):
        read_with_retries(read, pause=0)
    assert len(calls) == 1


def test_the_guard_s_invoke_goes_through_the_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the program calls: the engine's readStackOutputs invoke, read again once."""

    answer = SimpleNamespace(value={"outputs": {"replacementConfig": {"zone": "us-central1-b"}}})
    calls, read = reader(CAUGHT_WRITING, answer)
    asked: list[tuple[str, dict[str, str]]] = []

    def invoke(token: str, args: dict[str, str]) -> Any:
        asked.append((token, args))
        return read()

    monkeypatch.setattr(pulumi.runtime, "invoke", invoke)
    monkeypatch.setattr(pulumi, "get_organization", lambda: "organization")
    monkeypatch.setattr(pulumi, "get_project", lambda: "nemo-rl-gke")
    monkeypatch.setattr(time, "sleep", lambda _s: None)
    assert guard.previous_outputs("b200") == {"replacementConfig": {"zone": "us-central1-b"}}
    assert asked == [(READ_STACK_OUTPUTS, {"name": "organization/nemo-rl-gke/b200"})] * 2
    assert len(calls) == 2
