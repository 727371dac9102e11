"""Shared test helpers: run components and stacks through the preflight engine."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

from preflight.cli import Result, preflight
from preflight.mock_run import run_in_mocks
from preflight.recorder import Record
from pulumi_offline.fake_cloud import FakeCloud

REPO = Path(__file__).resolve().parent.parent
PROJECT = "nemo-rl-gke"
STACKS = ("dev", "b200", "h200")


def run_component(
    build: Callable[[], Any], *, project: str = "test-project", region: str = "us-central1"
) -> tuple[dict[str, Record], Any]:
    """Build one component under mocks; return its records keyed by logical name."""
    records, value = run_in_mocks(
        build,
        project=PROJECT,
        stack="test",
        values={"gcp:project": project, "gcp:region": region},
        secret_keys=[],
        fake=FakeCloud(project, region, f"{region}-b"),
    )
    by_name = {r.name: r for r in records}
    assert len(by_name) == len(records), "logical names must be unique"
    return by_name, value


def stack_data(stack: str) -> dict[str, Any]:
    """The committed stack file as data."""
    data = yaml.safe_load((REPO / f"Pulumi.{stack}.yaml").read_text())
    assert isinstance(data, dict)
    return data


def write_stack(tmp_path: Path, stack: str, config: Mapping[str, Any]) -> Path:
    """Write a stack file named Pulumi.<stack>.yaml under tmp_path."""
    path = tmp_path / f"Pulumi.{stack}.yaml"
    path.write_text(yaml.safe_dump({"config": dict(config)}, sort_keys=False))
    return path


def variant(base: str, changes: Mapping[str, Any], drop: tuple[str, ...] = ()) -> dict[str, Any]:
    """A committed stack's config with top-level keys replaced or removed (dropped, or given
    as None)."""
    config = dict(stack_data(base)["config"])
    for key in drop:
        config.pop(key, None)
    config.update(changes)
    return {k: v for k, v in config.items() if v is not None}


def run_stack(
    stack: str,
    tmp_path: Path | None = None,
    config: Mapping[str, Any] | None = None,
    policy_config: Mapping[str, Any] | None = None,
    *,
    known: bool = True,
) -> Result:
    """Preflight a committed stack, or a variant of it written to tmp_path.

    `known=True` (the default here) resolves every computed value, so tests can assert on
    the inputs the program sends after the cloud answered; `known=False` is a first preview,
    as `python -m preflight` runs by default.
    """
    stack_file = REPO / f"Pulumi.{stack}.yaml"
    policy_path = None
    if config is not None or policy_config is not None:
        assert tmp_path is not None, "variants are written to tmp_path"
    if config is not None and tmp_path is not None:
        stack_file = write_stack(tmp_path, stack, config)
    if policy_config is not None and tmp_path is not None:
        policy_path = tmp_path / "policy.json"
        policy_path.write_text(json.dumps(policy_config))
    return preflight(stack_file, project_dir=REPO, policy_config=policy_path, known=known)


def by_name(result: Result) -> dict[str, Record]:
    """Records of a run keyed by logical name (names are unique across the program)."""
    records = {r.name: r for r in result.run.records}
    assert len(records) == len(result.run.records), "logical names must be unique"
    return records


def children(result: Result, component: str) -> dict[str, Record]:
    """Direct children of the component with logical name `component`."""
    parent = by_name(result)[component].urn
    return {r.name: r for r in result.run.records if r.parent == parent}
