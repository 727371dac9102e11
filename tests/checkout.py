"""What the checkout looks like to git, so that the suite can show it changed nothing."""

from __future__ import annotations

import subprocess

from tests.harness import REPO


def checkout_status() -> str | None:
    """`git status --porcelain` of the checkout (ignored files left out), or None outside git.

    A test that writes into the checkout shows up here as a modified or untracked file; the
    build outputs the make targets write (.venv, .tools) are ignored by .gitignore.
    """
    proc = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    return proc.stdout if proc.returncode == 0 else None


def changes(before: str, after: str) -> list[str]:
    """The status lines that the run added or changed."""
    return sorted(set(after.splitlines()) - set(before.splitlines()))
