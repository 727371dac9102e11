"""The docs cite modules, files and make targets that exist, and say whose exit codes they
describe; the README leaves the test bed to docs/testbed.md."""

from __future__ import annotations

import re
from functools import cache

import pytest

from tests.harness import REPO

PACKAGES = (
    "stack_config|planning|components|program|policies|preflight|pulumi_offline|testbed|verify"
)
USER_DOCS = ("docs/configuration.md", "docs/runbook.md", "docs/operations.md", "docs/ci.md")
"""The README's topics at length, each linked from it."""
DOCS = ("README.md", *USER_DOCS, "docs/testbed.md", "docs/development.md")
README_LINES = 450
"""The README stays a user's first page (about 400 lines); the rest goes to USER_DOCS."""
# A repository path starts at one of these top-level folders; paths under .tools/ and .venv/
# are made by the Makefile and the test bed, not committed, so they are not checked.
ROOTS = rf"{PACKAGES}|tools|tests|docs|\.ci|\.github"
# Not after `/` or a word: `https://cloud.google.com/vpc/docs/...` names no file of ours.
# `<stack>`-style placeholders stand for any name (`policies/config/<stack>.json`).
REPO_PATH = re.compile(rf"(?<![./\w-])(?:{ROOTS})/[\w./<>*-]*[\w>*]")
FENCED = re.compile(r"^[ \t]*```[^\n]*\n(.*?)^[ \t]*```", re.MULTILINE | re.DOTALL)
# `make` and the words after it, up to a comment or the next command.
MAKE = re.compile(r"(?<![\w.-])make\s+([^\n#;&|)`]*)")
SHELL_COMMENT = re.compile(r"(?:^|\s)#.*")
OWN_MODULE = re.compile(rf"\bpython3? -m ((?:{PACKAGES}|tools)(?:\.\w+)*)")
RULE = re.compile(r"^([^\s#=:$][^=:]*?)\s*:(?!=)")


def _comments(text: str) -> str:
    return "\n".join(line.split("#", 1)[1] for line in text.splitlines() if "#" in line)


def _read(name: str) -> str:
    return (REPO / name).read_text(encoding="utf-8")


def _code(text: str) -> list[str]:
    """The fenced blocks and the inline code spans of a Markdown text."""
    prose = FENCED.sub("", text)
    return FENCED.findall(text) + re.findall(r"`([^`\n]+)`", prose)


def make_targets_named(text: str) -> set[str]:
    """The targets of every `make` command shown as code (`VAR=value` arguments left out)."""
    return {
        word
        for snippet in _code(text)
        for line in snippet.splitlines()
        for match in MAKE.finditer(SHELL_COMMENT.sub("", line))
        for word in match[1].split()
        if "=" not in word and not word.startswith("-")
    }


@cache
def makefile_rules() -> dict[str, str]:
    """Each Makefile target and its rule: the prerequisites and the recipe below them."""
    rules: dict[str, str] = {}
    current: list[str] = []
    for line in _read("Makefile").splitlines():
        if line.startswith("\t") and current:
            for target in current:
                rules[target] += "\n" + line
            continue
        current = []
        if match := RULE.match(line):
            current = match[1].split()
            for target in current:
                rules[target] = line.split(":", 1)[1]
    return rules


def test_modules_cited_in_pulumi_yaml_exist() -> None:
    comments = _comments(_read("Pulumi.yaml"))
    cited = set(re.findall(rf"\b(?:{PACKAGES})\.[a-z_]+\b", comments))
    assert cited, "Pulumi.yaml's comments should point at the code they describe"
    missing = sorted(
        name
        for name in cited
        if not (REPO / f"{name.replace('.', '/')}.py").is_file()
        and not (REPO / name.replace(".", "/")).is_dir()
    )
    assert missing == []


@pytest.mark.parametrize("doc", DOCS)
def test_repository_paths_cited_in_the_docs_exist(doc: str) -> None:
    cited = set(REPO_PATH.findall(_read(doc)))
    assert cited or doc in USER_DOCS  # the README and the contributors' docs cite some
    globs = {path: re.sub(r"<[^<>/]*>", "*", path) for path in cited}
    missing = sorted(path for path, pattern in globs.items() if not any(REPO.glob(pattern)))
    assert missing == []


@pytest.mark.parametrize("doc", DOCS)
def test_every_make_target_the_docs_show_is_in_the_makefile(doc: str) -> None:
    named = make_targets_named(_read(doc))
    assert named or doc in USER_DOCS  # the README and the contributors' docs show some
    assert sorted(named - set(makefile_rules())) == []


@pytest.mark.parametrize("doc", DOCS)
def test_every_module_of_ours_the_docs_run_exists(doc: str) -> None:
    for module in set(OWN_MODULE.findall(_read(doc))):
        path = REPO / module.replace(".", "/")
        assert path.with_suffix(".py").is_file() or (path / "__main__.py").is_file(), module


def test_the_readme_leaves_the_test_bed_to_its_own_doc() -> None:
    """Users read the README: the test bed's files and make targets are in docs/testbed.md."""
    readme = _read("README.md")
    test_bed = {
        target
        for target, rule in makefile_rules().items()
        if "testbed" in rule or "tests/engine" in rule
    }
    assert {"engine", "engine-test", "local-cluster"} <= test_bed
    assert sorted(make_targets_named(readme) & test_bed) == []
    assert sorted(p for p in REPO_PATH.findall(readme) if p.startswith("testbed/")) == []
    assert "docs/testbed.md" in readme
    assert "docs/development.md" in readme


def test_the_make_commands_are_read_from_code_only() -> None:
    text = "To make sure:\n\n```bash\nmake preflight STACK=b200  # make it so\n```\n`make test`"
    assert make_targets_named(text) == {"preflight", "test"}
    assert make_targets_named("`make` bootstraps uv; `make lint typecheck -j2`") == {
        "lint",
        "typecheck",
    }


def test_exit_codes_are_described_as_preflight_s() -> None:
    """Exit code 2 is preflight's; under the CLI an invalid stack or a plaintext secret fails
    the preview with the same message (tests/engine/test_preview.py), with the CLI's code."""
    for name in (*DOCS, "Pulumi.yaml"):
        text = _read(name)
        for paragraph in re.split(r"\n\s*\n", text):
            flat = " ".join(paragraph.split())
            for match in re.finditer(r"exit(?:s| code| codes)? (?:with code )?2\b", flat):
                around = flat[max(0, match.start() - 200) : match.end() + 200]
                assert "preflight" in around, f"{name}: {around!r}"


def test_the_readme_is_short_and_links_every_user_doc() -> None:
    """The README is for users and stays about 400 lines: the runbook, the configuration
    catalogue, operations and CI set-up live in docs/, each linked from it, and every link to
    a doc's section names a heading that doc has."""
    readme = _read("README.md")
    assert len(readme.splitlines()) <= README_LINES
    for doc in USER_DOCS:
        assert f"]({doc})" in readme, doc
    for doc, anchor in re.findall(r"\]\((docs/[\w.-]+\.md)#([\w-]+)\)", readme):
        headings = re.findall(r"^#+ (.+)$", _read(doc), re.MULTILINE)
        anchors = {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}
        assert anchor in anchors, f"{doc}#{anchor}"
