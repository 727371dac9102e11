"""Careless and hostile stack files through the preflight command: each is refused with exit
code 2 and one line naming the key (or the line of the file) and never a secret. The files
are the benchmark's (`make bench` prints how long each refusal takes)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from preflight.bench import hostile_stack_files
from preflight.cli import main
from pulumi_offline.config_values import SECRET_PLACEHOLDER

FILES = hostile_stack_files()
EXPECTED = {
    "alias-bomb": "document contains excessive aliasing",
    "deep-nesting": "nested more than 64 levels deep",
    "multi-megabyte-map": "preflight reads stack files of at most 256 KiB",
    "wide-map-under-the-size-limit": "nemo-rl-gke:labels: 20000 labels",
    "not-utf8": "yaml: invalid trailing UTF-8 octet",
    "duplicate-key": 'mapping key "nemo-rl-gke:zone" already defined at line 6',
    "nan": "json: unsupported value: NaN",
    "secret-in-a-label": "nemo-rl-gke:labels.team: is a secret",
    "secret-in-a-model": "nemo-rl-gke:ray.job.model: is a secret",
    "plaintext-credentials": "gcp:credentials: is set in plain text",
    "look-alike-namespace": "nemo-rl-gk\\u0435:protect: namespace",
    "unquoted-timestamp": "the Pulumi CLI rewrote an unquoted YAML timestamp",
    "runs-dir-leaves-data": "nemo-rl-gke:ray.job.runsDir",
    "hydra-interpolation": "nemo-rl-gke:ray.job.model",
    "rayjob-name-too-long": "nemo-rl-gke:ray.job.name",
    "psa-on-the-gpu-nics": "nemo-rl-gke:network.psaCidr",
    "threshold-above-the-published-figure": "Google's published 344.46 GB/s",
    "rrule-interval-zero": "INTERVAL=0 is not a positive integer",
    "rrule-that-almost-never-occurs": "longer than 0.5 s to evaluate",
    "rrule-every-minute": "more than 10000 occurrences",
    "year-9999-exclusion": "year 9999 is outside 1970..9000",
    "boolean-node-count": "nemo-rl-gke:gpu.nodes: true is a boolean, not a number",
    "boolean-lustre-size": "nemo-rl-gke:lustre.capacityGib: true is a boolean, not a number",
    "zone-database-folder": "nemo-rl-gke:health.timeZone: 'America' is not an IANA time zone",
    "every-beyond-go-durations": "nemo-rl-gke:health.schedule: '@every 2562048h':",
}


def test_every_hostile_file_has_its_expectation() -> None:
    assert set(FILES) == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(FILES))
def test_a_hostile_stack_file_is_refused_with_one_line(name: str, tmp_path: Path) -> None:
    path = tmp_path / f"Pulumi.{name}.yaml"
    path.write_bytes(FILES[name])
    out, err = io.StringIO(), io.StringIO()
    code = main(["--stack-file", str(path), "--json", str(tmp_path / "r.json")], out, err)
    text = err.getvalue()
    assert code == 2, text
    assert out.getvalue() == ""
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    assert lines[0].startswith("preflight: ")
    assert EXPECTED[name] in lines[0]
    assert len(lines[0]) < 1000
    for secret in ("NEVER-SHOWN", SECRET_PLACEHOLDER, "Traceback"):
        assert secret not in text
    assert not (tmp_path / "r.json").exists()  # nothing written for a refused stack
