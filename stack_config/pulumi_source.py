"""Read the raw configuration the Pulumi engine gave this program."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi
from pulumi.runtime import config as runtime_config

from planning.naming import PROJECT
from stack_config.secrets import SECRET_KEYS


def current_config_values() -> dict[str, Any]:
    """Every config key the engine passed, as raw values.

    The engine hands the program its config as the `PULUMI_CONFIG` JSON environment variable
    (or through `set_all_config` under the Automation API and mocks). Reading the whole map,
    rather than key by key through `pulumi.Config`, is what lets the loader reject a
    misspelt key such as `nemo-rl-gke:gpus` instead of silently ignoring it.
    """
    values: dict[str, Any] = dict(runtime_config.get_config_env())
    values.update(runtime_config.CONFIG.get())
    return values


def current_secret_keys(values: Mapping[str, Any]) -> set[str]:
    """The keys of `values` the engine passed as secrets (PULUMI_CONFIG_SECRET_KEYS)."""
    return {key for key in values if runtime_config.is_config_secret(key)}


def secret_outputs() -> dict[str, pulumi.Output[str]]:
    """The optional secrets this stack sets, each as a secret Output (never a plain str)."""
    config = pulumi.Config(PROJECT)
    found: dict[str, pulumi.Output[str]] = {}
    for key in SECRET_KEYS:
        value = config.get_secret(key)
        if value is not None:
            found[key] = value
    return found
