"""One GRPO run: its definition, its id, its cluster's lifetime and its Hydra overrides."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from planning.ray.image import DATASET, gsm8k_overrides
from planning.ray.pods import GIB_DIR
from planning.ray_sizes import DATASET_TRAIN_ROWS, RECIPES, RecipeShape, epochs_for

RUN_ID_LENGTH = 8
"""Hex digits of a run id derived from the run's definition."""
GIB_ENV_SCRIPT = f"{GIB_DIR}/scripts/set_nccl_env.sh"
"""Google's gIB NCCL settings, installed on RDMA GPU nodes with the plugin (and kept current)."""
GIB_RESOURCE = "nemo_rl_gib"
"""Ray resource every RDMA worker advertises once; the job's driver asks for it, so the driver
starts on a worker whose shell has sourced the gIB script (NeMo RL forwards the driver's
environment to every training and generation process)."""
OWN_CLUSTER_RETRIES = 3
"""`backoffLimit` of a RayJob that brings its own cluster (pools that scale from zero, Spot on
dev): a preempted node fails the run, KubeRay runs it again on a new cluster and NeMo RL resumes
from the newest checkpoint in the run's folder. Three covers a bad hour on Spot without looping
forever on a run that fails for its own reasons."""

KEEP_FAILED_HEAD_MINUTES = 24 * 60
"""How long the head of a failed run's own cluster stays (its dashboard, the job's driver log,
Ray's logs of every process in the head's session folder) before KubeRay deletes the cluster:
a day to look, while the GPU workers go at once."""
SUCCEEDED_CLUSTER_TTL_SECONDS = 60
"""A run that succeeded gives its whole cluster back a minute after it ends."""


def deletion_rules(keep_failed_seconds: int) -> list[dict[str, Any]]:
    """KubeRay's deletionRules (RayJobDeletionPolicy, beta and on since KubeRay 1.6) of a RayJob
    that brings its own cluster outside the queue: on success the cluster goes after a minute;
    on failure (the Ray job failed, or the RayJob did: a start deadline, a submission that
    failed) the GPU workers go at once and the head stays `keep_failed_seconds` for a
    post-mortem. KubeRay requires the TTLs to grow from workers to cluster, and refuses these
    rules with shutdownAfterJobFinishes, with a clusterSelector, or DeleteWorkers with
    autoscaling (ray-operator/controllers/ray/utils/validation.go)."""
    failed: list[dict[str, str]] = [{"jobStatus": "FAILED"}, {"jobDeploymentStatus": "Failed"}]
    rules: list[dict[str, Any]] = [
        {
            "policy": "DeleteCluster",
            "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": SUCCEEDED_CLUSTER_TTL_SECONDS},
        }
    ]
    for condition in failed:
        rules.append({"policy": "DeleteWorkers", "condition": {**condition, "ttlSeconds": 0}})
        rules.append(
            {
                "policy": "DeleteCluster",
                "condition": {**condition, "ttlSeconds": keep_failed_seconds},
            }
        )
    return rules


@dataclass(frozen=True)
class GrpoRun:
    """Everything that shapes one GRPO run, and its identity.

    A run is named `<job>-<run id>`. The run id defaults to a fingerprint of what the run is
    (image, config, model, steps, nodes, GPUs), so changing any of them starts a new run in new
    directories instead of resuming another run's checkpoints. Pinning the run id keeps the
    directories, so NeMo RL resumes from the newest checkpoint there; `attempt` makes a new
    RayJob for the same run (KubeRay never re-runs a finished RayJob).
    """

    image: str
    config: str
    model: str
    steps: int
    nodes: int
    gpus_per_node: int
    wandb: bool
    wandb_project: str
    job: str
    """Base name of the job (`ray.job.name`)."""
    runs_dir: str
    """Folder on the shared volume that holds every run's directory."""
    run_id: str | None = None
    """Pinned run id; None derives it from the run's definition."""
    attempt: int = 1
    rdma: bool = False
    """The GPU has RDMA NICs: the driver runs on an RDMA worker with the gIB environment."""
    tuner_config: str = ""
    """NCCL tuner file of the GPU (RDMA GPUs only)."""
    checkpoints: bool = True
    """Write (and resume from) checkpoints in the run's directory. The GRPO smoke runs without:
    a smoke run that resumed from an earlier one's last step would pass without training."""

    def fingerprint(self) -> str:
        """Short hash of what the run is (not of how it is logged)."""
        definition = json.dumps(
            [self.image, self.config, self.model, self.steps, self.nodes, self.gpus_per_node]
        )
        return hashlib.sha256(definition.encode()).hexdigest()[:RUN_ID_LENGTH]

    @property
    def id(self) -> str:
        """The run id: pinned, or the fingerprint."""
        return self.run_id or self.fingerprint()

    @property
    def name(self) -> str:
        """`<job>-<run id>`: names the run's directories and its W&B run."""
        return f"{self.job}-{self.id}"

    @property
    def rayjob_name(self) -> str:
        """The RayJob of this attempt (a new attempt is a new RayJob of the same run)."""
        return self.name if self.attempt == 1 else f"{self.name}-a{self.attempt}"

    @property
    def run_dir(self) -> str:
        """The run's own directory on the shared volume."""
        return f"{self.runs_dir.rstrip('/')}/{self.name}"

    @property
    def checkpoint_dir(self) -> str:
        """Where NeMo RL writes (and resumes from) checkpoints."""
        return f"{self.run_dir}/checkpoints"

    @property
    def log_dir(self) -> str:
        """Where NeMo RL writes its logs (instead of `logs` inside the container)."""
        return f"{self.run_dir}/logs"

    @property
    def gpus(self) -> int:
        """GPUs the run asks for: NeMo RL checks the cluster has this many before it starts."""
        return self.nodes * self.gpus_per_node

    @property
    def shape(self) -> RecipeShape | None:
        """The sizes of the run's recipe, when it is one this project knows."""
        return RECIPES.get(self.config)

    @property
    def epochs(self) -> int | None:
        """`grpo.max_num_epochs` that lets the run reach its steps (GSM8K's training rows over
        the recipe's prompts a step); None for a recipe of unknown sizes."""
        shape = self.shape
        return epochs_for(shape, DATASET_TRAIN_ROWS[DATASET], self.steps) if shape else None


def grpo_overrides(run: GrpoRun) -> list[str]:
    """The Hydra overrides the job passes to `run_grpo.py` (NeMo RL parses them in struct mode,
    so every key must exist in the config or be written `+key`)."""
    overrides = [
        f"policy.model_name={run.model}",
        f"cluster.num_nodes={run.nodes}",
        f"cluster.gpus_per_node={run.gpus_per_node}",
        f"grpo.max_num_steps={run.steps}",
        # The recipes stop after one epoch (116 steps on GSM8K at 64 prompts) whatever the
        # step count says: ask for the epochs the steps need.
        *([f"grpo.max_num_epochs={run.epochs}"] if run.epochs is not None else []),
        *(
            ["checkpointing.enabled=true", f"checkpointing.checkpoint_dir={run.checkpoint_dir}"]
            if run.checkpoints
            else ["checkpointing.enabled=false"]
        ),
        f"logger.log_dir={run.log_dir}",
        # NeMo RL initialises no logger by default: loss, reward and accuracy would only be
        # printed. TensorBoard writes them under the run's logs, on the shared volume.
        "logger.tensorboard_enabled=true",
        *gsm8k_overrides(run.image),
        f"logger.wandb_enabled={str(run.wandb).lower()}",
    ]
    if run.wandb:
        overrides += [
            f"logger.wandb.project={run.wandb_project}",
            f"logger.wandb.name={run.name}",
        ]
    return overrides
