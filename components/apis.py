"""The Google APIs a stack calls, enabled in its project."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp


@dataclass(frozen=True, kw_only=True)
class ProjectApisArgs:
    """Inputs of the API set."""

    project: str
    apis: Mapping[str, str]
    """API -> what of the stack needs it (planning.apis)."""


class ProjectApis(pulumi.ComponentResource):
    """One `projects.Service` per API, never disabled by a destroy.

    `disable_on_destroy=False`: turning an API off would break every other stack and workload
    in the project; enabling one that is already on is a no-op, so two stacks in one project
    can both declare it. Resources that call an API wait for `services`.
    """

    services: list[gcp.projects.Service]
    """The Service resources, for `depends_on`."""

    def __init__(
        self, name: str, args: ProjectApisArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("nemo:project:Apis", name, None, opts)
        self.services = [
            gcp.projects.Service(
                f"{name}-{api.split('.', 1)[0]}",
                project=args.project,
                service=api,
                disable_on_destroy=False,
                opts=pulumi.ResourceOptions(parent=self),
            )
            for api in args.apis
        ]
        self.register_outputs({"services": [s.service for s in self.services]})
