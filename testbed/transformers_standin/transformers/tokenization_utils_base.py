"""transformers.tokenization_utils_base of the test bed's stand-in."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.stderr.write("transformers (test bed stand-in: saves a tokenizer's files, loads nothing)\n")


class PreTrainedTokenizerBase:
    """The base of every tokenizer: where `save_pretrained` is defined in transformers."""

    def __init__(self, name: str) -> None:
        self.name_or_path = name

    def save_pretrained(self, save_directory: str | os.PathLike[str]) -> tuple[str, ...]:
        """Write the tokenizer's files into `save_directory`; record the writer's pid."""
        folder = Path(save_directory)
        folder.mkdir(parents=True, exist_ok=True)
        written = []
        for name in ("tokenizer_config.json", "tokenizer.json"):
            (folder / name).write_text(json.dumps({"name_or_path": self.name_or_path}))
            written.append(str(folder / name))
        with open(folder / "writers", "a") as writers:
            writers.write(f"{os.getpid()} rank {os.environ.get('RANK', '?')}\n")
        return tuple(written)
