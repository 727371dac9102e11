"""What the recorders of NeMo RL's own behaviour share (test bed only): loading one source file
of a NeMo RL checkout as a module, and their command line."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar


def load_source(source: Path, name: str) -> ModuleType:
    """One file of a NeMo RL checkout, run as the module `name`."""
    spec = importlib.util.spec_from_file_location(name, source)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {source}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(record: Callable[[Path], dict[str, Any]], prog: str) -> None:
    """`python -m PROG NEMO_RL_CHECKOUT`: the recording as JSON on stdout (exit 2 on bad use)."""
    if len(sys.argv) != 2 or not (Path(sys.argv[1]) / "nemo_rl").is_dir():
        print(f"usage: {prog} NEMO_RL_CHECKOUT (a folder holding nemo_rl/)")
        sys.exit(2)
    print(json.dumps(record(Path(sys.argv[1])), indent=1))


T = TypeVar("T")


def on_local_ray(cpus: int, gpus: int, play: Callable[[], T]) -> T:
    """`play()` on a one-node Ray of this process's own (it declares `gpus`), ended after."""
    import ray

    ray.init(num_cpus=cpus, num_gpus=gpus, include_dashboard=False, log_to_driver=False)
    try:
        return play()
    finally:
        ray.shutdown()
