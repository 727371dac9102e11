"""The NeMo RL stand-in's checkpoint layout against the real CheckpointManager's (v0.7.0).

The recording (tests/testbed/data) is the scenario of `testbed.nemo_rl_standin.checkpoint_layout`
played through NeMo RL v0.7.0's own `nemo_rl/utils/checkpoint.py`; the resume tests rely on the
stand-in laying checkpoints out the same way."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from testbed.nemo_rl_standin import checkpoint_layout
from testbed.nemo_rl_standin.run_grpo import begin_save, finish_save, latest_checkpoint_step

RECORDING = Path(__file__).parent / "data" / "nemo_rl_v0.7.0_checkpoint_layout.json"


class _StandinLayout:
    def begin(self, folder: Path, step: int, info: dict[str, Any]) -> Path:
        return begin_save(folder, step, info)

    def finish(self, tmp: Path, retention: dict[str, Any] | None = None) -> None:
        finish_save(tmp, retention)

    def latest(self, folder: Path) -> str | None:
        step = latest_checkpoint_step(folder)
        return None if step is None else str(folder / f"step_{step}")


def test_the_standin_lays_checkpoints_out_as_nemo_rl_does(tmp_path: Path) -> None:
    recorded = json.loads(RECORDING.read_text())
    assert [tuple(s) for s in recorded["scenario"]] == checkpoint_layout.SCENARIO
    played = checkpoint_layout.play(_StandinLayout(), tmp_path)
    for ours, real in zip(played, recorded["steps"], strict=True):
        assert ours == real, f"after {real['operation']} {real['step']}"


@pytest.mark.parametrize("scenario", sorted(checkpoint_layout.RETENTION))
def test_the_standin_keeps_the_checkpoints_nemo_rl_keeps(tmp_path: Path, scenario: str) -> None:
    """NeMo RL's keep_top_k after every save: the best by the metric plus the newest, and,
    where no save holds the metric (the stand-in's runs: no validation), the newest k."""
    recorded = json.loads(RECORDING.read_text())
    assert recorded["retention_config"] == checkpoint_layout.RETENTION_CONFIG
    saves = checkpoint_layout.RETENTION[scenario]
    kept = checkpoint_layout.play_retention(_StandinLayout(), tmp_path, saves)
    assert kept == recorded["retention"][scenario]
    assert len(kept[-1]) < len(saves)  # the scenario does remove checkpoints


def test_a_recording_comes_from_the_real_class(tmp_path: Path) -> None:
    """The recorder drives whatever CheckpointManager it is given: one that renames nothing
    records a different layout (so the recording is not the stand-in's own output)."""
    utils = tmp_path / "nemo_rl" / "utils"
    utils.mkdir(parents=True)
    (utils / "checkpoint.py").write_text(
        "from pathlib import Path\n"
        "class CheckpointManager:\n"
        "    def __init__(self, config):\n"
        "        self.dir = Path(config['checkpoint_dir'])\n"
        "    def init_tmp_checkpoint(self, step, info):\n"
        "        d = self.dir / f'tmp_step_{step}'\n"
        "        d.mkdir(parents=True, exist_ok=True)\n"
        "        return d\n"
        "    def finalize_checkpoint(self, path):\n"
        "        pass\n"
        "    def get_latest_checkpoint_path(self):\n"
        "        return None\n"
    )
    recorded = checkpoint_layout.record(tmp_path)
    assert recorded["steps"][0]["after"] == ["tmp_step_10/", "tmp_step_10/weights-0"]
    assert recorded["steps"] != json.loads(RECORDING.read_text())["steps"]
