"""Run the real `__main__.py` under Pulumi's mocks and collect what it registers."""

from __future__ import annotations

import asyncio
import runpy
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
from pulumi.runtime import settings as runtime_settings
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from preflight.recorder import SECRET_MASK, UNKNOWN_MASK, Record, RecordingMonitor
from pulumi_offline.fake_cloud import FakeCloud
from pulumi_offline.fake_reservations import CloudFixtures
from pulumi_offline.stackfiles import StackConfigValues


class ProgramError(Exception):
    """The program failed for a reason other than invalid config (a bug or engine rule)."""


@dataclass
class Export:
    """One stack output as the engine would store it."""

    value: Any
    secret: bool

    @property
    def shown(self) -> Any:
        """The value as preflight may print it."""
        return SECRET_MASK if self.secret else self.value


@dataclass
class ProgramRun:
    """Everything one mocked run produced."""

    project: str
    stack: str
    records: list[Record]
    exports: dict[str, Export] = field(default_factory=dict)

    def by_type(self, type_: str) -> list[Record]:
        """Records of one resource type, sorted by URN."""
        return [r for r in self.records if r.type == type_]


async def _resolve(value: Any) -> Export:
    output = pulumi.Output.from_input(value)
    resolved = await output.future(with_unknowns=True)
    secret = await output.is_secret()
    return Export(value=_mask_unknowns(resolved), secret=bool(secret))


def _mask_unknowns(value: Any) -> Any:
    """Unknown values (during a preview) as the `[unknown]` the report prints."""
    if isinstance(value, dict):
        return {k: _mask_unknowns(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask_unknowns(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return UNKNOWN_MASK


def _open_event_loop() -> None:
    """Give this thread an open event loop if it has none.

    Pulumi's runtime schedules its futures on the thread's current loop. A caller that ran
    `asyncio.run` before (a test, a tool that uses preflight as a library) leaves the thread with
    no loop, or a closed one, and the next run would fail inside Pulumi's registration.
    """
    try:
        loop = asyncio.get_event_loop_policy().get_event_loop()
    except RuntimeError:
        loop = None
    if loop is None or loop.is_closed():
        asyncio.set_event_loop(asyncio.new_event_loop())


def run_in_mocks(
    build: Callable[[], Any],
    *,
    project: str,
    stack: str,
    values: dict[str, str],
    secret_keys: list[str],
    fake: FakeCloud,
    preview: bool = False,
) -> tuple[list[Record], Any]:
    """Run `build` as a Pulumi program against `fake`; return the records and its result.

    `build` may return Outputs (or structures of them); they are resolved before returning,
    the way `pulumi.runtime.test` resolves a test's result. Exceptions from `build`
    propagate after outstanding registrations finish.
    """
    _open_event_loop()
    monitor = RecordingMonitor(fake)
    # A fresh root Stack per run: exports must not leak between stacks in one process.
    runtime_settings.ROOT.set(None)
    pulumi.runtime.set_all_config(dict(values), list(secret_keys))
    pulumi.runtime.set_mocks(
        monitor.mocks, project=project, stack=stack, preview=preview, monitor=monitor
    )
    result: dict[str, Any] = {}

    def program() -> None:
        value = build()
        result["value"] = _sync_await(pulumi.Output.from_input(value).future(with_unknowns=True))

    runtime_settings.SETTINGS.rpc_manager.clear()
    _sync_await(run_pulumi_func(program))
    records = sorted(monitor.records.values(), key=lambda r: r.urn)
    return records, result.get("value")


def run_program(
    main: Path,
    project: str,
    config: StackConfigValues,
    *,
    region: str = "",
    zone: str = "",
    preview: bool = True,
    previous_outputs: dict[str, Any] | None = None,
    fixtures: CloudFixtures | None = None,
) -> ProgramRun:
    """Execute `main` once against FakeCloud; raise whatever the program raises.

    `preview` (the default) answers as a first `pulumi preview` of a new stack does: values
    the cloud computes are unknown. `preview=False` makes every value known, as after `up`.
    `previous_outputs` are the stack's outputs as its last deployment left them (what the
    program reads back about itself); none, as for a stack never deployed, by default.
    `fixtures` are the reservations and clusters the program's reads find (none: every
    read is a 404).
    """
    fake = FakeCloud(
        config.values.get("gcp:project", "fake-project"),
        region,
        zone,
        fixtures=fixtures,
        preview=preview,
        previous_outputs=previous_outputs,
    )
    exports: dict[str, Export] = {}

    def program() -> None:
        runpy.run_path(str(main), run_name="__main__")
        root = runtime_settings.get_root_resource()
        outputs: dict[str, Any] = getattr(root, "outputs", {})
        for key, value in outputs.items():
            exports[key] = _sync_await(_resolve(value))

    records, _ = run_in_mocks(
        program,
        project=project,
        stack=config.stack,
        values=config.values,
        secret_keys=config.secret_keys,
        fake=fake,
        preview=preview,
    )
    _check_default_providers(records, config.disabled_default_providers)
    return ProgramRun(project=project, stack=config.stack, records=records, exports=exports)


def _check_default_providers(records: list[Record], disabled: tuple[str, ...]) -> None:
    """Fail like the engine does when a resource needs a default provider the stack disabled."""
    for record in records:
        if not record.custom or record.type.startswith("pulumi:providers:"):
            continue
        package = record.type.split(":", 1)[0]
        if record.provider is None and (package in disabled or "*" in disabled):
            raise ProgramError(
                f"{record.type} {record.name!r} has no explicit provider, and the stack disables"
                f" the default {package} provider (pulumi:disable-default-providers);"
                " pass opts=ResourceOptions(provider=...)"
            )
