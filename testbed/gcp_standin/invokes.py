"""The stand-in's answers to the reads of reservations and clusters (`program.reservation`).

Answered from a description (`pulumi_offline.fake_reservations`, the format preflight's
`--reservations` reads): the file named by NEMO_RL_GKE_STANDIN_RESERVATIONS, else
`reservations.json` beside this module, which describes the committed stacks' placeholder
reservations at the sizes their policy configs record (2 VMs each, none in use). Anything not
described is a 404, as in a project without it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pulumi_offline.fake_reservations import TOKENS, CloudFixtures, answer, load_fixtures

DEFAULT_FIXTURES = Path(__file__).with_name("reservations.json")

__all__ = ["TOKENS", "answer_read", "fixtures"]


def fixtures() -> CloudFixtures:
    """The description in force (read at every call: a test may point the variable elsewhere)."""
    path = os.environ.get("NEMO_RL_GKE_STANDIN_RESERVATIONS")
    return load_fixtures(Path(path) if path else DEFAULT_FIXTURES)


def answer_read(token: str, args: Mapping[str, Any], project: str) -> dict[str, Any]:
    """The result of one read (NotFoundError when the description has no such thing)."""
    return answer(fixtures(), token, args, project)
