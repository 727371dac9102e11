"""Will the policy pack start the way the language host starts it?

The language host runs a Python pack as `python -u -m pulumi.policy ...` with the pack's
folder as the working directory, so that folder comes first on `sys.path`: a module or
package there named like a standard-library module (`types.py`) or like a package the
analyzer imports (`grpc`, `pulumi`, `yaml`, ...) replaces it, and the interpreter breaks before
the pack loads. `pulumi preview --policy-pack` then fails without evaluating any policy.
"""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path


def _top_level_modules() -> set[str]:
    """Top-level import names of every installed distribution."""
    return set(importlib.metadata.packages_distributions())


def pack_shadowing(pack_dir: Path) -> list[str]:
    """One message per module of the pack folder that would shadow another module."""
    names: dict[str, Path] = {}
    for path in pack_dir.iterdir():
        if path.suffix == ".py" and path.stem != "__main__":
            names[path.stem] = path
        elif path.is_dir() and (path / "__init__.py").exists():
            names[path.name] = path
    stdlib = set(sys.stdlib_module_names)
    installed = _top_level_modules()
    problems = []
    for name, path in sorted(names.items()):
        if name in stdlib:
            what = f"the standard library's {name!r}"
        elif name in installed:
            what = f"the installed package {name!r}"
        else:
            continue
        problems.append(
            f"{path.relative_to(pack_dir.parent)} shadows {what}: the language host starts the"
            f" pack as `python -u -m pulumi.policy` from {pack_dir.name}/, which puts that folder"
            " first on sys.path, so the pack cannot start; rename the module"
        )
    return problems
