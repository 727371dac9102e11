"""torch.cuda of the test bed's torch stand-in: one GPU per process, where Ray gave one."""

from __future__ import annotations

import os

CLOCK = [0.0]
"""Virtual seconds: what the collectives would have taken on the GPU."""
_device: list[int] = []


def set_device(index: int) -> None:
    """As CUDA: a process sees only CUDA_VISIBLE_DEVICES (Ray sets one id for num_gpus=1)."""
    visible = [d for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d]
    if index >= len(visible):
        raise RuntimeError(
            f"CUDA error: invalid device ordinal {index} (CUDA_VISIBLE_DEVICES="
            f"{os.environ.get('CUDA_VISIBLE_DEVICES')!r}; torch stand-in)"
        )
    _device[:] = [index]


def current_device() -> int:
    """The device set (an error before set_device)."""
    if not _device:
        raise RuntimeError("torch stand-in: no device set (torch.cuda.set_device first)")
    return _device[0]


def synchronize() -> None:
    """Wait for the GPU: the virtual clock is always up to date."""
    current_device()


class Event:
    """A CUDA event on the virtual clock."""

    def __init__(self, enable_timing: bool = False) -> None:
        self.timing = enable_timing
        self.at = 0.0

    def record(self) -> None:
        """Mark the virtual clock's time."""
        self.at = CLOCK[0]

    def elapsed_time(self, end: Event) -> float:
        """Milliseconds, as CUDA reports them."""
        if not (self.timing and end.timing):
            raise RuntimeError("Both events must be created with enable_timing=True")
        return (end.at - self.at) * 1000


class nccl:  # noqa: N801 - torch.cuda.nccl's name
    """torch.cuda.nccl: the NCCL torch bundles (NeMo RL v0.7.0: nvidia-nccl-cu13 2.28.9)."""

    @staticmethod
    def version() -> tuple[int, int, int]:
        """NCCL's version as torch reports it."""
        return (2, 28, 9)
