"""The test bed's servers take host ports the kernel never gives an outgoing connection."""

from __future__ import annotations

import re
import socket
from pathlib import Path

import pytest

from testbed import host_ports
from testbed.host_ports import FIXED_PORTS, ephemeral_ports, free_port
from testbed.ray_node import WORKER_PORT_BASE, allocate


def test_ports_are_distinct_and_outside_the_kernel_s_ephemeral_range() -> None:
    """A port from `bind(0)` is free only until another process's outgoing connection takes it
    as its local port; Ray binds a node's ports seconds later."""
    ephemeral = ephemeral_ports()
    ports = [free_port() for _ in range(300)]
    assert len(set(ports)) == len(ports)
    assert not [p for p in ports if p in ephemeral]
    assert all(FIXED_PORTS[0] <= p < FIXED_PORTS[1] for p in ports)
    head = allocate("127.102.0.9", head=True, index=3)
    low, high = head.worker_ports
    assert low >= WORKER_PORT_BASE
    assert high < ephemeral.start
    assert not set(head.ports.values()) & set(range(low, high + 1))


def test_a_port_something_listens_on_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as busy:
        busy.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        monkeypatch.setattr(host_ports, "_next_fixed", [13000])
        start = free_port()
        busy.bind(("127.0.0.1", start))
        busy.listen()
        monkeypatch.setattr(host_ports, "_next_fixed", [start])
        assert free_port() == start + 1


def test_the_kernel_s_range_is_read_and_defaults_to_linux_s(tmp_path: Path) -> None:
    table = tmp_path / "ip_local_port_range"
    table.write_text("15000\t15999\n")
    assert ephemeral_ports(table) == range(15000, 16000)
    assert ephemeral_ports(tmp_path / "missing") == range(32768, 61000)


def test_a_range_the_kernel_widened_over_ours_is_avoided(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wide = tmp_path / "ip_local_port_range"
    wide.write_text("16000 60999\n")
    monkeypatch.setattr(host_ports, "ephemeral_ports", lambda: ephemeral_ports(wide))
    monkeypatch.setattr(host_ports, "_next_fixed", [15998])
    assert [free_port() for _ in range(3)] == [15998, 15999, 12000]


def test_no_server_of_the_test_bed_asks_the_kernel_for_a_port() -> None:
    """etcd, the API server and Kueue's listeners had their ports from `bind(0)`: the same race
    the Ray nodes had. Every port the test bed hands a server comes from free_port."""
    testbed = Path(host_ports.__file__).parent
    asking = [
        f"{path.name}:{number}"
        for path in sorted(testbed.glob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"\.bind\(\([^)]*,\s*0\)\)", line)
    ]
    assert asking == []
