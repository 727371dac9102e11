"""The house's import rules, kept by a test: which wing may import which.

The platform (what `pulumi up` runs) imports none of the operator tools, the offline models
or the test bed; the offline models lean only on the platform's pure layer; the test bed
reaches preflight only through its CLI module; nothing but the tests imports the test bed.
docs/development.md explains the wings; this walks every module's imports, so a broken rule
fails here naming the file, the line and the import.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.harness import REPO

# Each wing (a top-level package, or the program's entry module) and the wings it may import.
# Third-party and standard-library imports are not judged here.
ALLOWED: dict[str, frozenset[str]] = {
    "planning": frozenset({"planning"}),
    "stack_config": frozenset({"stack_config", "planning"}),
    "components": frozenset({"components", "planning"}),
    "program": frozenset({"program", "components", "planning", "stack_config"}),
    "policies": frozenset({"policies", "planning"}),
    "verify": frozenset({"verify", "planning"}),
    "workload": frozenset({"workload"}),
    "__main__": frozenset({"program", "planning", "stack_config"}),
    "pulumi_offline": frozenset({"pulumi_offline", "planning", "stack_config"}),
    "preflight": frozenset(
        {"preflight", "pulumi_offline", "planning", "stack_config", "policies", "program"}
    ),
    "tools": frozenset({"tools", "planning"}),
    "testbed": frozenset({"testbed", "pulumi_offline", "planning", "stack_config", "preflight"}),
}
OWN = frozenset(ALLOWED) | {"tests"}
# The one module of preflight the test bed may import: the CLI (`python -m preflight` runs it).
PREFLIGHT_ENTRY = frozenset({"preflight", "preflight.cli"})


@dataclass(frozen=True)
class Import:
    """One import statement of ours: where it is and the module it names."""

    file: str
    line: int
    module: str


def module_of(path: Path) -> str:
    """`a/b/c.py` -> `a.b.c`; a package's `__init__.py` is the package."""
    parts = list(path.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(source: str, relative_file: Path) -> Iterator[Import]:
    """Every import of one file, relative ones resolved against its package."""
    package = module_of(relative_file).split(".")
    if relative_file.name != "__init__.py":
        package = package[:-1]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(str(relative_file), node.lineno, alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            yield Import(str(relative_file), node.lineno, module)
            # `from preflight import changes` names the module preflight.changes.
            for alias in node.names:
                yield Import(str(relative_file), node.lineno, f"{module}.{alias.name}")


def broken(found: Import) -> str | None:
    """Why `found` breaks a rule, or None."""
    wing = found.file.split("/")[0].removesuffix(".py")
    target = found.module.split(".")[0]
    if target not in OWN or wing not in ALLOWED:
        return None
    if target not in ALLOWED[wing]:
        return f"{found.file}:{found.line}: `{found.module}`: {wing} may not import {target}"
    if wing == "testbed" and target == "preflight":
        parts = found.module.split(".")
        # `from preflight.cli import preflight` yields preflight.cli.preflight: judge the module.
        if ".".join(parts[:2]) not in PREFLIGHT_ENTRY:
            return (
                f"{found.file}:{found.line}: `{found.module}`: the test bed reaches preflight"
                " only through preflight.cli"
            )
    return None


def our_files() -> Iterator[Path]:
    """The repository's Python files outside the tests and tool folders."""
    for path in sorted(REPO.rglob("*.py")):
        relative = path.relative_to(REPO)
        if relative.parts[0] in {".venv", ".tools", "tests"} or "node_modules" in relative.parts:
            continue
        yield relative


def test_every_import_keeps_the_house_rules() -> None:
    problems = [
        problem
        for relative in our_files()
        for found in imports_of((REPO / relative).read_text(encoding="utf-8"), relative)
        if (problem := broken(found))
    ]
    assert not problems, "\n".join(problems)


def test_the_walk_sees_every_wing() -> None:
    # A rule over no files proves nothing: each wing has modules the walk reads.
    wings = {relative.parts[0].removesuffix(".py") for relative in our_files()}
    assert set(ALLOWED) <= wings


@pytest.mark.parametrize(
    ("file", "source", "message"),
    [
        ("planning/x.py", "import stack_config.base", "planning may not import stack_config"),
        ("program/x.py", "from preflight import cli", "program may not import preflight"),
        ("components/a/b.py", "from ...testbed import x", "components may not import testbed"),
        (
            "testbed/x.py",
            "from preflight import report",
            "the test bed reaches preflight only through preflight.cli",
        ),
        (
            "testbed/x.py",
            "from preflight.recorder import Record",
            "the test bed reaches preflight only through preflight.cli",
        ),
        ("pulumi_offline/x.py", "import components", "pulumi_offline may not import components"),
        ("preflight/x.py", "from testbed import engine", "preflight may not import testbed"),
        ("__main__.py", "from preflight.cli import main", "__main__ may not import preflight"),
    ],
)
def test_a_broken_rule_names_the_file_the_line_and_the_import(
    file: str, source: str, message: str
) -> None:
    problems = [p for f in imports_of(f"\n{source}\n", Path(file)) if (p := broken(f))]
    assert problems, source
    assert problems[0].startswith(f"{file}:2: `"), problems
    assert message in problems[0]


@pytest.mark.parametrize(
    ("file", "source"),
    [
        ("testbed/x.py", "from preflight.cli import preflight"),
        ("testbed/x.py", "from pulumi_offline import stackfiles"),
        ("program/x.py", "from components.network import primary"),
        ("planning/x.py", "import json"),
        ("pulumi_offline/x.py", "from stack_config.errors import StackError"),
    ],
)
def test_an_allowed_import_passes(file: str, source: str) -> None:
    assert not [p for f in imports_of(source, Path(file)) if (p := broken(f))]


LAYERS = ("stack_config", "planning", "components", "program")
"""The platform's layers, where each concern has one stem (docs/development.md)."""
STEM_ROW = re.compile(r"^\| `(\w+)` \|(.*)\|\s*$", re.MULTILINE)
CITED = re.compile(r"`((?:stack_config|planning|components|program)/[\w/]+(?:\.py)?)`")


def _development_doc() -> str:
    return (REPO / "docs" / "development.md").read_text(encoding="utf-8")


def stems() -> dict[str, list[str]]:
    """The stem table of docs/development.md: each stem and the files its row names."""
    doc = _development_doc()
    table = doc.split("| Stem |", 1)[1].split("\n\n", 1)[0]
    return {m[1]: CITED.findall(m[2]) for m in STEM_ROW.finditer(table)}


def test_every_file_the_stem_table_names_exists() -> None:
    found = stems()
    assert {"network", "rdma", "ray", "verify", "health"} <= set(found)
    for stem, files in found.items():
        assert files, stem
        for name in files:
            assert (REPO / name).exists(), f"{stem}: {name}"


def test_every_module_of_the_layers_is_a_stem_s_or_a_named_shared_one() -> None:
    """A concern keeps one name in every layer: a module is a stem, a stem's topic
    (`<stem>_<topic>`), or a shared module the doc names below the table. A concern that
    turns up under another name (the RDMA path as `dranet` here, `rdma` there) fails."""
    names = set(stems())
    doc = _development_doc()
    for layer in LAYERS:
        for path in sorted((REPO / layer).iterdir()):
            stem = path.stem
            if stem.startswith("_") or path.suffix not in (".py", "") or stem == "__pycache__":
                continue
            if stem in names or stem.split("_")[0] in names:
                continue
            if stem.rsplit("_", 1)[0] in names or any(stem.startswith(f"{n}_") for n in names):
                continue
            cited = f"`{layer}/{path.name}`" in doc
            assert cited, f"{layer}/{path.name}: not a stem's and not named in the doc"


def test_every_test_folder_mirrors_a_wing() -> None:
    """tests/<dir> is named after the wing it tests (tests/engine: the real engine's tests)."""
    wings = set(ALLOWED) - {"__main__"}
    folders = {p.name for p in (REPO / "tests").iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders - {"engine"} <= wings, sorted(folders - {"engine"} - wings)
