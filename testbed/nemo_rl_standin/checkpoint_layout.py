"""The checkpoint layout scenario the NeMo RL stand-in is held to (test bed only).

NeMo RL cannot run here (no CUDA, not on PyPI), but its `CheckpointManager`
(`nemo_rl/utils/checkpoint.py`) is plain file handling. `record` plays one scenario through
the real class, loaded from a NeMo RL checkout given on the command line, and writes what it
did as JSON (the recording is kept in tests/testbed/data, with the source's sha256); the
test bed's test plays the same scenario through the stand-in's `begin_save`, `finish_save`
and `latest_checkpoint_step` and compares. The scenario is the resume test's: a save, a save
cut short after the workers wrote, a restart that resumes, the same step saved again, and a
step saved twice (a resumed run repeating a save).

    python -m testbed.nemo_rl_standin.checkpoint_layout /path/to/NeMo-RL-v0.7.0 > recording.json

`RETENTION` plays NeMo RL's retention (`keep_top_k` with the config's `metric_name`, run after
every finished save) on saves whose training info holds the metric, and on saves without it (the
stand-in's runs have no validation): the stand-in keeps and removes the same folders.
"""

from __future__ import annotations

import contextlib
import hashlib
import sys
import tempfile
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from testbed.nemo_rl_standin.recording import load_source, main

SCENARIO: list[tuple[str, int]] = [
    ("save", 10),
    ("begin", 20),
    ("latest", 0),
    ("begin", 20),
    ("finish", 20),
    ("save", 25),
    ("save", 25),
    ("latest", 0),
]
"""(operation, step): `begin` starts a save and leaves it (the writer died), `finish` completes
the save begun last, `save` does both, `latest` asks for the newest complete checkpoint."""


RETENTION_CONFIG: dict[str, Any] = {
    "metric_name": "val:accuracy",
    "higher_is_better": True,
    "keep_top_k": 2,
}
"""The retention scenarios' checkpointing keys (grpo_math_1B.yaml's, with k = 2)."""
RETENTION: dict[str, list[tuple[int, float | None]]] = {
    "by-metric": [(10, 0.5), (20, 0.7), (30, 0.6), (40, 0.1), (50, 0.65)],
    "no-metric": [(10, None), (20, None), (30, None), (40, None)],
}
"""(step, the metric's value in its training info, or None when it has none) per scenario."""


class Layout(Protocol):
    """One implementation of the layout: NeMo RL's or the stand-in's."""

    def begin(self, folder: Path, step: int, info: dict[str, Any]) -> Path:
        """Start a save of `step`: the folder it is written into."""

    def finish(self, tmp: Path, retention: dict[str, Any] | None = None) -> None:
        """Complete the save written into `tmp`, then apply `retention` (checkpointing keys)."""

    def latest(self, folder: Path) -> str | None:
        """The newest complete checkpoint's path, or None."""


def listing(folder: Path) -> list[str]:
    """Every path under the folder, relative, sorted (folders end with /)."""
    return sorted(
        str(p.relative_to(folder)) + ("/" if p.is_dir() else "") for p in folder.rglob("*")
    )


def play(layout: Layout, folder: Path) -> list[dict[str, Any]]:
    """The scenario through `layout` in `folder`: per operation, what it returned and the
    folder's listing after it. Each save writes one file, tagged with its attempt, so a
    reused or replaced folder shows."""
    out: list[dict[str, Any]] = []
    tmp: Path | None = None
    for attempt, (operation, step) in enumerate(SCENARIO):
        returned: str | None = None
        if operation in ("begin", "save"):
            tmp = layout.begin(folder, step, {"step": step, "attempt": attempt})
            (tmp / f"weights-{attempt}").write_text(str(attempt), encoding="utf-8")
            returned = tmp.name
        if operation in ("finish", "save"):
            if tmp is None:
                raise ValueError("the scenario finishes a save it never began")
            layout.finish(tmp)
        if operation == "latest":
            found = layout.latest(folder)
            returned = None if found is None else Path(found).name
        out.append(
            {"operation": operation, "step": step, "returned": returned, "after": listing(folder)}
        )
    return out


def play_retention(
    layout: Layout, folder: Path, saves: list[tuple[int, float | None]]
) -> list[list[str]]:
    """Saves in turn under RETENTION_CONFIG: the folder's complete checkpoints after each."""
    kept = []
    for step, value in saves:
        info: dict[str, Any] = {"step": step}
        if value is not None:
            info[str(RETENTION_CONFIG["metric_name"])] = value
        layout.finish(layout.begin(folder, step, info), RETENTION_CONFIG)
        kept.append(sorted(p.name for p in folder.iterdir()))
    return kept


class _RealLayout:
    """NeMo RL's `CheckpointManager`, retention off."""

    def __init__(self, manager_class: Callable[[dict[str, Any]], Any]) -> None:
        self.manager_class = manager_class

    def _manager(self, folder: Path, retention: dict[str, Any] | None = None) -> Any:
        config = {
            "enabled": True,
            "checkpoint_dir": str(folder),
            "metric_name": None,
            "higher_is_better": True,
            "keep_top_k": None,
            "save_period": 10,
            "save_optimizer": True,
        }
        return self.manager_class({**config, **(retention or {})})

    def begin(self, folder: Path, step: int, info: dict[str, Any]) -> Path:
        return Path(self._manager(folder).init_tmp_checkpoint(step, info))

    def finish(self, tmp: Path, retention: dict[str, Any] | None = None) -> None:
        self._manager(tmp.parent, retention).finalize_checkpoint(tmp)

    def latest(self, folder: Path) -> str | None:
        found: str | None = self._manager(folder).get_latest_checkpoint_path()
        return found


def _load_real(source: Path) -> Callable[[dict[str, Any]], Any]:
    """NeMo RL's CheckpointManager from its source file. The module imports torch only for
    `isinstance(v, torch.Tensor)` on training info and Megatron resume paths, neither of which
    the scenario reaches; an empty module stands for it so the file loads without CUDA."""
    torch = types.ModuleType("torch")

    class Tensor:  # never instantiated: the scenario's training info holds ints
        pass

    torch.Tensor = Tensor  # type: ignore[attr-defined]
    sys.modules.setdefault("torch", torch)
    module = load_source(source, "nemo_rl_checkpoint")
    manager: Callable[[dict[str, Any]], Any] = module.CheckpointManager
    return manager


def record(checkout: Path) -> dict[str, Any]:
    """The scenario played through the real CheckpointManager of a NeMo RL checkout."""
    source = checkout / "nemo_rl" / "utils" / "checkpoint.py"
    real = _RealLayout(_load_real(source))
    with tempfile.TemporaryDirectory() as folder:
        steps = play(real, Path(folder))
    retention = {}
    for name, saves in RETENTION.items():
        # NeMo RL prints each removal; the recording is what stdout carries.
        with tempfile.TemporaryDirectory() as folder, contextlib.redirect_stdout(sys.stderr):
            retention[name] = play_retention(real, Path(folder), saves)
    return {
        "source": "NVIDIA-NeMo/RL nemo_rl/utils/checkpoint.py",
        "sha256": hashlib.sha256(source.read_bytes()).hexdigest(),
        "scenario": [list(s) for s in SCENARIO],
        "steps": steps,
        "retention_config": RETENTION_CONFIG,
        "retention": retention,
    }


if __name__ == "__main__":
    main(record, "checkpoint_layout.py")
