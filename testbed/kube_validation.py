"""Ask Kubernetes' own CronJob validation about schedules and time zones.

`testbed/go/kube-validation` calls pkg/apis/batch/validation of the pinned Kubernetes on a
CronJob holding each schedule and time zone, as kube-apiserver does on create; the tests
compare stack_config.cron's verdicts with its answers.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

from testbed.cluster_pieces import PIECES
from testbed.gobuild import build


@dataclass(frozen=True)
class Verdict:
    """The API server's errors for one CronJob's schedule and time zone (empty: accepted)."""

    schedule: tuple[str, ...]
    time_zone: tuple[str, ...]


def binary() -> Path:
    """The built (or cached) kube-validation program."""
    return build(PIECES["kube-validation"]) / "kube-validation"


def judge(questions: list[tuple[str, str | None]]) -> list[Verdict]:
    """Verdicts for (schedule, time zone) pairs, in order, from one run of the program."""
    lines = "".join(
        json.dumps({"schedule": schedule, "timeZone": zone}) + "\n" for schedule, zone in questions
    )
    done = subprocess.run(
        [str(binary())], input=lines, capture_output=True, text=True, check=True, timeout=60
    )
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    if len(answers) != len(questions):
        raise RuntimeError(f"kube-validation answered {len(answers)} of {len(questions)}")
    return [Verdict(tuple(a["schedule"]), tuple(a["timeZone"])) for a in answers]
