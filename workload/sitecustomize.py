"""nemo-rl-gke's guard inside NeMo RL's processes: one rank writes a checkpoint's tokenizer.

NeMo RL v0.7.0 saves the policy's tokenizer into every checkpoint (`<save>/policy/tokenizer`)
from every training rank at once: 16 processes on two nodes write the same files on the shared
volume. Upstream's fix (NVIDIA-NeMo/RL#3504, after v0.7.0, for a 32-rank save that hung for
35 hours on NFS) lets rank 0 write it alone. This does the same for the pinned image without
changing it: the driver's script puts this folder first on PYTHONPATH, NeMo RL hands the
driver's environment to every worker, and Python imports `sitecustomize` at start-up. Once
`transformers.tokenization_utils_base` is imported, a tokenizer's `save_pretrained` into a
checkpoint's `policy/tokenizer` folder (a `tmp_step_N` NeMo RL is still writing) does nothing
on any rank but 0; every other save is untouched. The rank is torch.distributed's, or RANK
(NeMo RL sets it for each worker) before the group exists. Model and optimizer saves, which
are collective, are not touched. Standard library only; it imports nothing until transformers
is imported.
"""

from __future__ import annotations

import importlib.abc
import os
import re
import sys
from types import ModuleType
from typing import Any

TARGET = "transformers.tokenization_utils_base"
CHECKPOINT_TOKENIZER = re.compile(r"(^|/)tmp_step_\d+/policy/tokenizer/?$")
"""Where NeMo RL saves a checkpoint's tokenizer (its unfinished save's folder)."""
MARK = "_nemo_rl_gke_rank0_tokenizer"


def rank() -> int:
    """This process's training rank: torch.distributed's once its group exists, else RANK."""
    dist = sys.modules.get("torch.distributed")
    try:
        if dist is not None and dist.is_available() and dist.is_initialized():
            return int(dist.get_rank())
    except Exception:  # noqa: S110 - a group being torn down: fall back to the environment
        pass
    try:
        return int(os.environ.get("RANK", "0") or 0)
    except ValueError:
        return 0


def guard(module: ModuleType) -> None:
    """Wrap PreTrainedTokenizerBase.save_pretrained (once)."""
    base: Any = getattr(module, "PreTrainedTokenizerBase", None)
    original = getattr(base, "save_pretrained", None)
    if original is None or getattr(original, MARK, False):
        return

    def save_pretrained(self: Any, save_directory: Any, *args: Any, **kwargs: Any) -> Any:
        if CHECKPOINT_TOKENIZER.search(os.fspath(save_directory)) and rank() != 0:
            return ()
        return original(self, save_directory, *args, **kwargs)

    setattr(save_pretrained, MARK, True)
    save_pretrained.__doc__ = original.__doc__
    base.save_pretrained = save_pretrained


def _guarded(execute: Any) -> Any:
    """A loader's exec_module that guards what it executed."""

    def exec_module(module: ModuleType) -> None:
        execute(module)
        guard(module)

    return exec_module


class _Finder(importlib.abc.MetaPathFinder):
    """Guards the module right after Python executes it, wherever it is found."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != TARGET:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader.exec_module = _guarded(spec.loader.exec_module)  # type: ignore[method-assign]
                return spec
        return None


if TARGET in sys.modules:
    guard(sys.modules[TARGET])
else:
    sys.meta_path.insert(0, _Finder())
