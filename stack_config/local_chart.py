"""Read the version of a local Helm chart (a folder or a .tgz) without Helm."""

from __future__ import annotations

import tarfile
from pathlib import Path

import yaml


def local_chart_version(path: str) -> str | None:
    """`version` of the chart's Chart.yaml, or None when `path` holds no chart."""
    chart = Path(path).expanduser()
    try:
        if chart.is_dir():
            data = yaml.safe_load((chart / "Chart.yaml").read_text(encoding="utf-8"))
        elif chart.is_file() and tarfile.is_tarfile(chart):
            with tarfile.open(chart) as archive:
                member = next(
                    (m for m in archive.getmembers() if m.name.count("/") == 1
                     and m.name.endswith("/Chart.yaml")),
                    None,
                )  # fmt: skip
                if member is None:
                    return None
                handle = archive.extractfile(member)
                if handle is None:
                    return None
                data = yaml.safe_load(handle.read())
        else:
            return None
    except (OSError, yaml.YAMLError, tarfile.TarError):
        return None
    version = data.get("version") if isinstance(data, dict) else None
    return str(version) if version is not None else None
