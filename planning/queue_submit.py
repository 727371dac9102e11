"""Another run through the queue: the stack's queued-run manifest made into one submission.

The stack publishes the configured run as a RayJob that brings its own cluster through the
queue (`grpoQueuedRunManifest`); a submission gives it a name, a run folder of that name
(checkpoints, logs: two runs never write into one) and, when its expected length is known,
lets its GPU workers use nodes whose host maintenance starts only after the run is expected to
end (GKE's `cloud.google.com/scheduled-maintenance-time`, Unix seconds). Without a length they
keep off every node with maintenance scheduled. Either way a run that finds no such node waits
in the queue with Kueue's reason. `tools/submit_run.py` is the command.
"""

from __future__ import annotations

import copy
import json
import math
import re
import shlex
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any, Final

from planning.kube import avoid_maintenance_affinity
from planning.ray import SAVE_BY_VARIABLE

MAX_RAYJOB_NAME: Final = 47
"""KubeRay's longest RayJob name (its cluster's name adds 6 characters to it)."""
MAX_HOURS: Final = 30 * 24
"""The longest expected length taken: GKE announces host maintenance days to weeks ahead."""
CLEAR_UNTIL_ANNOTATION: Final = "nemo-rl-gke/maintenance-clear-until"
"""On the submitted RayJob: the Unix time its workers' nodes must be free of maintenance until."""
RUN_ANNOTATIONS: Final = {"run": "nemo-rl-gke/run", "log-dir": "nemo-rl-gke/log-dir"}
"""What the published run's RayJob says of its run (program.ray)."""
NAME: Final = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
"""A RayJob name, matched whole (`fullmatch`: a `$` would let a trailing newline through)."""


class SubmissionError(ValueError):
    """A submission that cannot be made, in one line naming the argument."""


def clear_until(now: int, hours: float) -> int:
    """When a run started at `now` and lasting `hours` ends (Unix seconds, rounded up)."""
    if not 0 < hours <= MAX_HOURS:
        raise SubmissionError(
            f"--hours {hours:g}: the run's expected length must be above 0 and at most"
            f" {MAX_HOURS} hours"
        )
    return now + math.ceil(hours * 3600)


def own_run(manifest: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The manifest's run as run `name`: its folder (checkpoints, logs, Ray's log copies) beside
    the published run's, everywhere the manifest names it, so two runs never share one."""
    annotations = manifest["metadata"].get("annotations", {})
    log_dir = annotations.get(RUN_ANNOTATIONS["log-dir"], "")
    if not log_dir.endswith("/logs"):
        return copy.deepcopy(dict(manifest))
    old = log_dir.removesuffix("/logs")
    new = str(PurePosixPath(old).parent / name)
    text = re.sub(re.escape(old) + r"(?![-A-Za-z0-9_.])", new, json.dumps(manifest))
    job: dict[str, Any] = json.loads(text)
    old_name = annotations.get(RUN_ANNOTATIONS["run"], "")
    job["metadata"]["annotations"][RUN_ANNOTATIONS["run"]] = name
    for group in [job["spec"]["rayClusterSpec"]["headGroupSpec"],
                  *job["spec"]["rayClusterSpec"].get("workerGroupSpecs", [])]:  # fmt: skip
        for container in group["template"]["spec"].get("initContainers", []):
            for variable in container.get("env", []):
                if variable["name"] == "RAY_LOGS_RUN" and variable.get("value") == old_name:
                    variable["value"] = name
    return job


def with_clear_until(entrypoint: str, until: int) -> str:
    """The driver script told when the run's window ends: it has NeMo RL save and stop before
    then (planning.ray.save_by_steps)."""
    words = shlex.split(entrypoint)
    if len(words) != 3 or words[:2] != ["bash", "-c"]:
        raise SubmissionError("the manifest's entrypoint is not the stack's driver script")
    return f"bash -c {shlex.quote(f'export {SAVE_BY_VARIABLE}={until} && {words[2]}')}"


def submission(
    manifest: Mapping[str, Any], name: str, *, now: int, hours: float | None
) -> dict[str, Any]:
    """The RayJob to create: the manifest under `name`; with `hours`, its workers also accept
    nodes whose maintenance starts after the run is expected to end, and its driver has NeMo
    RL save and stop before then."""
    if len(name) > MAX_RAYJOB_NAME or not NAME.fullmatch(name):
        raise SubmissionError(
            f"--name {name!r}: a RayJob name is at most {MAX_RAYJOB_NAME} characters of a-z,"
            " 0-9 and -, starting with a letter and not ending with -"
        )
    if manifest.get("kind") != "RayJob" or "rayClusterSpec" not in manifest.get("spec", {}):
        raise SubmissionError("the manifest is not a RayJob that brings its own cluster")
    job = own_run(manifest, name)
    job["metadata"]["name"] = name
    if hours is None:
        return job
    until = clear_until(now, hours)
    job["metadata"].setdefault("annotations", {})[CLEAR_UNTIL_ANNOTATION] = str(until)
    job["spec"]["entrypoint"] = with_clear_until(str(job["spec"].get("entrypoint", "")), until)
    for group in job["spec"]["rayClusterSpec"].get("workerGroupSpecs", []):
        pod = group["template"]["spec"]
        # Only where the stack keeps workers off maintenance (ray.avoidMaintenance).
        if "nodeAffinity" in pod.get("affinity", {}):
            pod["affinity"]["nodeAffinity"] = avoid_maintenance_affinity(until)["nodeAffinity"]
    return job
