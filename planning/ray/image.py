"""The NeMo RL image: its tag, its CUDA and Ray, its GRPO script and the GSM8K recipe."""

from __future__ import annotations

import re

GATED_MODEL_ORGS = frozenset({"meta-llama", "google", "mistralai", "nvidia"})
"""Hugging Face orgs whose models need an accepted licence and a token to download."""

# CUDA runtime of each NeMo RL image, and the driver branch that CUDA needs
# (NVIDIA-NeMo/RL:docker/Dockerfile per tag; CUDA 13 needs R580+, CUDA 12.9 R575+).
IMAGE_CUDA: dict[str, tuple[int, int]] = {"v0.5.0": (12, 9), "v0.6.0": (12, 9), "v0.7.0": (13, 2)}
IMAGE_RAY: dict[str, str] = {"v0.5.0": "2.49.2", "v0.6.0": "2.54.0", "v0.7.0": "2.55.1"}
"""Ray pinned in each tag's uv.lock: the RayCluster's rayVersion must equal it."""


def image_tag(image: str) -> str:
    """`nvcr.io/nvidia/nemo-rl:v0.7.0` -> `v0.7.0`."""
    return image.rsplit(":", 1)[-1]


def _version(tag: str) -> tuple[int, ...]:
    match = re.match(r"^v?(\d+)\.(\d+)\.(\d+)", tag)
    if match is None:
        raise ValueError(f"cannot read a NeMo RL version from image tag {tag!r}")
    return tuple(int(p) for p in match.groups())


def grpo_script(image: str) -> str:
    """The GRPO entry point of the image: `run_grpo_math.py` was removed in v0.6.0."""
    return (
        "examples/run_grpo.py"
        if _version(image_tag(image)) >= (0, 6, 0)
        else "examples/run_grpo_math.py"
    )


DATASET = "gsm8k"
"""The dataset every run trains on (`data.train.dataset_name`)."""


def gsm8k_overrides(image: str) -> list[str]:
    """Dataset overrides that train and validate on GSM8K in the image's config schema.

    NeMo RL's GSM8K dataset builds only a training split, and GRPO setup refuses to start
    when validation is on (`grpo.val_period > 0` in grpo_math_1B.yaml) without a validation
    dataset: validate on GSM8K's test split, as upstream's GSM8K recipes do.
    """
    if _version(image_tag(image)) >= (0, 6, 0):
        return [
            f"data.train.dataset_name={DATASET}",
            "data.validation={dataset_name:gsm8k,split:test}",
        ]
    # v0.5.0 (Google's sample, tutorial-facts §12.1): a response dataset from the HF Hub.
    return [
        "data.dataset_name=ResponseDataset",
        "+data.train_data_path=openai/gsm8k",
        "+data.val_data_path=openai/gsm8k",
        "+data.train_split=train",
        "+data.val_split=test",
        '+data.subset="main"',
        '+data.input_key="question"',
        '+data.output_key="answer"',
    ]


def model_is_gated(model: str) -> bool:
    """True for models whose download needs a Hugging Face token. The Hub resolves repo ids
    without regard to case (`Meta-Llama/...` is Meta's gated repository), so the owner is
    compared in lower case."""
    return model.split("/", 1)[0].lower() in GATED_MODEL_ORGS
