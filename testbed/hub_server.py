"""A Hugging Face Hub endpoint on 127.0.0.1 for the real `huggingface_hub` and `datasets`.

Test bed only: there is no Hub here, so the real libraries (at the versions NeMo RL v0.7.0's
uv.lock pins) are pointed at this server through `HF_ENDPOINT`. It serves repositories from a
folder (`ROOT/datasets/ORG/NAME/...`, `ROOT/models/ORG/NAME/...`), one revision each, through
the few routes those libraries call: repository info, the file tree, paths-info and file
resolution (HEAD and GET, with the commit and ETag headers the cache is keyed by). Anything
else is answered 404 and recorded, so a test sees a library asking for more than is served.
"""

from __future__ import annotations

import hashlib
import json
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

KINDS = {"datasets": "dataset", "models": "model"}
"""URL segment of a repository kind -> the Hub's repo type."""


@dataclass
class Repo:
    """One repository folder, read as one revision."""

    kind: str
    repo_id: str
    folder: Path

    def files(self) -> list[str]:
        """Every file, as a POSIX path relative to the repository."""
        return sorted(
            p.relative_to(self.folder).as_posix() for p in self.folder.rglob("*") if p.is_file()
        )

    @property
    def sha(self) -> str:
        """The revision: a hash of every path and its bytes (40 hex digits, as a commit id)."""
        digest = hashlib.sha1(usedforsecurity=False)
        for name in self.files():
            digest.update(name.encode() + b"\0" + (self.folder / name).read_bytes())
        return digest.hexdigest()

    def entry(self, path: str) -> dict[str, Any]:
        """A tree / paths-info entry."""
        target = self.folder / path
        if target.is_dir():
            return {"type": "directory", "path": path, "oid": self.sha, "size": 0}
        data = target.read_bytes()
        return {"type": "file", "path": path, "size": len(data), "oid": _oid(data)}

    def info(self) -> dict[str, Any]:
        """The repository info (`/api/datasets/REPO/revision/REV`)."""
        return {
            "_id": self.sha[:24],
            "id": self.repo_id,
            "sha": self.sha,
            "private": False,
            "gated": False,
            "disabled": False,
            "downloads": 0,
            "likes": 0,
            "tags": [],
            "lastModified": "2026-01-01T00:00:00.000Z",
            "siblings": [{"rfilename": name} for name in self.files()],
        }


def _oid(data: bytes) -> str:
    """Git's blob id of the bytes."""
    return hashlib.sha1(f"blob {len(data)}\0".encode() + data, usedforsecurity=False).hexdigest()


@dataclass
class Hub:
    """The repositories under `root`, and every request they were asked."""

    root: Path
    asked: list[str] = field(default_factory=list)
    unanswered: list[str] = field(default_factory=list)

    def repo(self, kind: str, repo_id: str) -> Repo | None:
        """The repository, or None."""
        folder = self.root / kind / repo_id
        return Repo(kind, repo_id, folder) if folder.is_dir() else None


def _split(rest: list[str], marker: str) -> tuple[str, list[str]] | None:
    """`ORG/NAME/<marker>/...` -> ("ORG/NAME", the parts after the marker)."""
    if len(rest) < 3 or rest[2] != marker:
        return None
    return f"{rest[0]}/{rest[1]}", rest[3:]


class _Handler(BaseHTTPRequestHandler):
    """The Hub's routes the libraries call; the hub is the server's `hub` attribute."""

    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Requests go to `Hub.asked`, not to stderr."""

    def _send(self, status: int, body: bytes, headers: dict[str, str], head: bool = False) -> None:
        self.send_response(status)
        for key, value in {**headers, "Content-Length": str(len(body))}.items():
            self.send_header(key, value)
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _json(self, value: Any) -> None:
        self._send(200, json.dumps(value).encode(), {"Content-Type": "application/json"})

    def _missing(self, in_repo: bool = False) -> None:
        """404 as the Hub words it: a file missing from a repository is EntryNotFound (which
        `datasets` expects when it looks for a loading script), anything else RepoNotFound."""
        self.server.hub.unanswered.append(f"{self.command} {self.path}")
        code = "EntryNotFound" if in_repo else "RepoNotFound"
        body = json.dumps({"error": code}).encode()
        self._send(404, body, {"X-Error-Code": code}, self.command == "HEAD")

    def _route(self) -> None:
        hub = self.server.hub
        hub.asked.append(f"{self.command} {self.path}")
        parsed = urllib.parse.urlsplit(self.path)
        parts = [urllib.parse.unquote(p) for p in parsed.path.strip("/").split("/")]
        query = urllib.parse.parse_qs(parsed.query)
        if parts[:1] == ["api"] and len(parts) >= 5 and parts[1] in KINDS:
            self._api(parts[1], parts[2:], query)
            return
        kind = parts[0] if parts[0] in KINDS else "models"
        rest = parts[1:] if parts[0] in KINDS else parts
        found = _split(rest, "resolve")
        repo = hub.repo(kind, found[0]) if found else None
        if found is None or repo is None or len(found[1]) < 2:
            self._missing()
            return
        path = "/".join(found[1][1:])
        target = repo.folder / path
        if not target.is_file():
            self._missing(in_repo=True)
            return
        data = target.read_bytes()
        headers = {
            "X-Repo-Commit": repo.sha,
            "ETag": f'"{_oid(data)}"',
            "Content-Type": "application/octet-stream",
        }
        self._send(200, data, headers, self.command == "HEAD")

    def _api(self, kind: str, rest: list[str], query: dict[str, list[str]]) -> None:
        hub = self.server.hub
        for marker in ("revision", "tree", "paths-info"):
            found = _split(rest, marker)
            if found is None:
                continue
            repo = hub.repo(kind, found[0])
            if repo is None:
                break
            if marker == "revision":
                self._json(repo.info())
            elif marker == "tree":
                self._json(self._tree(repo, "/".join(found[1][1:]), query))
            else:
                self._json(
                    [repo.entry(p) for p in self._form_paths() if (repo.folder / p).exists()]
                )
            return
        self._missing()

    def _tree(self, repo: Repo, path: str, query: dict[str, list[str]]) -> list[dict[str, Any]]:
        base = repo.folder / path
        recursive = query.get("recursive", ["false"])[0].lower() == "true"
        found = base.rglob("*") if recursive else base.glob("*")
        return [repo.entry(p.relative_to(repo.folder).as_posix()) for p in sorted(found)]

    def _form_paths(self) -> list[str]:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode()
        if "json" in (self.headers.get("Content-Type") or ""):
            return list(json.loads(body).get("paths", []))
        return urllib.parse.parse_qs(body).get("paths", [])

    def do_GET(self) -> None:
        """GET: info, tree, files."""
        self._route()

    def do_HEAD(self) -> None:
        """HEAD: a file's metadata."""
        self._route()

    def do_POST(self) -> None:
        """POST: paths-info."""
        self._route()


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, hub: Hub) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.hub = hub


@contextmanager
def serving(root: Path) -> Iterator[tuple[str, Hub]]:
    """Serve `root` on a free loopback port: yields (the endpoint URL, the hub's record)."""
    server = _Server(Hub(root))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", server.hub
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


GSM8K_CARD = """---
configs:
- config_name: main
  data_files:
  - split: train
    path: main/train-*
  - split: test
    path: main/test-*
- config_name: socratic
  data_files:
  - split: train
    path: socratic/train-*
  - split: test
    path: socratic/test-*
---
# GSM8K-shaped test repository (the test bed's own rows)
"""
"""The layout of `openai/gsm8k` on the Hub: a card whose YAML names two configs, each a
parquet file per split with the columns `question` and `answer` (`... #### N`)."""


def gsm8k_rows(count: int, offset: int) -> dict[str, list[str]]:
    """`count` sums in GSM8K's shape, the final answer after `####`."""
    pairs = [(offset + i, 2 * i + 1) for i in range(count)]
    return {
        "question": [f"Ann has {a} apples and finds {b} more. How many now?" for a, b in pairs],
        "answer": [
            f"She has {a} + {b} = <<{a}+{b}={a + b}>>{a + b}.\n#### {a + b}" for a, b in pairs
        ],
    }


def write_gsm8k(root: Path, train: int = 12, test: int = 4) -> Path:
    """A GSM8K-shaped dataset repository under `root/datasets/openai/gsm8k`."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = root / "datasets" / "openai" / "gsm8k"
    for config in ("main", "socratic"):
        (folder / config).mkdir(parents=True, exist_ok=True)
        for split, count, offset in (("train", train, 0), ("test", test, 100)):
            table = pa.table(gsm8k_rows(count, offset))
            pq.write_table(table, folder / config / f"{split}-00000-of-00001.parquet")
    (folder / "README.md").write_text(GSM8K_CARD, encoding="utf-8")
    return folder


def serve_in_background(root: Path) -> str:
    """Serve `root` from a daemon thread of this process for its whole life (the cluster
    agent's, stopped by its pid): the endpoint URL."""
    server = _Server(Hub(root))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}"
