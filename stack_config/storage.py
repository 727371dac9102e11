"""Shared storage: the Managed Lustre instance (production) and the GCS FUSE bucket (dev)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Self

from pydantic import Field, model_validator

from planning.storage import Throughput, capacity_problem
from stack_config.base import ConfigModel
from stack_config.errors import ConfigProblem


class LustreConfig(ConfigModel):
    """Google Cloud Managed Lustre instance in the GPU zone."""

    enabled: bool = Field(False, description="Create the Managed Lustre instance and its PV/PVC.")
    gke_support: bool = Field(
        False,
        description="Create the instance with GKE support (LNet on port 6988, cluster needs the"
        " legacy Lustre port). Default false: port 988 with nodes at 1.33.2-gke.4780000+, as"
        " Google now recommends.",
    )
    capacity_gib: int = Field(
        18_000, ge=1, description="Capacity in GiB; must fit the throughput tier's min/max/step."
    )
    throughput: Throughput = Field(
        500, description="Performance tier in MB/s per TiB: 125, 250, 500 or 1000."
    )
    filesystem: str = Field(
        "lustrefs",
        pattern=r"^[A-Za-z0-9]{1,8}$",
        description="Lustre file system name: 1-8 letters or digits.",
    )

    @model_validator(mode="after")
    def _tier(self) -> Self:
        problem = capacity_problem(self.throughput, self.capacity_gib)
        if problem is not None:
            raise ConfigProblem(
                ("capacityGib",),
                problem,
                "pick a capacity from the tier table in planning/storage.py",
            )
        return self


class BucketConfig(ConfigModel):
    """GCS bucket mounted with GCS FUSE (dev storage; datasets and exports in production)."""

    enabled: bool = Field(False, description="Create the bucket and its GCS FUSE PV/PVC.")
    name: str | None = Field(
        None,
        pattern=r"^[a-z0-9][a-z0-9_-]{1,61}[a-z0-9]$",
        description="Globally unique bucket name (default <project>-<name>-data).",
    )
    soft_delete_days: int = Field(
        7,
        ge=0,
        le=90,
        description="Soft-delete retention: deleted objects stay recoverable this long (0 = off).",
    )


def shared_storage_problems(lustre: LustreConfig, bucket: BucketConfig) -> Iterator[ConfigProblem]:
    """The Ray pods mount /data: one of the two must exist. Paths are relative to the stack."""
    if not (lustre.enabled or bucket.enabled):
        yield ConfigProblem(
            ("lustre", "enabled"),
            "the Ray pods mount shared storage at /data, and neither Lustre nor the bucket"
            " is enabled",
            "set lustre.enabled (production) or bucket.enabled (dev) to true",
        )


_GOOGLE_LIKE = re.compile(r"g[o0]{1,3}g[l1]e")
"""`google` and the close misspellings Google's naming page gives (g00gle) or that read as it."""


def bucket_name_problem(name: str) -> str | None:
    """Why Cloud Storage refuses `name`, beyond the character rules the model's pattern checks
    (https://cloud.google.com/storage/docs/buckets#naming), or None."""
    if re.fullmatch(r"\d{1,3}(\.\d{1,3}){3}", name):
        return "a bucket name may not be an IP address"
    if name.startswith("goog"):
        return "bucket names may not begin with the goog prefix"
    if _GOOGLE_LIKE.search(name.replace("-", "").replace("_", "")):
        return "bucket names may not contain google or a close misspelling of it (g00gle)"
    return None
