"""preflight's mocked runs work on a thread whose event loop another caller has closed."""

from __future__ import annotations

import asyncio

import pulumi

from tests.harness import run_component


async def _nothing() -> None:
    return None


def test_a_run_after_asyncio_run_on_the_same_thread_registers_its_resources() -> None:
    """`asyncio.run` leaves the thread with no current loop; Pulumi's runtime needs one (the
    stand-in's tests before a mocked run failed with "There is no current event loop")."""
    asyncio.run(_nothing())
    records, value = run_component(
        lambda: pulumi.ComponentResource("nemo-rl-gke:test:Empty", "after-asyncio-run")
    )
    assert list(records) == ["after-asyncio-run"]
    assert value is not None


def test_a_run_on_a_closed_loop_gets_a_fresh_one() -> None:
    closed = asyncio.new_event_loop()
    closed.close()
    asyncio.set_event_loop(closed)
    records, _ = run_component(
        lambda: pulumi.ComponentResource("nemo-rl-gke:test:Empty", "after-a-closed-loop")
    )
    assert list(records) == ["after-a-closed-loop"]
    assert not asyncio.get_event_loop_policy().get_event_loop().is_closed()
