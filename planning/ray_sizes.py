"""Pure planning of a GRPO run's sizes: what NeMo RL v0.7.0 can split and how long an epoch is.

NeMo RL shards every training and log-probability batch into one piece per data-parallel rank
and asserts "Batch size (...) is not a multiple of shards (...)" (`BatchedDataDict.
shard_by_batch_size`) - after vLLM has started and a whole rollout ran, many GPU-minutes in. The
data-parallel size is every GPU of the run over the model-parallel sizes (tensor x context x
pipeline, all 1 in the recipes below), so it must divide both the training batch and the samples
of a step. An epoch ends after `rows // prompts` steps (the training loader drops the last,
partial batch) and the loop stops at `grpo.max_num_epochs` (1 in the recipes) whatever
`grpo.max_num_steps` says: a run asks for the epochs its steps need.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class RecipeShape:
    """The sizes of one NeMo RL recipe that decide which cluster shapes can run it."""

    prompts_per_step: int
    """`grpo.num_prompts_per_step`."""
    generations_per_prompt: int
    """`grpo.num_generations_per_prompt`."""
    train_global_batch_size: int
    """`policy.train_global_batch_size`."""
    model_parallel: int = 1
    """Tensor x context x pipeline parallel sizes of the policy."""

    @property
    def samples_per_step(self) -> int:
        """Responses a step generates and scores (prompts x generations)."""
        return self.prompts_per_step * self.generations_per_prompt


RECIPES: dict[str, RecipeShape] = {
    "examples/configs/grpo_math_8B.yaml": RecipeShape(64, 32, 512),
    "examples/configs/grpo_math_1B.yaml": RecipeShape(32, 16, 512),
    "examples/configs/grpo_smoke.yaml": RecipeShape(2, 4, 8),
}
"""The image's recipes this project runs (NeMo RL v0.7.0 examples/configs, defaults resolved;
the tests hold this table to the real files)."""

DATASET_TRAIN_ROWS: dict[str, int] = {"gsm8k": 7473}
"""Training rows of the datasets the run names (openai/gsm8k `main`, split `train`)."""


def data_parallel(shape: RecipeShape, nodes: int, gpus_per_node: int) -> int:
    """The run's data-parallel size (0 when its GPUs do not split into whole model replicas)."""
    gpus = nodes * gpus_per_node
    return gpus // shape.model_parallel if gpus % shape.model_parallel == 0 else 0


def divides_batch(shape: RecipeShape, nodes: int, gpus_per_node: int) -> bool:
    """Whether NeMo RL can shard this recipe's batches over these GPUs. Its third rule is the
    recipe's own: a step's samples are trained in whole global batches (`grpo.py` asserts
    `total % batch_size == 0` over the step's samples and `train_global_batch_size`)."""
    dp = data_parallel(shape, nodes, gpus_per_node)
    return (
        dp > 0
        and shape.train_global_batch_size % dp == 0
        and shape.samples_per_step % dp == 0
        and shape.samples_per_step % shape.train_global_batch_size == 0
    )


def shapes_that_fit(
    shape: RecipeShape, max_nodes: int, gpus_per_node: int
) -> list[tuple[int, int]]:
    """(nodes, GPUs per node) pairs up to the pool's size that NeMo RL can shard, whole nodes
    first: what a refusal offers instead."""
    return [
        (nodes, gpus)
        for gpus in range(gpus_per_node, 0, -1)
        for nodes in range(1, max_nodes + 1)
        if divides_batch(shape, nodes, gpus)
    ]


def describe_shapes(shapes: list[tuple[int, int]], limit: int = 4) -> str:
    """`1, 2 or 4 nodes x 8 GPUs` (the first few, grouped by GPUs per node)."""
    by_gpus: dict[int, list[int]] = {}
    for nodes, gpus in shapes[:limit]:
        by_gpus.setdefault(gpus, []).append(nodes)
    parts = []
    for gpus, node_counts in by_gpus.items():
        counts = [str(n) for n in node_counts]
        listed = counts[0] if len(counts) == 1 else f"{', '.join(counts[:-1])} or {counts[-1]}"
        parts.append(f"{listed} node{'s' if node_counts != [1] else ''} x {gpus} GPUs")
    return "; ".join(parts)


def steps_per_epoch(shape: RecipeShape, rows: int) -> int:
    """Steps in one pass over the training rows (the loader drops the last partial batch)."""
    return rows // shape.prompts_per_step


def epochs_for(shape: RecipeShape, rows: int, steps: int) -> int:
    """Epochs a run of `steps` steps needs, so the epoch cap does not end it early."""
    per_epoch = steps_per_epoch(shape, rows)
    return max(1, math.ceil(steps / per_epoch)) if per_epoch else 0
