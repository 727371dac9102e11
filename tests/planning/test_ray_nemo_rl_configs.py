"""The GRPO job against NeMo RL v0.7.0's own configs, parsed the way NeMo RL parses them.

The configs are the shared test data (`../shared/reference/nemo-rl-v0.7.0/configs`, through
NEMO_RL_GKE_SHARED). Loading follows `nemo_rl/utils/config.py` (SOURCE.md): `defaults:`
parents resolved beside the child and merged depth-first with OmegaConf, `_override_: true`
replacing a parent's mapping; the job's overrides go through Hydra's own override parser and
config loader in struct mode, as `parse_hydra_overrides` does. Then NeMo RL's setup rules are
checked on the result, for every stack with the job on and a few variants.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Any

import pytest

from planning.ray import grpo_overrides
from planning.ray_sizes import RECIPES, RecipeShape, divides_batch
from testbed.nemo_rl_standin.config_rules import apply_overrides, load_config
from tests.harness import REPO, by_name, run_stack, variant
from tests.planning.test_ray import run as b200_run

SHARED = Path(os.environ.get("NEMO_RL_GKE_SHARED", str(REPO.parent / "shared")))
CONFIGS = SHARED / "reference" / "nemo-rl-v0.7.0" / "configs"
pytestmark = pytest.mark.skipif(
    not CONFIGS.exists() and os.environ.get("NEMO_RL_GKE_REQUIRE_SHARED") != "1",
    reason=f"NeMo RL v0.7.0 configs not found at {CONFIGS} (set NEMO_RL_GKE_SHARED)",
)


def driver_command(script: str) -> tuple[str, list[str]]:
    """(config file, overrides) of a driver script's `run_grpo.py` command."""
    words = shlex.split(
        "uv run python " + script.split(" && uv run python ", 1)[1].split(" 2>&1 | ", 1)[0]
    )
    at = words.index("--config")
    # The save-by override expands to nothing unless a submitted run sets it (its own test).
    return words[at + 1], [w for w in words[at + 2 :] if not w.startswith("${NEMO_RL_GKE_SAVE_BY")]


def job_command(result: Any) -> tuple[str, list[str]]:
    """(config file, overrides) of the RayJob's `run_grpo.py` command."""
    (_, _, script) = shlex.split(by_name(result)["ray-job"].inputs["spec"]["entrypoint"])
    return driver_command(script)


def workers_at_start(result: Any) -> tuple[int, int]:
    """(GPU workers, GPUs each) the job's cluster has when NeMo RL checks the resources."""
    records = by_name(result)
    spec = records["ray-job"].inputs["spec"]
    cluster = spec.get("rayClusterSpec") or records["ray-cluster"].inputs["spec"]
    (group,) = cluster["workerGroupSpecs"]
    (container,) = group["template"]["spec"]["containers"]
    return int(group["replicas"]), int(container["resources"]["limits"]["nvidia.com/gpu"])


SCENARIOS: dict[str, tuple[str, dict[str, Any]]] = {
    "dev": ("dev", {}),
    "dev-20-steps": ("dev", {"steps": 20}),
    "dev-one-node": ("dev", {"nodes": 1}),
    "b200": ("b200", {}),
    "b200-open-8b": ("b200", {"model": "Qwen/Qwen3-8B"}),
    "b200-1b-config": ("b200", {"config": "examples/configs/grpo_math_1B.yaml"}),
    "b200-one-node": ("b200", {"nodes": 1, "steps": 100}),
    "h200": ("h200", {}),
}


def job_result(tmp_path: Path, stack: str, job: dict[str, Any]) -> Any:
    tmp_path.mkdir(parents=True, exist_ok=True)
    changes: dict[str, Any] = {"nemo-rl-gke:ray": {"job": {"enabled": True, **job}}}
    if stack != "dev":
        changes["nemo-rl-gke:hfToken"] = {"secure": "v1:x"}
    return run_stack(stack, tmp_path, variant(stack, changes))


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_the_job_passes_nemo_rl_s_own_setup_rules(scenario: str, tmp_path: Path) -> None:
    stack, job = SCENARIOS[scenario]
    result = job_result(tmp_path, stack, job)
    config_file, overrides = job_command(result)
    assert config_file.startswith("examples/configs/")
    # Every override key exists in the config or is written +key (struct mode raises).
    cfg = apply_overrides(load_config(CONFIGS / Path(config_file).name), overrides)

    # Validation is configured whenever it is enabled (GRPO setup refuses it without a dataset).
    grpo = cfg.grpo
    if grpo.val_period > 0 or grpo.val_at_start or grpo.val_at_end:
        assert cfg.data.validation is not None, "validation is on without a validation dataset"
        assert cfg.data.validation.dataset_name == "gsm8k"
    assert cfg.data.train.dataset_name == "gsm8k"

    # The GPUs the job asks for are there when NeMo RL compares them with the cluster's.
    workers, gpus_each = workers_at_start(result)
    assert cfg.cluster.num_nodes <= workers
    assert cfg.cluster.num_nodes * cfg.cluster.gpus_per_node <= workers * gpus_each
    assert cfg.cluster.gpus_per_node <= gpus_each

    # Checkpoints and logs land on the shared volume, in the run's own directories.
    annotations = by_name(result)["ray-job"].inputs["metadata"]["annotations"]
    assert cfg.checkpointing.enabled is True
    assert cfg.checkpointing.checkpoint_dir == annotations["nemo-rl-gke/checkpoint-dir"]
    assert cfg.logger.log_dir == annotations["nemo-rl-gke/log-dir"]
    # Off in every recipe (no logger at all): on, the curves go under the run's logs.
    assert cfg.logger.tensorboard_enabled is True
    for folder in (cfg.checkpointing.checkpoint_dir, cfg.logger.log_dir):
        assert folder.startswith(f"/data/nemo-rl/runs/{annotations['nemo-rl-gke/run']}/")


def test_different_runs_never_share_directories(tmp_path: Path) -> None:
    """Within a stack (one shared volume), each run has its own checkpoints and logs."""
    dirs: dict[str, str] = {}
    for scenario, (stack, job) in SCENARIOS.items():
        result = job_result(tmp_path / scenario, stack, job)
        _, overrides = job_command(result)
        (checkpoints,) = [o for o in overrides if o.startswith("checkpointing.checkpoint_dir=")]
        same_volume = [d for s, d in dirs.items() if SCENARIOS[s][0] == stack]
        assert checkpoints not in same_volume, f"{scenario} reuses another run's checkpoints"
        dirs[scenario] = checkpoints
    # The same run planned twice is the same run (resumable), not a new one.
    again = job_result(tmp_path / "again", "dev", {"steps": 20})
    assert (
        dict(o.split("=", 1) for o in job_command(again)[1] if "=" in o)[
            "checkpointing.checkpoint_dir"
        ]
        == dirs["dev-20-steps"].split("=", 1)[1]
    )


def test_an_unknown_override_key_is_refused_like_nemo_rl_does() -> None:
    """The check is real: struct mode rejects a key the config does not have."""
    cfg = load_config(CONFIGS / "grpo_math_8B.yaml")
    with pytest.raises(Exception, match="no_such_key"):
        apply_overrides(cfg, ["grpo.no_such_key=1"])
    assert apply_overrides(load_config(CONFIGS / "grpo_math_8B.yaml"), ["+grpo.no_such_key=1"])


def test_the_inherited_config_says_what_setup_would_refuse() -> None:
    """Why validation must be set: grpo_math_8B inherits val_period 10 and no validation set."""
    cfg = load_config(CONFIGS / "grpo_math_8B.yaml")
    assert cfg.grpo.val_period == 10
    assert cfg.data.validation is None
    assert cfg.policy.model_name == "meta-llama/Llama-3.1-8B-Instruct"  # the child wins
    assert cfg.grpo.max_num_steps == 1000000  # inherited
    smoke = load_config(CONFIGS / "grpo_smoke.yaml")
    assert smoke.grpo.val_period == -1


@pytest.mark.parametrize("config", sorted(RECIPES))
def test_the_recipe_sizes_are_the_image_configs_own(config: str) -> None:
    """planning.ray_sizes.RECIPES, held to the real files (defaults resolved)."""
    cfg = load_config(CONFIGS / Path(config).name)
    dtensor = cfg.policy.dtensor_cfg
    assert RECIPES[config] == RecipeShape(
        prompts_per_step=cfg.grpo.num_prompts_per_step,
        generations_per_prompt=cfg.grpo.num_generations_per_prompt,
        train_global_batch_size=cfg.policy.train_global_batch_size,
        model_parallel=dtensor.tensor_parallel_size * dtensor.context_parallel_size,
    )
    assert cfg.grpo.max_num_epochs == 1  # why a run must ask for its epochs


def test_a_run_asks_for_the_epochs_its_steps_need() -> None:
    """500 steps asked: one epoch of GSM8K is 116 steps (7,473 rows at 64 prompts a step, the
    last partial batch dropped; grpo-run-facts), so the run asks NeMo RL for 5 epochs."""
    planned = grpo_overrides(b200_run(steps=500))
    assert "grpo.max_num_epochs=5" in planned
    cfg = apply_overrides(load_config(CONFIGS / "grpo_math_8B.yaml"), planned)
    assert (cfg.grpo.max_num_epochs, cfg.grpo.max_num_steps) == (5, 500)


@pytest.mark.parametrize(("nodes", "gpus", "ok"), [(2, 8, True), (4, 8, True), (2, 6, False),
                                                   (3, 8, False), (5, 8, False)])  # fmt: skip
def test_the_stack_shards_as_nemo_rl_does(nodes: int, gpus: int, ok: bool) -> None:
    """grpo-run-facts §2's table (NeMo RL's `shard_by_batch_size`: 2048 samples and 512 a
    training batch over the data-parallel ranks)."""
    assert divides_batch(RECIPES["examples/configs/grpo_math_8B.yaml"], nodes, gpus) is ok


def test_a_step_s_samples_must_fill_whole_global_batches() -> None:
    """NeMo RL's third batch rule (grpo.py: the step's samples over `train_global_batch_size`):
    512 samples in batches of 384 split over one GPU as over any, and still cannot train."""
    shape = RecipeShape(prompts_per_step=32, generations_per_prompt=16, train_global_batch_size=384)
    assert not divides_batch(shape, 1, 1)
    assert not divides_batch(shape, 2, 8)
    assert divides_batch(RecipeShape(32, 16, 256), 2, 8)
