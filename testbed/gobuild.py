"""Build the test bed's Go binaries from our wrapper modules, cached by what goes into them.

Each piece is one wrapper module under `testbed/go/` (a go.mod of ours, sometimes a tiny
main.go) and the binaries it makes. A build lands in
`$NEMO_RL_GKE_CACHE/go-builds/<piece>-<key>/` (default `~/.cache/nemo-rl-gke`), where the key
hashes the module's go.mod, go.sum, Go sources, build flags and the Go version: a rebuild
happens only when one of them changes or the cache is gone. Long builds print progress.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

TESTBED = Path(__file__).resolve().parent
GO_MODULES = TESTBED / "go"


def cache_root() -> Path:
    """Where built binaries are kept between runs (and between clones)."""
    configured = os.environ.get("NEMO_RL_GKE_CACHE")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "nemo-rl-gke"


@dataclass(frozen=True)
class Piece:
    """One wrapper module and the binaries built from it."""

    name: str
    binaries: dict[str, str]
    """Output file name -> Go package to build ("." for the wrapper's own main)."""
    ldflags: str = ""
    tags: str = ""
    prepare: Callable[[Path], list[Path]] | None = None
    """Writes generated, git-ignored inputs into the module folder; returns them (hashed too)."""
    companions: Callable[[Path, Path], None] | None = field(default=None, compare=False)
    """Copies non-Go companions (scripts) next to the binaries: (module folder, output)."""

    @property
    def module(self) -> Path:
        """The wrapper module's folder."""
        return GO_MODULES / self.name


def go_env(*names: str) -> list[str]:
    """`go env NAME...` values."""
    out = subprocess.run(
        ["go", "env", *names], check=True, capture_output=True, text=True, env=_go_environ()
    ).stdout
    return out.splitlines()


def _go_environ() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("GOFLAGS", "-mod=mod")
    return env


def module_dir(piece: Piece, module_path: str) -> Path:
    """The module cache folder of a dependency of a wrapper module (downloads it if needed)."""
    out = subprocess.run(
        ["go", "list", "-m", "-f", "{{.Dir}}", module_path],
        cwd=piece.module,
        check=True,
        capture_output=True,
        text=True,
        env=_go_environ(),
    ).stdout.strip()
    if not out:
        subprocess.run(
            ["go", "mod", "download", module_path], cwd=piece.module, check=True, env=_go_environ()
        )
        return module_dir(piece, module_path)
    return Path(out)


def cache_key(piece: Piece, generated: list[Path]) -> str:
    """Hash of everything that decides what the build produces."""
    digest = hashlib.sha256()
    (go_version,) = go_env("GOVERSION")
    digest.update(
        f"{go_version}\n{piece.ldflags}\n{piece.tags}\n{sorted(piece.binaries.items())}".encode()
    )
    sources = sorted(
        [piece.module / "go.mod", piece.module / "go.sum", *piece.module.glob("*.go"), *generated]
    )
    for path in sources:
        if path.exists():
            digest.update(path.name.encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _watch(name: str, proc: subprocess.Popen[str], started: float) -> list[str]:
    """Echo progress every 20 s while `go build -v` names the packages it compiles."""
    lines: list[str] = []
    done = threading.Event()

    def report() -> None:
        while not done.wait(20):
            print(
                f"  [{name}] {len(lines)} packages compiled, {time.monotonic() - started:.0f} s",
                flush=True,
            )

    reporter = threading.Thread(target=report, daemon=True)
    reporter.start()
    for line in proc.stderr or ():
        lines.append(line.rstrip())
    done.set()
    return lines


def check_pins(pins: dict[str, dict[str, str]]) -> None:
    """Every wrapper go.mod requires exactly the module versions the version table names."""
    for name, modules in pins.items():
        text = (GO_MODULES / name / "go.mod").read_text(encoding="utf-8")
        for module, version in modules.items():
            pattern = rf"^\s*(require\s+)?{re.escape(module)} {re.escape(version)}\b"
            if not re.search(pattern, text, re.MULTILINE):
                raise SystemExit(
                    f"testbed/go/{name}/go.mod does not require {module} {version}"
                    " (planning/versions.py); update one to match the other"
                )


def build(piece: Piece, *, force: bool = False) -> Path:
    """Build `piece` unless a cached build with the same key exists; return its folder."""
    generated = piece.prepare(piece.module) if piece.prepare else []
    key = cache_key(piece, generated)
    out = cache_root() / "go-builds" / f"{piece.name}-{key}"
    marker = out / ".complete"
    if marker.exists() and not force:
        print(f"[{piece.name}] cached: {out}", flush=True)
        return out
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    started = time.monotonic()
    print(f"[{piece.name}] building {', '.join(piece.binaries)} (key {key})", flush=True)
    for binary, package in piece.binaries.items():
        command = ["go", "build", "-v", "-trimpath", "-o", str(out / binary)]
        if piece.tags:
            command += ["-tags", piece.tags]
        if piece.ldflags:
            command += ["-ldflags", piece.ldflags]
        command.append(package)
        proc = subprocess.Popen(
            command, cwd=piece.module, stderr=subprocess.PIPE, text=True, env=_go_environ()
        )
        lines = _watch(f"{piece.name}/{binary}", proc, started)
        if proc.wait() != 0:
            errors = [line for line in lines if not line.startswith(("go: downloading",))]
            print("\n".join(errors[-40:]), file=sys.stderr)
            raise SystemExit(f"[{piece.name}] go build of {package} failed")
    if piece.companions is not None:
        piece.companions(piece.module, out)
    marker.write_text(f"built in {time.monotonic() - started:.0f} s\n")
    print(f"[{piece.name}] built in {time.monotonic() - started:.0f} s: {out}", flush=True)
    return out
