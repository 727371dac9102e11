"""Read the version of a local Helm chart (a folder or a .tgz) without Helm, within bounds.

`ray.chartPath` is a path from the stack file: it may name anything on the machine that runs
`pulumi up` - a device, a FIFO, a huge or hostile archive. Only a regular file or folder is
opened, an archive of at most MAX_ARCHIVE_BYTES and a Chart.yaml of at most MAX_CHART_BYTES are
read, and a Chart.yaml that is not YAML (or nests without end) is simply "not a chart".
"""

from __future__ import annotations

import stat
import tarfile
from pathlib import Path
from typing import Any, Final

import yaml

from stack_config.errors import ConfigProblem, show, show_text

MAX_ARCHIVE_BYTES: Final = 16 << 20
"""The kuberay-operator chart with its CRDs packs into well under 1 MiB."""
MAX_CHART_BYTES: Final = 64 << 10
MAX_MEMBERS: Final = 10_000


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except (OSError, ValueError):
        return False


def _chart_data(raw: bytes) -> Any:
    if len(raw) > MAX_CHART_BYTES:
        return None
    try:
        return yaml.safe_load(raw.decode("utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError, RecursionError, ValueError):
        return None


def _from_archive(chart: Path) -> Any:
    if chart.stat().st_size > MAX_ARCHIVE_BYTES or not tarfile.is_tarfile(chart):
        return None
    with tarfile.open(chart) as archive:
        for count, member in enumerate(archive):
            if count >= MAX_MEMBERS:
                return None
            top_level_chart = member.name.count("/") == 1 and member.name.endswith("/Chart.yaml")
            if member.isfile() and top_level_chart:
                handle = archive.extractfile(member)
                if handle is None:
                    return None
                return _chart_data(handle.read(MAX_CHART_BYTES + 1))
    return None


def local_chart_version(path: str) -> str | None:
    """`version` of the chart's Chart.yaml, or None when `path` holds no chart."""
    try:
        chart = Path(path).expanduser()
        if chart.is_dir():
            file = chart / "Chart.yaml"
            if not _regular(file):
                return None
            with file.open("rb") as handle:
                data = _chart_data(handle.read(MAX_CHART_BYTES + 1))
        elif _regular(chart):
            data = _from_archive(chart)
        else:
            return None
    except (OSError, ValueError, RuntimeError, tarfile.TarError, EOFError):
        return None
    version = data.get("version") if isinstance(data, dict) else None
    return str(version) if version is not None else None


def check_pinned_chart(
    value: str, pinned: str, *, key: str, chart: str, name: str, pin: str, note: str = ""
) -> None:
    """Refuse a local chart that is no chart or not the pinned version: `key` is the config
    key, `chart` the chart's name, `name` what it installs, `pin` the versions table's entry
    and `note` what the pin protects. Path and version are shown escaped."""
    found = local_chart_version(value)
    if found is None:
        raise ConfigProblem(
            (),
            f"{show(value)} is not a Helm chart (no Chart.yaml)",
            f"point {key} at a {chart} chart folder or .tgz, or remove it",
        )
    if found != pinned:
        raise ConfigProblem(
            (),
            f"the chart at {show(value)} is version {show_text(found)}, but the pinned {name} is"
            f" {pinned}{note}",
            f"use the {chart} {pinned} chart, or change {pin} in planning/versions.py",
        )
