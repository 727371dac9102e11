"""The NeMo RL image: its tag, its CUDA and Ray, its GRPO script and the GSM8K recipe."""

from __future__ import annotations

import re

from planning.ray.pods import GATED_MODEL_ORGS


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
