"""The test bed's `hf` stand-in, held to the real huggingface_hub (1.14.0, the version NeMo RL
v0.7.0's uv.lock pins): the cache it lays out is one the real library resolves offline, the
token file the driver names is where the real library reads its token, and in offline mode the
stand-in calls no Hub, as the real CLI does not."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from planning.ray import HUB_DATASET, OFFLINE_ENV
from testbed.node_fs import NodeFolders, install_node_folders

REAL_HF = Path(sys.executable).parent / "hf"


@pytest.fixture
def folders(tmp_path: Path) -> NodeFolders:
    installed = NodeFolders(tmp_path / "nodes")
    install_node_folders(installed, frozenset({"meta-llama"}))
    return installed


def run(command: list[str], home: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING"))}
    return subprocess.run(
        command,
        env={**base, "HF_HOME": str(home), **env},
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def offline() -> dict[str, str]:
    return dict(pair.split("=", 1) for pair in OFFLINE_ENV)


def test_what_the_stand_in_caches_the_real_library_finds_offline(
    folders: NodeFolders, tmp_path: Path
) -> None:
    home = tmp_path / "data" / "huggingface_cache"
    home.parent.mkdir()
    standin = str(folders.tools / "hf")
    for args in (["Qwen/Qwen3-0.6B"], [HUB_DATASET, "--repo-type", "dataset"]):
        made = run([standin, "download", *args], home)
        assert made.returncode == 0, made.stderr
        real = run([str(REAL_HF), "download", *args], home, **offline())
        assert real.returncode == 0, real.stderr
        assert real.stdout.split()[-1] == made.stdout.strip()  # "path: <the snapshot>"


def test_offline_the_stand_in_calls_no_hub_as_the_real_cli(
    folders: NodeFolders, tmp_path: Path
) -> None:
    home = tmp_path / "data" / "huggingface_cache"
    home.parent.mkdir()
    for command in ([str(folders.tools / "hf")], [str(REAL_HF)]):
        proc = run([*command, "download", "Qwen/Qwen3-0.6B"], home, **offline())
        assert proc.returncode != 0, command
        assert not (home / "hub" / "models--Qwen--Qwen3-0.6B").exists()


def test_the_token_file_the_driver_names_is_where_the_real_library_reads(
    folders: NodeFolders, tmp_path: Path
) -> None:
    home = tmp_path / "data" / "huggingface_cache"
    home.parent.mkdir()
    token = tmp_path / "tokens" / "HF_TOKEN"
    token.parent.mkdir()
    token.write_text("hf_from_the_secret_file\n")
    read = run(
        [sys.executable, "-c", "import huggingface_hub; print(huggingface_hub.get_token())"],
        home,
        HF_TOKEN_PATH=str(token),
    )
    assert read.stdout.strip() == "hf_from_the_secret_file", read.stderr
    gated = [str(folders.tools / "hf"), "download", "meta-llama/Llama-3.1-8B-Instruct"]
    refused = run(gated, home)
    assert refused.returncode != 0
    assert "gated repository" in refused.stderr
    assert run(gated, home, HF_TOKEN_PATH=str(token)).returncode == 0
