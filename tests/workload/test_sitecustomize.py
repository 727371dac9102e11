"""workload/sitecustomize.py in a fresh Python, as NeMo RL's workers start with it on PYTHONPATH.

transformers is the test bed's stand-in (testbed/transformers_standin): it saves through
`transformers.tokenization_utils_base.PreTrainedTokenizerBase.save_pretrained`, where the real
library defines it, and records each writer. The whole path (the driver's script ships the hook,
NeMo RL's workers save under Ray) is in tests/program/test_ray_driver_under_ray.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from planning.ray import WORKLOAD_DIR
from testbed.node_fs import STANDIN_TRANSFORMERS

SAVE = """
import sys
from transformers import AutoTokenizer
print(AutoTokenizer.from_pretrained("m").save_pretrained(sys.argv[1]))
"""


def save(folder: Path, rank: str | None, hook: bool = True) -> subprocess.CompletedProcess[str]:
    paths = [str(WORKLOAD_DIR)] if hook else []
    env = {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": os.pathsep.join([*paths, str(STANDIN_TRANSFORMERS)]),
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
    save(folder, "0")
    writers = (folder / "writers").read_text().splitlines()
    assert [line.split(" ", 1)[1] for line in writers] == ["rank 0"]
    assert (folder / "tokenizer.json").exists()


def test_without_the_hook_every_rank_writes_as_nemo_rl_v0_7_0_does(tmp_path: Path) -> None:
    folder = tmp_path / "tmp_step_10" / "policy" / "tokenizer"
    for rank in ("0", "1", "2"):
        save(folder, rank, hook=False)
    assert len((folder / "writers").read_text().splitlines()) == 3


def test_other_saves_and_a_process_without_a_rank_are_untouched(tmp_path: Path) -> None:
    elsewhere = tmp_path / "exported" / "tokenizer"
    save(elsewhere, "3")
    assert (elsewhere / "tokenizer.json").exists()
    single = tmp_path / "tmp_step_2" / "policy" / "tokenizer"
    save(single, None)  # no RANK: a single process, rank 0
    assert (single / "tokenizer.json").exists()
