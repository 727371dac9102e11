"""Careless and hostile `--reservations` descriptions and `--previous` reports: each stops
preflight with exit code 2 and one line naming the file and the key, before the program runs;
never a traceback, never a hang."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from preflight.cli import main

RESERVATION = {
    "name": "res-a",
    "zone": "us-central1-b",
    "machineType": "a4-highgpu-8g",
    "accelerators": [{"type": "nvidia-b200", "count": 8}],
    "count": 2,
}
VERSIONS = {"validMasterVersions": ["1.35"], "validNodeVersions": ["1.35"]}
RESERVATIONS: dict[str, tuple[Any, str]] = {
    "negative count": ({"reservations": [{**RESERVATION, "count": -2}]}, "reservations.0.count"),
    "boolean count": ({"reservations": [{**RESERVATION, "count": True}]}, "reservations.0.count"),
    "text for a count": (
        {
            "clusters": [
                {
                    "name": "c",
                    "location": "l",
                    "pools": [{"name": "p", "nodes": "2", "zones": ["z"]}],
                }
            ]
        },
        "clusters.0.pools.0.nodes",
    ),
    "map for a list": ({"reservations": {"name": "res-a"}}, "reservations: Input should be"),
    "list for the file": ([1, 2, 3], "(the whole file)"),
    "junk version": (
        {"engineVersions": {**VERSIONS, "validNodeVersions": ["latest!"]}},
        "engineVersions.validNodeVersions: not a GKE version: 'latest!'",
    ),
    "junk channel version": (
        {"engineVersions": {**VERSIONS, "channelLatest": {"REGULAR": "banana"}}},
        "engineVersions.channelLatest: not a GKE version",
    ),
    "unknown channel": (
        {"engineVersions": {**VERSIONS, "channelLatest": {"WEEKLY": "1.35"}}},
        "'WEEKLY' is not a release channel",
    ),
}


def _report(tmp_path: Path) -> dict[str, Any]:
    return {
        "stack": "dev",
        "mode": "preview",
        "resources": [{"urn": "urn:a", "type": "t", "name": "a", "inputs": {}}],
        "outputs": {"replacementConfig": {"cluster.minVersion": "1.35", "protect": False}},
    }


def _set(path: list[str | int], value: Any) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        target: Any = doc
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value

    return change


REPORTS: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "config as a list": (
        _set(["outputs", "replacementConfig"], [1]),
        "outputs.replacementConfig: Input should be an object",
    ),
    "text for a number": (
        _set(["outputs", "replacementConfig", "lustre.capacityGib"], "big"),
        "outputs.replacementConfig.lustre.capacityGib: Input should be a valid integer",
    ),
    "a version that is no version": (
        _set(["outputs", "replacementConfig", "cluster.minVersion"], "latest"),
        "outputs.replacementConfig.cluster.minVersion: not a GKE version: 'latest'",
    ),
    "number for a version": (
        _set(["outputs", "replacementConfig", "gpu.version"], 1.35),
        "outputs.replacementConfig.gpu.version: Input should be a valid string",
    ),
    "inputs as a list": (_set(["resources", 0, "inputs"], [1]), "resources.0.inputs"),
    "resources as a map": (_set(["resources"], {}), "resources: Input should be a valid array"),
    "text for protect": (_set(["resources", 0, "protect"], "yes"), "resources.0.protect"),
    "boolean for a list": (
        _set(["outputs", "replacementConfig", "network.rdmaCidrs"], True),
        "outputs.replacementConfig.network.rdmaCidrs",
    ),
}


def _refused(argv: list[str]) -> str:
    out, err = io.StringIO(), io.StringIO()
    code = main(["--stack", "dev", "--quiet", *argv], out, err)
    text = err.getvalue()
    assert code == 2, text
    assert out.getvalue() == ""
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    assert "Traceback" not in text
    return lines[0]


@pytest.mark.parametrize("name", sorted(RESERVATIONS))
def test_a_hostile_reservations_file_is_refused_naming_the_key(name: str, tmp_path: Path) -> None:
    doc, expected = RESERVATIONS[name]
    path = tmp_path / "reservations.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    line = _refused(["--reservations", str(path)])
    assert f"{path}: " in line
    assert expected in line


@pytest.mark.parametrize("name", sorted(REPORTS))
def test_a_hostile_previous_report_is_refused_naming_the_key(name: str, tmp_path: Path) -> None:
    change, expected = REPORTS[name]
    doc = _report(tmp_path)
    change(doc)
    path = tmp_path / "previous.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    line = _refused(["--previous", str(path)])
    assert f"{path}: " in line
    assert expected in line


@pytest.mark.parametrize("flag", ["--reservations", "--previous"])
def test_deep_nesting_a_folder_and_a_device_end_in_one_line(flag: str, tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200_000, encoding="utf-8")
    assert "recursion" in _refused([flag, str(deep)])
    folder = tmp_path / "folder.json"
    folder.mkdir()
    assert "not a regular file" in _refused([flag, str(folder)])
    if Path("/dev/zero").exists() and flag == "--reservations":
        assert "not a regular file" in _refused([flag, "/dev/zero"])


def test_a_report_of_this_program_is_read(tmp_path: Path) -> None:
    """The model takes what preflight itself writes (else the refusals above prove nothing)."""
    report = tmp_path / "dev.json"
    out, err = io.StringIO(), io.StringIO()
    assert main(["--stack", "dev", "--quiet", "--json", str(report)], out, err) == 0, err.getvalue()
    out, err = io.StringIO(), io.StringIO()
    code = main(["--stack", "dev", "--quiet", "--previous", str(report)], out, err)
    assert code == 0, err.getvalue()
