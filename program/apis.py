"""The project's APIs, enabled before anything that calls them is created."""

from __future__ import annotations

import pulumi

from components.apis import ProjectApis, ProjectApisArgs
from planning.apis import required_apis
from stack_config import StackConfig


def build_apis(cfg: StackConfig) -> list[pulumi.Resource]:
    """The Service resources the networks, the cluster and the bucket wait for; none when
    `enableApis` is false (the APIs are then the project owner's to enable)."""
    if not cfg.enable_apis:
        return []
    apis = ProjectApis(
        "apis",
        ProjectApisArgs(
            project=cfg.project,
            apis=required_apis(lustre=cfg.lustre.enabled, bucket=cfg.bucket.enabled),
        ),
    )
    return list(apis.services)
