"""NeMo RL's wait for the cluster's GPUs, recorded from the real class (test bed only).

`RayVirtualCluster` (`nemo_rl/distributed/virtual_cluster.py`) needs only Ray, which runs here:
`record` starts a one-node Ray on this machine that declares two GPUs (Ray counts what it is
told), asks the real class for placement groups of four and of two GPUs with
`NRL_VIRTUAL_CLUSTER_MAX_RETRIES=3`, and writes what it did: how many checks failed, the
sleeps between them (the sleep is recorded, not slept), and the error it raised. The stand-in's
`wait_for_gpus` is compared with that recording in tests/testbed.

    python -m testbed.nemo_rl_standin.gpu_retries /path/to/NeMo-RL-v0.7.0 > recording.json
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import time
import types
from pathlib import Path
from typing import Any

from testbed.nemo_rl_standin.recording import load_source, main, on_local_ray

GPUS = 2
"""GPUs the recording's Ray node declares."""
RETRIES = 3
"""NRL_VIRTUAL_CLUSTER_MAX_RETRIES in the recording."""
CASES = {"too-few": 4, "enough": 2}
"""GPUs asked for in each case."""
SHORTAGE = "Not enough GPUs available"
"""How the real class's failed check begins (the recording counts those lines)."""


def _attempt(module: Any, wanted: int) -> dict[str, Any]:
    sleeps: list[float] = []
    # The module's own `time` only: its sleeps are recorded, not slept (Ray's are untouched).
    module.time = types.SimpleNamespace(sleep=sleeps.append, time=time.time)
    out = io.StringIO()
    error = None
    with contextlib.redirect_stdout(out):
        try:
            cluster = module.RayVirtualCluster([wanted], use_gpus=True, num_gpus_per_node=8)
            cluster._init_placement_groups()
        except module.ResourceInsufficientError as raised:
            error = type(raised).__name__
    failed = sum(1 for line in out.getvalue().splitlines() if line.startswith(SHORTAGE))
    return {"failed_checks": failed, "sleeps": sleeps, "error": error}


def record(checkout: Path) -> dict[str, Any]:
    """The cases played through the real RayVirtualCluster of a NeMo RL checkout."""
    source = checkout / "nemo_rl" / "distributed" / "virtual_cluster.py"
    module = load_source(source, "nemo_rl_virtual_cluster")
    os.environ["NRL_VIRTUAL_CLUSTER_MAX_RETRIES"] = str(RETRIES)
    cases = on_local_ray(
        4, GPUS, lambda: {name: _attempt(module, wanted) for name, wanted in CASES.items()}
    )
    return {
        "source": "NVIDIA-NeMo/RL nemo_rl/distributed/virtual_cluster.py",
        "sha256": hashlib.sha256(source.read_bytes()).hexdigest(),
        "gpus": GPUS,
        "retries": RETRIES,
        "cases": cases,
    }


if __name__ == "__main__":
    main(record, "gpu_retries.py")
