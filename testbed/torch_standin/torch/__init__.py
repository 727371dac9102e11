"""torch as the job NCCL gate uses it: the test bed's stand-in (NOT PyTorch: no GPU, no NCCL).

The NeMo RL image's Python has torch with the NCCL it bundles; the test bed's Ray pods have no
GPU, so their Python finds this instead (testbed.node_fs puts it on PYTHONPATH). It does what
the gate's ranks need, for real where it can: `torch.distributed.init_process_group` with a
`tcp://` init method forms the group over real sockets between the Ray actors (rank 0 listens,
every other rank connects; a rank missing at the timeout fails), and the collectives exchange
each rank's values over them, so the sums and gathered chunks are the ranks' own. What it cannot
do it takes from the test bed: NCCL's network is gIB only where NCCL_NET=gIB and NCCL_NET_PLUGIN
names a file (the node's gIB folder), otherwise NCCL's `Failed to initialize any NET plugin`;
the time a collective takes is its bytes over the scenario's bus bandwidth
(testbed.gate_standins.Scenario), read by CUDA events on a virtual clock. NCCL_DEBUG=INFO
writes NCCL's log lines to NCCL_DEBUG_FILE, with a line saying they come from this stand-in.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from . import cuda, distributed

__version__ = "2.11.0+cu130"
__all__ = ["Tensor", "cuda", "distributed", "empty", "full", "ones"]

sys.stderr.write("torch (test bed stand-in: no GPU, no NCCL; sockets between the ranks)\n")


@dataclass
class Tensor:
    """A 1-D float tensor of `count` elements made of equal chunks, each one value."""

    count: int
    chunks: list[float] = field(default_factory=lambda: [0.0])

    def fill_(self, value: float) -> Tensor:
        """Every element `value`."""
        self.chunks = [float(value)]
        return self

    def double(self) -> Tensor:
        """The same values (the stand-in keeps them exact)."""
        return self

    def sum(self) -> _Scalar:
        """The sum of every element."""
        return _Scalar(self.count // len(self.chunks) * sum(self.chunks))

    @property
    def nbytes(self) -> int:
        """Bytes of float32 elements."""
        return self.count * 4


@dataclass
class _Scalar:
    value: float

    def item(self) -> float:
        return self.value


def _on_gpu(device: str) -> None:
    if device != "cuda":
        raise RuntimeError(f"torch stand-in: only device='cuda' is expected, got {device!r}")
    cuda.current_device()


def ones(count: int, *, device: str) -> Tensor:
    """`count` ones on the GPU."""
    _on_gpu(device)
    return Tensor(count, [1.0])


def full(shape: tuple[int, ...], value: float, *, device: str) -> Tensor:
    """`shape[0]` times `value` on the GPU."""
    _on_gpu(device)
    return Tensor(shape[0], [float(value)])


def empty(count: int, *, device: str) -> Tensor:
    """`count` elements on the GPU."""
    _on_gpu(device)
    return Tensor(count, [0.0])
