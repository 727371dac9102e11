"""The docs cite modules and files that exist, and say whose exit codes they describe."""

from __future__ import annotations

import re

from tests.harness import REPO

PACKAGES = "stack_config|planning|components|program|policies|preflight|testbed|verify"


def _comments(text: str) -> str:
    return "\n".join(line.split("#", 1)[1] for line in text.splitlines() if "#" in line)


def test_modules_cited_in_pulumi_yaml_exist() -> None:
    comments = _comments((REPO / "Pulumi.yaml").read_text(encoding="utf-8"))
    cited = set(re.findall(rf"\b(?:{PACKAGES})\.[a-z_]+\b", comments))
    assert cited, "Pulumi.yaml's comments should point at the code they describe"
    missing = sorted(
        name
        for name in cited
        if not (REPO / f"{name.replace('.', '/')}.py").is_file()
        and not (REPO / name.replace(".", "/")).is_dir()
    )
    assert missing == []


def test_repository_paths_cited_in_the_readme_exist() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    # Paths under .tools/ are made by the Makefile and test bed, not committed.
    cited = set(re.findall(rf"(?<![./\w])(?:{PACKAGES}|tools|tests)/[\w./-]*\w", readme))
    assert cited
    assert sorted(p for p in cited if not (REPO / p).exists()) == []


def test_exit_codes_are_described_as_preflight_s() -> None:
    """Exit code 2 is preflight's; under the CLI an invalid stack or a plaintext secret fails
    the preview with the same message (tests/engine/test_preview.py), with the CLI's code."""
    for name in ("README.md", "Pulumi.yaml"):
        text = (REPO / name).read_text(encoding="utf-8")
        for paragraph in re.split(r"\n\s*\n", text):
            flat = " ".join(paragraph.split())
            for match in re.finditer(r"exit(?:s| code| codes)? (?:with code )?2\b", flat):
                around = flat[max(0, match.start() - 200) : match.end() + 200]
                assert "preflight" in around, f"{name}: {around!r}"
