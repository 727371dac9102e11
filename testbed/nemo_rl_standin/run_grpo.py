"""examples/run_grpo.py of the NeMo RL stand-in (test bed only; NOT NeMo RL, trains nothing).

Written from what NeMo RL v0.7.0 is documented to do with Ray (SOURCE.md: `examples/run_grpo.py`,
`nemo_rl/utils/config.py`, `nemo_rl/distributed/virtual_cluster.py`, `worker_groups.py`,
`numa_utils.py`); no NeMo RL code is in here. It does, on a real Ray cluster:

- load `--config` with NeMo RL's loading rules (`defaults:` chain, Hydra overrides in struct
  mode) from the image's examples/configs (the shared v0.7.0 configs); GRPO setup's own checks
  (validation needs a validation dataset) are not imitated: the stack's rule for them is tested
  on its own (tests/planning/test_ray_nemo_rl_configs.py);
- resume: a run whose newest checkpoint already reached `grpo.max_num_steps` exits at once;
- run `grpo.max_num_steps` steps (NeMo RL's epoch cap and its batch-sharding assertions are
  not imitated: no test here can hold them to NeMo RL, which cannot run without CUDA; the
  stack's own rules for them, planning/ray_sizes.py, cite NeMo RL's source);
- `ray.init(address="auto", runtime_env={"env_vars": dict(os.environ)})`, catching only
  ConnectionError, as `init_ray` does;
- compare the cluster's GPUs with `cluster.num_nodes x cluster.gpus_per_node` in 6 checks with
  2^i-second sleeps (NRL_VIRTUAL_CLUSTER_MAX_RETRIES), then ResourceInsufficientError, as
  recorded from the real RayVirtualCluster;
- GRPO's policy placement groups (one PACK group per node, a `{CPU, GPU}` bundle per GPU, as
  recorded from the real RayVirtualCluster), one actor per bundle (`num_gpus=1`) started with the
  driver's environment, as NeMo RL's worker groups are;
- each actor reports its GPU ids, CUDA_VISIBLE_DEVICES, the NCCL / gIB variables and library
  path it sees, whether its node holds the policy model in the Hugging Face cache, and its
  NUMA map line (read as the real `bind_to_gpu_numa` reads it, recorded); on a node of an
  RDMA GPU it must see NCCL told to use gIB with the plugin there;
- the Hub: every worker resolves the model through the Hub unless `HF_HUB_OFFLINE` is on, so a
  run that is not offline fails naming who would have called it, and an offline run needs the
  model in the cache (the driver's script downloads it first); the driver loads GSM8K with the
  real `datasets` (4.8.5, the image's), which offline finds only what the driver prepared;
- the driver writes its log and the actors' reports under `logger.log_dir`, checkpoints under
  `checkpointing.checkpoint_dir` (when enabled) every `save_period` steps and at the end, as
  NeMo RL lays them out and keeps them (`tmp_step_N` renamed `step_N` when complete; the
  `keep_top_k` best by the config's metric plus the newest, which without validation here means
  the newest k; both compared with the real `CheckpointManager`'s recorded behaviour), resumes
  from the newest complete `step_N`, and exits non-zero
  when an actor got no GPU or no gIB environment (or did not start at all).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from testbed.nemo_rl_standin.config_rules import apply_overrides, load_config

NUMA_MAP = "nrl_gpu_cpu_affinity"
"""NeMo RL's GPU -> CPU list file, in the node's /tmp (`numa_utils.py` GPU_CPU_AFFINITY_PATH)."""
NODES_ENV = "NEMO_RL_GKE_TESTBED_NODES"
"""The test bed's node records (testbed.node_fs): what a worker can learn about its node."""

STEP_NAME = re.compile(r"step_\d+")
"""A complete checkpoint's folder name (NeMo RL's `get_latest_checkpoint_path`)."""

STANDIN = "NeMo RL stand-in (test bed, not NeMo RL: no model is trained)"


HUB_DATASETS = {"gsm8k": ("openai/gsm8k", "main")}
"""The Hub repository and configuration NeMo RL loads for a dataset name
(`response_datasets/gsm8k.py`)."""


def load_data(name: str, splits: list[str]) -> dict[str, int]:
    """NeMo RL's data setup, by the real `datasets` (the test bed's venv pins the image's
    4.8.5): `load_dataset(REPO, CONFIG)[split]` for the training split and the validation split
    the config names. Rows per split, for the log."""
    from datasets import load_dataset

    repo, config = HUB_DATASETS[name]
    return {split: len(load_dataset(repo, config)[split]) for split in splits}


def offline() -> bool:
    """huggingface_hub's reading of HF_HUB_OFFLINE."""
    return os.environ.get("HF_HUB_OFFLINE", "").upper() in ("1", "ON", "YES", "TRUE")


def cached(kind: str, repo: str) -> bool:
    """Whether the Hugging Face cache under HF_HOME holds the repository."""
    entry = f"{kind}s--" + repo.replace("/", "--")
    return Path(os.environ.get("HF_HOME", "/nonexistent"), "hub", entry, "refs", "main").exists()


class ResourceInsufficientError(Exception):
    """Fewer GPUs in the cluster than the run asks for (NeMo RL's own error's name)."""


def say(message: str) -> None:
    """A line of the driver's log."""
    print(f"[{STANDIN}] {message}", flush=True)


def wait_for_gpus(
    wanted: int, have: Callable[[], int], retries: int, sleep: Callable[[float], None]
) -> None:
    """NeMo RL's check of the cluster's GPUs before its placement groups, as v0.7.0 retries it
    (`NRL_VIRTUAL_CLUSTER_MAX_RETRIES` checks, each failed one followed by a 2^i-second sleep,
    the last one's too, then ResourceInsufficientError); compared with the real
    RayVirtualCluster's recorded behaviour in tests/testbed."""
    for attempt in range(retries):
        found = have()
        if found >= wanted:
            return
        say(f"{found} of {wanted} GPUs; check {attempt + 1}/{retries}, again in {2**attempt} s")
        sleep(2**attempt)
    raise ResourceInsufficientError(f"{retries} checks found fewer than {wanted} GPUs")


def numa_cpulist(text: str | None, gpu: str) -> str:
    """The CPU list a NeMo RL worker on `gpu` pins itself to from the affinity file's text (None:
    no file), "" when it runs unpinned: `bind_to_gpu_numa`'s reading (lines stripped, blank ones
    skipped, the first whose id before ":" is the GPU's); compared with the real function's
    recorded behaviour in tests/testbed."""
    for raw in (text or "").splitlines():
        line = raw.strip()
        if line:
            index, cpulist = line.split(":", 1)
            if index == gpu:
                return cpulist
    return ""


def placement_groups(nodes: int, per_node: int, backend: str) -> list[dict[str, Any]]:
    """GRPO's policy placement groups as NeMo RL v0.7.0 makes them for colocated generation of a
    model that fits a node: one PACK group per node named `grpo_policy_cluster-node<i>`, one
    bundle per GPU with one CPU per colocated worker group (2, or 1 for Megatron generation);
    compared with the real RayVirtualCluster's recorded groups in tests/testbed."""
    cpus = 1.0 if backend == "megatron" else 2.0
    return [
        {
            "name": f"grpo_policy_cluster-node{n}",
            "strategy": "PACK",
            "bundles": [{"CPU": cpus, "GPU": 1.0}] * per_node,
        }
        for n in range(nodes)
    ]


def latest_checkpoint_step(folder: Path) -> int | None:
    """The newest `step_N` checkpoint in the run's folder (`tmp_step_N`, `old_step_N` ignored)."""
    steps = [int(p.name[5:]) for p in folder.glob("step_*") if STEP_NAME.fullmatch(p.name)]
    return max(steps) if steps else None


def begin_save(folder: Path, step: int, info: dict[str, Any]) -> Path:
    """The folder a save of `step` is written into: `tmp_step_N`, made if missing (a leftover
    of a dead save is written into again, not emptied), with the training info in it."""
    tmp = folder / f"tmp_step_{step}"
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "training_info.json").write_text(json.dumps(info), encoding="utf-8")
    return tmp


def finish_save(tmp: Path, retention: Mapping[str, Any] | None = None) -> Path:
    """A complete save renamed `step_N`; a `step_N` already there (a step saved again after a
    resume) is moved to `old_step_N` first and removed once the new one is in place. Then the
    checkpointing keys' retention (`keep_top_k`, `metric_name`, `higher_is_better`)."""
    step = tmp.name.removeprefix("tmp_step_")
    final, old = tmp.parent / f"step_{step}", tmp.parent / f"old_step_{step}"
    if final.exists():
        final.rename(old)
        tmp.rename(final)
        shutil.rmtree(old)
    else:
        tmp.rename(final)
    keep = (retention or {}).get("keep_top_k")
    if keep is not None:
        _retain(tmp.parent, int(keep), retention or {})
    return final


def _retain(folder: Path, keep: int, retention: Mapping[str, Any]) -> None:
    """Keep the `keep` best complete checkpoints and the newest: best by the metric in their
    training info (a checkpoint without it ranks last), the newer first among equals; without
    a metric name, the newest."""
    metric, higher = retention.get("metric_name"), bool(retention.get("higher_is_better", True))
    saved = []
    for path in folder.glob("step_*"):
        info_file = path / "training_info.json"
        if STEP_NAME.fullmatch(path.name) and info_file.exists():
            saved.append((int(path.name[5:]), path, json.loads(info_file.read_text())))
    if not saved:
        return
    newest = max(step for step, _, _ in saved)

    def rank(entry: tuple[int, Path, dict[str, Any]]) -> tuple[float, int]:
        step, _, info = entry
        if metric is None:
            return (0.0, step)
        value = info.get(metric)
        if value is None:
            return (float("-inf"), step)
        return (float(value) if higher else -float(value), step)

    ordered = sorted(saved, key=rank, reverse=True)
    for step, path, _ in ordered[keep:]:
        if step != newest:
            shutil.rmtree(path)


def node_record(ip: str) -> dict[str, Any]:
    """The test bed's record of the node at `ip` (workers run this: standard library only)."""
    path = Path(os.environ.get(NODES_ENV, "/nonexistent"), f"{ip}.json")
    found: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    return found


def report(model: str) -> dict[str, Any]:
    """What a training / generation worker sees where Ray placed it."""
    import ray

    ip = ray.util.get_node_ip_address()  # type: ignore[no-untyped-call]
    node = node_record(ip)
    gpu_ids = [str(g) for g in ray.get_gpu_ids()]
    affinity = Path(node.get("tmp", "/tmp"), NUMA_MAP)  # noqa: S108 - the container's /tmp
    text = affinity.read_text() if affinity.exists() else None
    cpus = numa_cpulist(text, gpu_ids[0]) if gpu_ids else ""
    numa = f"{gpu_ids[0]}:{cpus}" if cpus else ""
    plugin = os.environ.get("NCCL_NET_PLUGIN", "")
    return {
        "node_ip": ip,
        "pod": node.get("pod", ""),
        "rdma_node": bool(node.get("rdma")),
        "gpu_ids": gpu_ids,
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "nccl": {k: v for k, v in sorted(os.environ.items()) if k.startswith("NCCL_")},
        "gloo_socket_ifname": os.environ.get("GLOO_SOCKET_IFNAME"),
        "gib_plugin_present": bool(plugin) and Path(plugin).is_file(),
        "ld_library_path": os.environ.get("LD_LIBRARY_PATH", ""),
        "model_cached": cached("model", model),
        "hub_offline": offline(),
        "tokens_in_env": sorted(k for k in ("HF_TOKEN", "WANDB_API_KEY") if k in os.environ),
        "numa": numa,
    }


def problems_of(found: dict[str, Any]) -> list[str]:
    """Why this worker could not train (empty when it could)."""
    problems = []
    where = f"{found['pod'] or found['node_ip']}"
    if not found["gpu_ids"] or not found["cuda_visible_devices"]:
        problems.append(f"{where}: no GPU (CUDA_VISIBLE_DEVICES={found['cuda_visible_devices']!r})")
    if found["rdma_node"] and not (
        found["nccl"].get("NCCL_NET") == "gIB" and found["gib_plugin_present"]
    ):
        problems.append(
            f"{where}: RDMA node without the gIB environment (NCCL_NET="
            f"{found['nccl'].get('NCCL_NET')!r}, plugin present: {found['gib_plugin_present']})"
        )
    if not found["model_cached"]:
        problems.append(f"{where}: the policy model is not in the Hugging Face cache")
    if not found["hub_offline"]:
        problems.append(
            f"{where}: would resolve the model through the Hugging Face Hub at start-up"
            " (HF_HUB_OFFLINE is not on)"
        )
    return problems


def main() -> int:  # noqa: C901, PLR0915 - the stand-in's run, in NeMo RL's order of steps
    """Run the stand-in GRPO entry point."""
    parser = argparse.ArgumentParser(description=STANDIN)
    parser.add_argument("--config", required=True)
    args, overrides = parser.parse_known_args()
    say(f"loading {args.config} with overrides {overrides}")
    cfg = apply_overrides(load_config(Path(args.config)), overrides)
    grpo = cfg.grpo
    steps = int(grpo.max_num_steps)
    nodes, per_node = int(cfg.cluster.num_nodes), int(cfg.cluster.gpus_per_node)
    model = str(cfg.policy.model_name)
    log_dir = Path(cfg.logger.log_dir)
    checkpoints = Path(cfg.checkpointing.checkpoint_dir) if cfg.checkpointing.enabled else None
    start = 0
    if checkpoints is not None:
        start = latest_checkpoint_step(checkpoints) or 0
        if start >= steps:
            say(f"resumed at step {start} of {steps}: nothing left to do")
            return 0
        if start:
            say(f"resuming from the checkpoint of step {start}")

    name = str(cfg.data.train.dataset_name)
    if not offline():
        raise ConnectionError(
            f"the driver would load {name} from the Hugging Face Hub with 16+ workers starting"
            " (HF_HUB_OFFLINE is not on)"
        )
    if name in HUB_DATASETS:
        validation = cfg.data.get("validation") or {}
        splits = ["train", *([str(validation.get("split"))] if validation.get("split") else [])]
        say(f"loaded {name}: {load_data(name, splits)} rows")

    import ray
    from ray.util.placement_group import placement_group

    env_vars = dict(os.environ)
    env_vars.pop("RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES", None)
    runtime_env = {"env_vars": env_vars}
    try:
        ray.init(
            address="auto", log_to_driver=True, include_dashboard=False, runtime_env=runtime_env
        )
    except ConnectionError:
        say("no Ray cluster to attach to (NeMo RL would start a local one; the stand-in stops)")
        return 1
    say(f"attached to Ray {ray.__version__}: {ray.cluster_resources()}")  # type: ignore[no-untyped-call]

    wait_for_gpus(
        nodes * per_node,
        lambda: int(ray.cluster_resources().get("GPU", 0)),  # type: ignore[no-untyped-call]
        int(os.environ.get("NRL_VIRTUAL_CLUSTER_MAX_RETRIES", "6")),
        time.sleep,
    )

    backend = str(cfg.policy.generation.backend)
    groups = [
        placement_group(g["bundles"], strategy=g["strategy"], name=g["name"])
        for g in placement_groups(nodes, per_node, backend)
    ]
    ray.get([g.ready() for g in groups], timeout=180)
    worker = ray.remote(num_gpus=1, num_cpus=1)(_Worker)
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    # Each worker's rank in its environment, as NeMo RL's worker groups set it.
    actors: list[Any] = [
        worker.options(
            runtime_env={"env_vars": {**env_vars, "RANK": str(n * per_node + index)}},
            scheduling_strategy=PlacementGroupSchedulingStrategy(
                placement_group=group, placement_group_bundle_index=index
            ),
        ).remote()
        for n, group in enumerate(groups)
        for index in range(per_node)
    ]
    reports: list[dict[str, Any]] = []
    problems: list[str] = []
    for actor in actors:
        try:
            found: dict[str, Any] = ray.get(actor.report.remote(model), timeout=300)
        except Exception as died:  # noqa: BLE001 - an actor that never started fails the run
            problems.append(f"a worker died before it reported: {type(died).__name__}: {died}")
            continue
        reports.append(found)
        problems += problems_of(found)
    log_dir.mkdir(parents=True, exist_ok=True)
    (log_dir / "standin-workers.json").write_text(json.dumps(reports, indent=1), encoding="utf-8")
    for seen in reports:
        say(
            f"worker on {seen['pod'] or seen['node_ip']}: GPUs {seen['gpu_ids']},"
            f" NCCL_NET={seen['nccl'].get('NCCL_NET')}, numa {seen['numa'] or 'unpinned'}"
        )
    if problems:
        for problem in problems:
            say(f"FAILED: {problem}")
        raise RuntimeError(f"{len(problems)} of {len(actors)} workers cannot train: {problems[0]}")
    period = int(cfg.checkpointing.get("save_period") or 0) if checkpoints is not None else 0
    retention = {
        key: cfg.checkpointing.get(key) for key in ("keep_top_k", "metric_name", "higher_is_better")
    }
    for step in range(start + 1, steps + 1):
        say(f"step {step}/{steps} (stand-in: no training)")
        if checkpoints is not None and ((period and step % period == 0) or step == steps):
            save_checkpoint(checkpoints, step, model, actors, retention)
    say(f"done: {len(reports)} workers on {len({r['node_ip'] for r in reports})} nodes")
    return 0


EXIT_DURING_SAVE = "NEMO_RL_STANDIN_EXIT_DURING_SAVE"
"""Test bed only: the step whose save the driver dies in (after the workers wrote, before the
folder is renamed), as a killed pod would."""


def save_checkpoint(
    folder: Path, step: int, model: str, actors: list[Any], retention: Mapping[str, Any]
) -> None:
    """A save as NeMo RL v0.7.0 lays it out and keeps it (`begin_save`, `finish_save`; compared
    with the real `CheckpointManager`'s recorded layout and retention in tests/testbed): every
    worker saves the policy's tokenizer into `tmp_step_N`, as v0.7.0 does on every rank (the
    `writers` file of the transformers stand-in shows who wrote)."""
    import ray

    tmp = begin_save(folder, step, {"step": step, "model": model, "standin": STANDIN})
    (tmp / "policy").mkdir(exist_ok=True)
    ray.get([a.save_tokenizer.remote(str(tmp / "policy" / "tokenizer"), model) for a in actors])
    if os.environ.get(EXIT_DURING_SAVE) == str(step):
        say(f"dying during the save of step {step} ({EXIT_DURING_SAVE})")
        os._exit(137)
    finish_save(tmp, retention)
    say(f"saved the checkpoint of step {step}")


class _Worker:
    """One training / generation worker (a Ray actor with one GPU)."""

    def report(self, model: str) -> dict[str, Any]:
        found = report(model)
        # A worker's output, as NeMo RL's workers print theirs: Ray keeps it in the worker's
        # log file on its node (what the stack's log sidecar ships).
        say(f"worker on {found.get('node_ip')} reporting GPUs {found.get('gpu_ids')}")
        return found

    def save_tokenizer(self, path: str, model: str) -> None:
        """Each rank's save of the policy's tokenizer, as v0.7.0 does it: on every rank,
        through transformers (the image's; the test bed's stand-in here)."""
        from transformers import AutoTokenizer  # the image's (the test bed's stand-in here)

        AutoTokenizer.from_pretrained(model).save_pretrained(path)


if __name__ == "__main__":
    sys.exit(main())
