"""torch.distributed of the test bed's torch stand-in: a real group over sockets, NCCL's log.

`init_process_group("nccl", init_method="tcp://HOST:PORT", rank=, world_size=, timeout=)`:
rank 0 listens on HOST:PORT and waits for every other rank to connect and say its rank; the
group forms when all have, or fails at the timeout naming how many came. Each collective sends
every rank's values to rank 0 and back, so a rank that is gone fails the others.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from . import cuda

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from testbed.gate_standins import Scenario

NCCL_VERSION = "2.28.9+cuda13.0"
GIB_VERSION = "v1.1.1"
"""The gIB plugin's version the stand-in's start-up line names (Google's NCCL/gIB release
notes list v1.1.1 for NCCL 2.28)."""
LATENCY_SECONDS = 20e-6
_group: dict[str, Any] = {}


class DistBackendError(RuntimeError):
    """torch.distributed.DistBackendError."""


def _scenario() -> Scenario:
    path = os.environ.get("GATE_STANDIN_SCENARIO", "")
    return Scenario.from_json(Path(path).read_text()) if path else Scenario()


def _nccl_log(line: str, *, warn: bool = False) -> None:
    """One line of NCCL's debug log, in NCCL's format, where NCCL_DEBUG=INFO sends it."""
    if os.environ.get("NCCL_DEBUG", "").upper() not in ("INFO", "TRACE") and not warn:
        return
    target = os.environ.get("NCCL_DEBUG_FILE", "")
    host, pid = socket.gethostname(), os.getpid()
    text = (
        f"{host}:{pid}:{pid} [{cuda.current_device()}] NCCL {'WARN' if warn else 'INFO'} {line}\n"
    )
    if target:
        with open(target.replace("%h", host).replace("%p", str(pid)), "a") as log:
            log.write(text)
    else:
        sys.stdout.write(text)


def _network() -> str:
    """The network NCCL would use: gIB with its plugin, sockets without NCCL_NET."""
    wanted = os.environ.get("NCCL_NET", "")
    plugin = os.environ.get("NCCL_NET_PLUGIN", "")
    if wanted == "gIB":
        if plugin and Path(plugin).is_file():
            _nccl_log(f"NET/Plugin: Loaded net plugin gIB ({plugin})")
            _nccl_log(f"NET/gIB : Initializing gIB {GIB_VERSION}")
            return "gIB"
        _nccl_log("NET/Plugin: Could not find: libnccl-net.so")
        _nccl_log("Failed to initialize any NET plugin", warn=True)
        raise DistBackendError(
            "NCCL error: invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version"
            f" {NCCL_VERSION.split('+')[0]}\nLast error:\nFailed to initialize any NET plugin"
        )
    if wanted:
        raise DistBackendError(f"NCCL_NET={wanted}: no such network (torch stand-in)")
    _nccl_log("NET/IB : No device found.")
    _nccl_log("Initialized NET plugin Socket")
    return "Socket"


def _send(conn: socket.socket, value: Any) -> None:
    conn.sendall(json.dumps(value).encode() + b"\n")


def _receive(conn: socket.socket, deadline: float) -> Any:
    data = b""
    while not data.endswith(b"\n"):
        conn.settimeout(max(0.1, deadline - time.monotonic()))
        chunk = conn.recv(65536)
        if not chunk:
            raise DistBackendError("a peer of the group closed its connection (torch stand-in)")
        data += chunk
    return json.loads(data)


def init_process_group(
    backend: str, *, init_method: str, rank: int, world_size: int, timeout: timedelta
) -> None:
    """Form the group over the store's sockets (see the module's docstring)."""
    if backend != "nccl" or not init_method.startswith("tcp://"):
        raise ValueError(
            f"torch stand-in: only nccl over tcp:// is expected ({backend}, {init_method})"
        )
    host, port = init_method[len("tcp://") :].rsplit(":", 1)
    deadline = time.monotonic() + timeout.total_seconds()
    peers: dict[int, socket.socket] = {}
    if rank == 0:
        server = socket.create_server((host, int(port)))
        while len(peers) < world_size - 1:
            server.settimeout(max(0.1, deadline - time.monotonic()))
            try:
                conn, _ = server.accept()
            except TimeoutError:
                raise DistBackendError(
                    f"timed out after {timeout} waiting for {world_size - 1 - len(peers)} of"
                    f" {world_size} ranks at {host}:{port} (torch stand-in)"
                ) from None
            peers[int(_receive(conn, deadline))] = conn
        server.close()
        for conn in peers.values():
            _send(conn, "formed")
    else:
        while True:
            try:
                conn = socket.create_connection((host, int(port)), timeout=5)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise DistBackendError(f"rank {rank}: no store at {host}:{port}") from None
                time.sleep(0.2)
        _send(conn, rank)
        if _receive(conn, deadline) != "formed":
            raise DistBackendError(f"rank {rank}: the group did not form")
        peers[0] = conn
    _group.update(rank=rank, world=world_size, peers=peers, deadline=timeout, network="")


def _communicator() -> None:
    """NCCL's communicator, formed at the first collective as torch does without `device_id`:
    NCCL's start-up lines, and its error when the network it is told to use cannot load."""
    if _group["network"]:
        return
    _nccl_log("test bed stand-in: these lines are written by the torch stand-in, not by NCCL")
    _nccl_log(f"NCCL version {NCCL_VERSION}")
    _group["network"] = _network()
    _nccl_log(f"Using network {_group['network']}")
    rank, world, device = _group["rank"], _group["world"], cuda.current_device()
    if _group["network"] == "gIB" and world > 1:
        # A channel to the next rank over the network (NCCL transport/net.cc's line); without
        # GPUDirect RDMA (the scenario's `gdrdma` off) NCCL bounces through host memory.
        rdma = "/GDRDMA" if _scenario().gdrdma else ""
        _nccl_log(
            f"Channel 00/0 : {rank}[{device}] -> {(rank + 1) % world}[{device}] [send] via"
            f" NET/gIB/{device}{rdma}"
        )
    _nccl_log(f"ncclCommInitRankConfig rank {rank} nranks {world} - Init COMPLETE")


def _exchange(value: float) -> list[float]:
    """Every rank's value, in rank order, on every rank."""
    rank, peers = _group["rank"], _group["peers"]
    deadline = time.monotonic() + _group["deadline"].total_seconds()
    if rank == 0:
        values = {0: value}
        for peer, conn in peers.items():
            values[peer] = float(_receive(conn, deadline))
        ordered = [values[r] for r in range(_group["world"])]
        for conn in peers.values():
            _send(conn, ordered)
        return ordered
    _send(peers[0], value)
    return [float(v) for v in _receive(peers[0], deadline)]


def _spend(nbytes: int, factor: float, collective: str) -> None:
    busbw = _scenario().busbw_8g.get(collective, 100.0)
    cuda.CLOCK[0] += LATENCY_SECONDS + nbytes * factor / (busbw * 1e9)


def all_reduce(tensor: Any) -> None:
    """Sum over the ranks, in place."""
    _communicator()
    world = _group["world"]
    tensor.fill_(sum(_exchange(tensor.chunks[0])))
    _spend(tensor.nbytes, 2 * (world - 1) / world, "all_reduce")


def all_gather_into_tensor(output: Any, part: Any) -> None:
    """Every rank's part, in rank order."""
    _communicator()
    world = _group["world"]
    if output.count != part.count * world:
        raise ValueError("output tensor size must be equal to world_size times input tensor size")
    output.chunks = _exchange(part.chunks[0])
    _spend(output.nbytes, (world - 1) / world, "all_gather")


def destroy_process_group() -> None:
    """Close the group's connections."""
    for conn in _group.get("peers", {}).values():
        conn.close()
    _nccl_log(f"comm rank {_group.get('rank')} nranks {_group.get('world')} - Destroy COMPLETE")
    _group.clear()
