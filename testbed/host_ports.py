"""Host ports for the test bed's servers, never from the kernel's ephemeral range.

A port the kernel hands out (`bind(0)`) is free only until the next outgoing connection of any
process here takes it as its local port; the servers of the test bed bind their ports a moment to
seconds after they were chosen, while dozens of processes open connections. So every port is
taken in turn from a fixed range below the ephemeral one, and checked free before it is given.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

FIXED_PORTS = (12000, 20000)
"""Host ports the test bed's servers take (Ray nodes, etcd, the API server, Kueue's listeners):
below the Ray worker port blocks (testbed.ray_node) and, like them, outside the kernel's
ephemeral range."""
_next_fixed = [FIXED_PORTS[0] + os.getpid() * 97 % (FIXED_PORTS[1] - FIXED_PORTS[0])]
"""Where this process looks next: a start of its own (the agent and a test may allocate at once)."""


def ephemeral_ports(path: Path = Path("/proc/sys/net/ipv4/ip_local_port_range")) -> range:
    """The ports the kernel gives outgoing connections (Linux's default when unreadable)."""
    try:
        low, high = (int(v) for v in path.read_text().split())
    except (OSError, ValueError):
        low, high = 32768, 60999
    return range(low, high + 1)


def free_port() -> int:
    """A port nothing listens on, on any address (some servers bind 0.0.0.0), taken in turn from
    FIXED_PORTS, never from the kernel's ephemeral range."""
    low, high = FIXED_PORTS
    avoid = ephemeral_ports()
    for _ in range(high - low):
        port = _next_fixed[0]
        _next_fixed[0] = low + (port + 1 - low) % (high - low)
        if port in avoid:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("", port))
            except OSError:
                continue
        return port
    raise RuntimeError(f"no free port in {low}-{high - 1} for the test bed")
