"""workload/sitecustomize.py in a fresh Python, as NeMo RL's workers start with it on PYTHONPATH.

With the real transformers (5.17.0, a dev dependency; the version the device machine's image
carries) and a real fast tokenizer built in memory (tokenizers' WordLevel model), saved the way
NeMo RL saves it. The whole path (the driver's script ships the hook, NeMo RL's workers save
under Ray) is in tests/program/test_ray_driver_under_ray.py, with the test bed's stand-in of
transformers, which records each writer.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from planning.ray import WORKLOAD_DIR

SAVE = """
import sys
from tokenizers import Tokenizer, models
from transformers import PreTrainedTokenizerFast
words = Tokenizer(models.WordLevel({"a": 0, "[UNK]": 1}, unk_token="[UNK]"))
print(PreTrainedTokenizerFast(tokenizer_object=words).save_pretrained(sys.argv[1]))
"""


def save(folder: Path, rank: str | None, hook: bool = True) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ["PATH"],
        **({"PYTHONPATH": str(WORKLOAD_DIR)} if hook else {}),
        **({"RANK": rank} if rank is not None else {}),
    }
    return subprocess.run(
        [sys.executable, "-c", SAVE, str(folder)],
        env=env, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip


@pytest.mark.parametrize("rank", ["1", "15"])
def test_only_rank_0_writes_a_checkpoint_s_tokenizer(tmp_path: Path, rank: str) -> None:
    folder = tmp_path / "checkpoints" / "tmp_step_10" / "policy" / "tokenizer"
    skipped = save(folder, rank)
    assert skipped.stdout.strip() == "()"
    assert not folder.exists()
    written = save(folder, "0")
    assert sorted(p.name for p in folder.iterdir()) == ["tokenizer.json", "tokenizer_config.json"]
    assert "tokenizer.json" in written.stdout


def test_without_the_hook_any_rank_writes_as_nemo_rl_v0_7_0_lets_it(tmp_path: Path) -> None:
    folder = tmp_path / "tmp_step_10" / "policy" / "tokenizer"
    save(folder, "2", hook=False)
    assert (folder / "tokenizer.json").exists()


def test_other_saves_and_a_process_without_a_rank_are_untouched(tmp_path: Path) -> None:
    elsewhere = tmp_path / "exported" / "tokenizer"
    save(elsewhere, "3")
    assert (elsewhere / "tokenizer.json").exists()
    single = tmp_path / "tmp_step_2" / "policy" / "tokenizer"
    save(single, None)  # no RANK: a single process, rank 0
    assert (single / "tokenizer.json").exists()
