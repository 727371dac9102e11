"""transformers as NeMo RL's workers use it to save a tokenizer: the test bed's stand-in (NOT
transformers; no tokenizer is loaded). `AutoTokenizer.from_pretrained(name)` gives a tokenizer
whose `save_pretrained(folder)` writes the files a tokenizer save leaves and records, in the
folder's `writers` file, the process that wrote them, so a test sees how many ranks wrote. The
class it saves through is `transformers.tokenization_utils_base.PreTrainedTokenizerBase`, as in
transformers; it is on the PYTHONPATH of every Ray pod of the test bed (testbed.node_fs)."""

from __future__ import annotations

from .tokenization_utils_base import PreTrainedTokenizerBase


class PreTrainedTokenizerFast(PreTrainedTokenizerBase):
    """What AutoTokenizer gives for the models NeMo RL trains."""


class AutoTokenizer:
    """transformers.AutoTokenizer."""

    @staticmethod
    def from_pretrained(name: str) -> PreTrainedTokenizerFast:
        """A tokenizer of `name` (nothing is read: the stand-in has no files)."""
        return PreTrainedTokenizerFast(name)


__all__ = ["AutoTokenizer", "PreTrainedTokenizerBase", "PreTrainedTokenizerFast"]
