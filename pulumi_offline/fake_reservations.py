"""What the fake cloud answers when the program reads a reservation or a cluster.

Follows the result types of pulumi-gcp 10.2.0's functions, which carry what the Compute
Engine reservations API and the GKE clusters API answer. Offline, nothing can read the real
reservation. Preflight and the engine test bed's GCP stand-in answer the invokes the program
makes (`getReservation`, `getReservationBlock`, `getReservationSubBlock`, `getCluster`,
`getEngineVersions`) from a small description, a JSON file:

```json
{"reservations": [{"name": "res-a", "zone": "us-central1-b", "project": "p (optional)",
                   "machineType": "a4-highgpu-8g",
                   "accelerators": [{"type": "nvidia-b200", "count": 8}],
                   "count": 2, "inUse": 0,
                   "blocks": [{"name": "b1", "count": 2, "inUse": 0,
                               "subBlocks": [{"name": "s1", "count": 2, "inUse": 0}]}]}],
 "clusters": [{"name": "c", "location": "us-central1",
               "pools": [{"name": "gpu-b200", "nodes": 2, "zones": ["us-central1-b"],
                          "version": "1.35.8-gke.1036000 (optional)"}]}],
 "engineVersions": {"validMasterVersions": ["1.35.8-gke.1036000"],
                    "validNodeVersions": ["1.35.8-gke.1036000"],
                    "channelLatest": {"REGULAR": "1.35.8-gke.1036000"}}}
```

Answers carry every field of pulumi-gcp's result types (`pulumi_offline.sdk_results`); what the
description does not name is not there, and reading it fails as the Compute or GKE API does (a
404). A description can say anything a real reservation can: another machine type, too few
free VMs, a missing block - so a test can show the plan stopped.

Without a file, preflight assumes the reservation holds the pool (`assumed_for`) and says so.
Either way it cannot prove anything about the real reservation or cluster: the offline check
proves only that the program reads and judges the answer.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from planning.resource_types import (
    GET_CLUSTER,
    GET_ENGINE_VERSIONS,
    GET_RESERVATION,
    GET_RESERVATION_BLOCK,
    GET_RESERVATION_SUB_BLOCK,
)
from planning.versions import VERSIONS, parse_gke_version
from pulumi_offline.gcp_types import result_type
from pulumi_offline.json_files import first_problem, read_bounded
from pulumi_offline.sdk_results import complete

__all__ = [
    "GET_CLUSTER",
    "GET_RESERVATION",
    "GET_RESERVATION_BLOCK",
    "GET_RESERVATION_SUB_BLOCK",
    "TOKENS",
    "Accelerator",
    "Block",
    "CloudFixtures",
    "Cluster",
    "EngineVersions",
    "FixtureError",
    "NotFoundError",
    "PoolNodes",
    "Reservation",
    "SubBlock",
    "answer",
    "assumed_for",
    "assumed_versions",
    "load_fixtures",
]

TOKENS = (
    GET_RESERVATION,
    GET_RESERVATION_BLOCK,
    GET_RESERVATION_SUB_BLOCK,
    GET_CLUSTER,
    GET_ENGINE_VERSIONS,
)
"""The reads a description answers."""


_CHANNELS = ("RAPID", "REGULAR", "STABLE", "EXTENDED")
MAX_BYTES = 1 << 20
"""A description names a few reservations and clusters: kilobytes."""
_FORMAT = "see the format in pulumi_offline/fake_reservations.py"


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


class Accelerator(_Model):
    """GPUs per reserved VM."""

    type: str
    count: int = Field(ge=0)


class SubBlock(_Model):
    """A reservation sub-block: hosts (VMs) and how many are in use."""

    name: str
    count: int = Field(ge=0)
    in_use: int = Field(0, ge=0, alias="inUse")


class Block(_Model):
    """A reservation block."""

    name: str
    count: int = Field(ge=0)
    in_use: int = Field(0, ge=0, alias="inUse")
    sub_blocks: tuple[SubBlock, ...] = Field((), alias="subBlocks")


class Reservation(_Model):
    """A specific reservation of one machine shape in one zone."""

    name: str
    zone: str
    project: str | None = None
    """None: the reservation is found in whichever project is asked."""
    machine_type: str = Field(alias="machineType")
    accelerators: tuple[Accelerator, ...] = ()
    count: int = Field(ge=0)
    in_use: int = Field(0, ge=0, alias="inUse")
    blocks: tuple[Block, ...] = ()
    specific_required: bool = Field(True, alias="specificReservationRequired")
    """False: any VM of matching shape in the project may consume it (automatic consumption)."""


class PoolNodes(_Model):
    """A node pool of an existing cluster: nodes per zone and its zones."""

    name: str
    nodes: int = Field(ge=0)
    zones: tuple[str, ...]
    reservation: str | None = None
    """The specific reservation its nodes consume, as GKE holds the affinity value (`NAME`,
    `NAME/reservationBlocks/B` or `projects/P/reservations/NAME...`); none: no reservation."""
    version: str | None = None
    """The GKE version its nodes run (the API's `version`); none: not described."""

    @field_validator("version")
    @classmethod
    def _version(cls, value: str | None) -> str | None:
        if value is not None:
            parse_gke_version(value)
        return value


class Cluster(_Model):
    """An existing cluster (for the nodes its GPU pool already has)."""

    name: str
    location: str
    project: str | None = None
    pools: tuple[PoolNodes, ...] = ()
    version: str | None = None
    """The GKE version its control plane runs (the API's `currentMasterVersion`, pulumi-gcp's
    `masterVersion`); none: not described."""

    @field_validator("version")
    @classmethod
    def _version(cls, value: str | None) -> str | None:
        if value is not None:
            parse_gke_version(value)
        return value


class EngineVersions(_Model):
    """The GKE versions offered in the location (GKE's server config)."""

    valid_master: tuple[str, ...] = Field(alias="validMasterVersions")
    valid_node: tuple[str, ...] = Field(alias="validNodeVersions")
    channel_latest: dict[str, str] = Field(default_factory=dict, alias="channelLatest")
    """Each release channel's newest version."""

    @field_validator("valid_master", "valid_node")
    @classmethod
    def _versions(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for version in value:
            parse_gke_version(version)  # its ValueError names the value and the form
        return value

    @field_validator("channel_latest")
    @classmethod
    def _latest(cls, value: dict[str, str]) -> dict[str, str]:
        for channel, version in value.items():
            if channel not in _CHANNELS:
                raise ValueError(f"{channel!r} is not a release channel ({', '.join(_CHANNELS)})")
            parse_gke_version(version)
        return value


PINNED_VERSIONS = EngineVersions(
    valid_master=(VERSIONS.gke_channel_version.value,),
    valid_node=(VERSIONS.gke_channel_version.value,),
    channel_latest={VERSIONS.gke_release_channel.value: VERSIONS.gke_channel_version.value},
)
"""What a description without `engineVersions` answers: the pinned channel version only."""


class CloudFixtures(_Model):
    """Everything the fake cloud knows about reservations, existing clusters and versions."""

    reservations: tuple[Reservation, ...] = ()
    clusters: tuple[Cluster, ...] = ()
    engine_versions: EngineVersions | None = Field(None, alias="engineVersions")
    """None: the pinned channel version only (`PINNED_VERSIONS`)."""
    assumed: bool = False
    """Made up from the stack itself (no description given): the check proves nothing."""


class FixtureError(Exception):
    """A reservation description that cannot be used (preflight exit code 2)."""


class NotFoundError(Exception):
    """A 404 from the fake Compute or GKE API, worded like the real one."""


def load_fixtures(path: Path) -> CloudFixtures:
    """Read a description file (FixtureError naming the file, and the key when there is one,
    in one line when it is not one). Strict: JSON's `true` is no count, `"2"` no number."""
    try:
        text = read_bounded(path, MAX_BYTES)
        json.loads(text)  # JSON's own message (line and column) before the model's
        return CloudFixtures.model_validate_json(text, strict=True)
    except ValidationError as error:
        raise FixtureError(f"{path}: {first_problem(error)}; {_FORMAT}") from None
    except (OSError, ValueError, RecursionError) as error:
        raise FixtureError(f"{path}: not a reservation description: {error}") from None


def _not_found(path: str) -> NotFoundError:
    return NotFoundError(f"googleapi: Error 404: The resource '{path}' was not found, notFound")


def _reservation(
    fixtures: CloudFixtures, args: Mapping[str, Any], default_project: str
) -> tuple[Reservation, str, str]:
    project = str(args.get("project") or default_project)
    zone = str(args.get("zone") or "")
    name = str(args.get("reservation") or args.get("name") or "")
    for reservation in fixtures.reservations:
        if (
            reservation.name == name
            and reservation.zone == zone
            and reservation.project in (None, project)
        ):
            return reservation, project, zone
    raise _not_found(f"projects/{project}/zones/{zone}/reservations/{name}")


def _zonal(path: str, name: str, project: str, zone: str, kind: str) -> dict[str, Any]:
    """The fields every zonal Compute Engine object of a reservation answers with."""
    return {
        "id": path,
        "name": name,
        "project": project,
        "zone": zone,
        "selfLink": f"https://www.googleapis.com/compute/v1/{path}",
        "kind": kind,
        "status": "READY",
    }


def answer(
    fixtures: CloudFixtures, token: str, args: Mapping[str, Any], default_project: str
) -> dict[str, Any]:
    """The invoke's result, every field of the SDK's result type; NotFoundError as a 404."""
    if token == GET_CLUSTER:
        return _cluster(fixtures, args, default_project)
    if token == GET_ENGINE_VERSIONS:
        versions = fixtures.engine_versions or PINNED_VERSIONS
        return _engine_versions(versions, args, default_project)
    reservation, project, zone = _reservation(fixtures, args, default_project)
    base = f"projects/{project}/zones/{zone}/reservations/{reservation.name}"
    if token == GET_RESERVATION:
        return complete(
            result_type(token),
            {
                **_zonal(base, reservation.name, project, zone, "compute#reservation"),
                "specificReservationRequired": reservation.specific_required,
                "blockNames": [b.name for b in reservation.blocks],
                "specificReservations": [
                    {
                        "count": reservation.count,
                        "inUseCount": reservation.in_use,
                        "assuredCount": reservation.count,
                        "instanceProperties": [
                            {
                                "machineType": reservation.machine_type,
                                "guestAccelerators": [
                                    {"acceleratorType": a.type, "acceleratorCount": a.count}
                                    for a in reservation.accelerators
                                ],
                            }
                        ],
                    }
                ],
            },
        )
    block_name = str(args.get("reservationBlock") or args.get("name") or "")
    if token == GET_RESERVATION_SUB_BLOCK:
        block_name = str(args.get("reservationBlock") or "")
    block = next((b for b in reservation.blocks if b.name == block_name), None)
    if block is None:
        raise _not_found(f"{base}/reservationBlocks/{block_name}")
    block_path = f"{base}/reservationBlocks/{block.name}"
    if token == GET_RESERVATION_BLOCK:
        return complete(
            result_type(token),
            {
                **_zonal(block_path, block.name, project, zone, "compute#reservationBlock"),
                "reservation": reservation.name,
                "blockCount": block.count,
                "inUseCount": block.in_use,
                "reservationSubBlockCount": len(block.sub_blocks),
                "reservationSubBlockInUseCount": sum(1 for s in block.sub_blocks if s.in_use),
                "subBlockNames": [s.name for s in block.sub_blocks],
            },
        )
    if token == GET_RESERVATION_SUB_BLOCK:
        sub_name = str(args.get("name") or "")
        sub = next((s for s in block.sub_blocks if s.name == sub_name), None)
        if sub is None:
            raise _not_found(f"{block_path}/reservationSubBlocks/{sub_name}")
        sub_path = f"{block_path}/reservationSubBlocks/{sub.name}"
        return complete(
            result_type(token),
            {
                **_zonal(sub_path, sub.name, project, zone, "compute#reservationSubBlock"),
                "reservation": reservation.name,
                "reservationBlock": block.name,
                "subBlockCount": sub.count,
                "inUseCount": sub.in_use,
            },
        )
    raise KeyError(f"the fake cloud does not answer {token}")


def _cluster(
    fixtures: CloudFixtures, args: Mapping[str, Any], default_project: str
) -> dict[str, Any]:
    project = str(args.get("project") or default_project)
    name, location = str(args.get("name") or ""), str(args.get("location") or "")
    for cluster in fixtures.clusters:
        if (cluster.name, cluster.location) == (name, location) and cluster.project in (
            None,
            project,
        ):
            return complete(
                result_type(GET_CLUSTER),
                {
                    "id": f"projects/{project}/locations/{location}/clusters/{name}",
                    "name": name,
                    "location": location,
                    "project": project,
                    **({"masterVersion": cluster.version} if cluster.version else {}),
                    "nodePools": [
                        {
                            "name": p.name,
                            "nodeCount": p.nodes,
                            "nodeLocations": list(p.zones),
                            **({"version": p.version} if p.version else {}),
                            "nodeConfigs": [{"reservationAffinities": [_affinity(p)]}],
                        }
                        for p in cluster.pools
                    ],
                },
            )
    raise _not_found(f"projects/{project}/locations/{location}/clusters/{name}")


def _engine_versions(
    versions: EngineVersions, args: Mapping[str, Any], default_project: str
) -> dict[str, Any]:
    """GKE's server config as getEngineVersions returns it (newest first, as GKE lists them;
    `versionPrefix` filters the valid versions, as the provider does)."""
    prefix = str(args.get("versionPrefix") or "")
    master = sorted(
        (v for v in versions.valid_master if v.startswith(prefix)),
        key=parse_gke_version,
        reverse=True,
    )
    node = sorted(
        (v for v in versions.valid_node if v.startswith(prefix)),
        key=parse_gke_version,
        reverse=True,
    )
    location = str(args.get("location") or "")
    return complete(
        result_type(GET_ENGINE_VERSIONS),
        {
            "id": location,
            "location": location,
            "project": str(args.get("project") or default_project),
            "versionPrefix": prefix or None,
            "defaultClusterVersion": master[0] if master else "",
            "latestMasterVersion": master[0] if master else "",
            "latestNodeVersion": node[0] if node else "",
            "validMasterVersions": master,
            "validNodeVersions": node,
            "releaseChannelDefaultVersion": dict(versions.channel_latest),
            "releaseChannelLatestVersion": dict(versions.channel_latest),
            "releaseChannelUpgradeTargetVersion": dict(versions.channel_latest),
        },
    )


def _affinity(pool: PoolNodes) -> dict[str, Any]:
    if pool.reservation is None:
        return {"consumeReservationType": "NO_RESERVATION", "key": "", "values": []}
    return {
        "consumeReservationType": "SPECIFIC_RESERVATION",
        "key": "compute.googleapis.com/reservation-name",
        "values": [pool.reservation],
    }


def assumed_versions(
    channel: str,  # noqa: ARG001 - the invoke's arguments; the channel is unused offline
    min_version: str,
    pool_versions: tuple[str | None, ...],
) -> EngineVersions:
    """GKE's offer as the stack asks for it (the pinned channel version, the control plane's
    version and every pool's): what preflight answers when no description is given. It proves
    nothing about what GKE offers."""
    dots = min_version.count(".")
    control_plane = min_version + (
        ".0-gke.0" if dots == 1 else "-gke.0" if "-gke" not in min_version else ""
    )
    pinned = VERSIONS.gke_channel_version.value
    nodes = tuple(dict.fromkeys((pinned, *(v for v in pool_versions if v))))
    return EngineVersions(
        valid_master=tuple(dict.fromkeys((pinned, control_plane))),
        valid_node=nodes,
        channel_latest={},
    )


def assumed_for(
    *,
    name: str,
    block: str | None,
    sub_block: str | None,
    zone: str,
    project: str | None,
    machine_type: str,
    accelerator_type: str,
    gpus_per_node: int,
    nodes: int,
) -> CloudFixtures:
    """A reservation exactly the size and shape of the pool, in the pool's zone: what preflight
    answers when no description is given. It proves nothing about the real reservation."""
    subs = (SubBlock(name=sub_block, count=nodes),) if sub_block else ()
    blocks = (Block(name=block, count=nodes, sub_blocks=subs),) if block else ()
    return CloudFixtures(
        reservations=(
            Reservation(
                name=name,
                zone=zone,
                project=project,
                machine_type=machine_type,
                accelerators=(Accelerator(type=accelerator_type, count=gpus_per_node),),
                count=nodes,
                blocks=blocks,
            ),
        ),
        assumed=True,
    )
