"""Read the raw configuration the Pulumi engine gave this program."""

from __future__ import annotations

from typing import Any

from pulumi.runtime import config as runtime_config


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
