"""How NeMo RL's workers read the GPU -> CPU list file, recorded from the real function (test bed
only).

`bind_to_gpu_numa` (`nemo_rl/distributed/numa_utils.py`) reads `NRL_GPU_CPU_AFFINITY_FILE` and
pins the worker to the CPU list of its GPU's line. `record` runs the real function on the files
of CASES with the pinning itself caught (this machine has not the CPUs a GPU node has) and
memory binding off, and writes, for each GPU asked, whether it pinned and which CPU list. The
stand-in's `numa_cpulist` is compared with the recording in tests/testbed.

    python -m testbed.nemo_rl_standin.numa_map /path/to/NeMo-RL-v0.7.0 > recording.json
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import types
from pathlib import Path
from typing import Any

from testbed.nemo_rl_standin.recording import load_source, main

TWO_SOCKETS = "".join(
    f"{gpu}:{'0-55,112-167' if gpu < 4 else '56-111,168-223'}\n" for gpu in range(8)
)
"""The file as the stack's worker start writes it on a two-socket 8-GPU node."""
CASES: dict[str, tuple[str | None, list[int]]] = {
    "two-sockets": (TWO_SOCKETS, [0, 3, 4, 7]),
    "blank-lines-and-spaces": ("\n0:0-3\n\n 1: 4-7 \n", [0, 1]),
    "longer-id-first": ("10:8-9\n1:0-1\n", [1, 10]),
    "gpu-missing": ("0:0-1\n", [1]),
    "no-file": (None, [0]),
}
"""Case -> (the file's text, None for no file; the GPUs asked)."""


class _Binding(logging.Handler):
    """Catches the real function's "NUMA CPU binding" record: its CPU list as the file gave it."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.cpulists: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.msg.startswith("NUMA CPU binding"):
            self.cpulists.append(str(record.args[1]) if isinstance(record.args, tuple) else "")


def record(checkout: Path) -> dict[str, Any]:
    """Each case played through the real bind_to_gpu_numa of a NeMo RL checkout."""
    source = checkout / "nemo_rl" / "distributed" / "numa_utils.py"
    module: Any = load_source(source, "nemo_rl_numa_utils")
    os.environ["NRL_DISABLE_NUMA_MEMBIND"] = "1"
    # The module's own `os` only: the pinning is caught, not done.
    module.os = types.SimpleNamespace(environ=os.environ, sched_setaffinity=lambda *_: None)
    binding = _Binding()
    module.logger.addHandler(binding)
    module.logger.setLevel(logging.DEBUG)
    cases: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as folder:
        for name, (text, gpus) in CASES.items():
            path = Path(folder, name)
            if text is not None:
                path.write_text(text)
            module.GPU_CPU_AFFINITY_PATH = str(path)
            found = {}
            for gpu in gpus:
                binding.cpulists.clear()
                bound = module.bind_to_gpu_numa(gpu)
                found[str(gpu)] = {"bound": bound, "cpulist": "".join(binding.cpulists)}
            cases[name] = found
    return {
        "source": "NVIDIA-NeMo/RL nemo_rl/distributed/numa_utils.py",
        "sha256": hashlib.sha256(source.read_bytes()).hexdigest(),
        "cases": cases,
    }


if __name__ == "__main__":
    main(record, "numa_map.py")
