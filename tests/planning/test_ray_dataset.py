"""The run's data, prepared and loaded by the real libraries at the image's versions.

NeMo RL v0.7.0's lock pins `datasets` 4.8.5 and `huggingface_hub` 1.14.0; both are installed
here at those versions. The rendered b200 driver script runs with `uv run hf` and `uv run
python -c` calling the real programs against a Hub endpoint on 127.0.0.1 (testbed/hub_server.py,
serving a GSM8K-shaped repository), and stops where NeMo RL would start. Then a fresh process,
with the driver's final environment and no reachable Hub, loads GSM8K exactly as NeMo RL's
`GSM8KDataset` does (`nemo_rl/data/datasets/response_datasets/gsm8k.py`: `load_dataset(
"openai/gsm8k", "main")[split]`). With a driver that only fills the Hub cache (`hf download
--repo-type dataset`), that load fails with datasets' OfflineModeIsEnabled.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from planning.ray import HUB_DATASET, HUB_DATASET_CONFIG
from testbed.hub_server import Hub, serving, write_gsm8k
from tests.harness import by_name, run_stack, variant
from tests.planning.test_ray_training_env import bash, job_driver_env, pod_env, worker_of

BIN = Path(sys.executable).parent
MODEL = "meta-llama/Llama-3.1-8B-Instruct"
NO_HUB = "http://127.0.0.1:9"
"""Where the fresh process would find a Hub: a closed port (the discard service)."""

NEMO_RL_LOADS = (
    "import sys; from datasets import load_dataset;"
    f" train = load_dataset({HUB_DATASET!r}, {HUB_DATASET_CONFIG!r})['train'];"
    f" test = load_dataset({HUB_DATASET!r}, {HUB_DATASET_CONFIG!r})['test'];"
    " print(len(train), len(test), train[0]['answer'].split('####')[1].strip())"
)
"""NeMo RL's two loads (train, and the validation the stack asks for: split test)."""

REAL_UV = f"""
uv() {{
  [ "$1" = run ] || return 90; shift
  case "$1" in
    hf) shift; {BIN}/hf "$@" ;;
    python)
      shift
      if [ "$1" = -c ]; then {sys.executable} "$@"
      else printf '%s\\n' "$*" >> "$CALLS"; env -0 > "$ENV_OUT"; fi ;;
    *) return 91 ;;
  esac
}}
"""
"""`uv run` in the image's venv: the real `hf` and Python of that venv's versions; NeMo RL's
own entry point is where the script is stopped (its environment recorded)."""


@pytest.fixture(scope="module")
def b200_job(tmp_path_factory: pytest.TempPathFactory) -> Any:
    config = variant(
        "b200",
        {
            "nemo-rl-gke:ray": {"job": {"enabled": True}},
            "nemo-rl-gke:hfToken": {"secure": "v1:x"},
        },
    )
    return run_stack("b200", tmp_path_factory.mktemp("b200-data"), config)


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[tuple[str, Hub]]:
    root = tmp_path / "hub"
    write_gsm8k(root)
    model = root / "models" / MODEL
    model.mkdir(parents=True)
    (model / "config.json").write_text('{"model_type": "llama"}\n', encoding="utf-8")
    with serving(root) as served:
        yield served


def driver_until_nemo_rl(
    script: str, tmp_path: Path, endpoint: str, container: dict[str, Any]
) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    """The driver script with the real tools, up to NeMo RL's start: how it ended and the
    environment NeMo RL would start with."""
    (tmp_path / "tokens").mkdir()
    (tmp_path / "tokens" / "HF_TOKEN").write_text("hf_from_the_secret")
    env = {
        **job_driver_env(pod_env(container)),
        "HF_HOME": str(tmp_path / "data" / "huggingface_cache"),
        "HF_ENDPOINT": endpoint,
    }
    proc, final, calls = bash(f"{REAL_UV}\n{script}", env, tmp_path, "driver")
    assert [c for c in calls if "run_grpo.py" in c], proc.stderr[-3000:]
    return proc, final


def nemo_rl_load(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """NeMo RL's loads in a fresh process, with no Hub it could reach."""
    return subprocess.run(
        [sys.executable, "-c", NEMO_RL_LOADS],
        env={**env, "HF_ENDPOINT": NO_HUB},
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_the_driver_prepares_gsm8k_so_nemo_rl_loads_it_offline(
    b200_job: Any, tmp_path: Path, hub: tuple[str, Hub]
) -> None:
    endpoint, served = hub
    _, container = worker_of(b200_job)
    (_, _, script) = shlex.split(by_name(b200_job)["ray-job"].inputs["spec"]["entrypoint"])
    _, final = driver_until_nemo_rl(script, tmp_path, endpoint, container)
    # The driver fetched the dataset's files online, before offline mode.
    assert any("/datasets/openai/gsm8k/resolve/" in a and ".parquet" in a for a in served.asked)
    assert final["HF_HUB_OFFLINE"] == "1"
    assert final["HF_DATASETS_OFFLINE"] == "1"
    asked = len(served.asked)
    loaded = nemo_rl_load(final)
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    assert loaded.stdout.split() == ["12", "4", "1"]
    assert len(served.asked) == asked, "NeMo RL's load called the Hub"


def test_a_hub_cache_copy_alone_is_not_loadable_offline(
    tmp_path: Path, hub: tuple[str, Hub]
) -> None:
    """Why the driver prepares with `datasets`: `hf download --repo-type dataset` (the earlier
    driver's step) fills only the Hub cache, which datasets 4.8.5 never reads offline."""
    endpoint, _ = hub
    home = tmp_path / "huggingface_cache"
    base = {"PATH": "/usr/bin:/bin", "HF_HOME": str(home)}
    downloaded = subprocess.run(
        [str(BIN / "hf"), "download", HUB_DATASET, "--repo-type", "dataset"],
        env={**base, "HF_ENDPOINT": endpoint},
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert downloaded.returncode == 0, downloaded.stderr
    loaded = nemo_rl_load({**base, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"})
    assert loaded.returncode != 0
    assert "Couldn't reach 'openai/gsm8k' on the Hub (OfflineModeIsEnabled)" in loaded.stderr
