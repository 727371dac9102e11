"""What the fake cloud answers when the program reads a reservation or a cluster.

Follows the result types of pulumi-gcp 10.2.0's functions, which carry what the Compute
Engine reservations API and the GKE clusters API answer. Offline, nothing can read the real
reservation. Preflight and the engine test bed's GCP stand-in answer the invokes the program
makes (`getReservation`, `getReservationBlock`, `getReservationSubBlock`, `getCluster`) from
a small description, a JSON file:

```json
{"reservations": [{"name": "res-a", "zone": "us-central1-b", "project": "p (optional)",
                   "machineType": "a4-highgpu-8g",
                   "accelerators": [{"type": "nvidia-b200", "count": 8}],
                   "count": 2, "inUse": 0,
                   "blocks": [{"name": "b1", "count": 2, "inUse": 0,
                               "subBlocks": [{"name": "s1", "count": 2, "inUse": 0}]}]}],
 "clusters": [{"name": "c", "location": "us-central1",
               "pools": [{"name": "gpu-b200", "nodes": 2, "zones": ["us-central1-b"]}]}]}
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

from pydantic import BaseModel, ConfigDict, Field

from planning.resource_types import (
    GET_CLUSTER,
    GET_RESERVATION,
    GET_RESERVATION_BLOCK,
    GET_RESERVATION_SUB_BLOCK,
)
from pulumi_offline.gcp_types import result_type
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
    "FixtureError",
    "NotFoundError",
    "PoolNodes",
    "Reservation",
    "SubBlock",
    "answer",
    "assumed_for",
    "load_fixtures",
]

TOKENS = (GET_RESERVATION, GET_RESERVATION_BLOCK, GET_RESERVATION_SUB_BLOCK, GET_CLUSTER)
"""The reads a description answers."""


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


class Cluster(_Model):
    """An existing cluster (for the nodes its GPU pool already has)."""

    name: str
    location: str
    project: str | None = None
    pools: tuple[PoolNodes, ...] = ()


class CloudFixtures(_Model):
    """Everything the fake cloud knows about reservations and existing clusters."""

    reservations: tuple[Reservation, ...] = ()
    clusters: tuple[Cluster, ...] = ()
    assumed: bool = False
    """Made up from the stack itself (no description given): the check proves nothing."""


class FixtureError(Exception):
    """A reservation description that cannot be used (preflight exit code 2)."""


class NotFoundError(Exception):
    """A 404 from the fake Compute or GKE API, worded like the real one."""


def load_fixtures(path: Path) -> CloudFixtures:
    """Read a description file (FixtureError naming the file when it is not one)."""
    try:
        return CloudFixtures.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError) as error:
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
                    "nodePools": [
                        {
                            "name": p.name,
                            "nodeCount": p.nodes,
                            "nodeLocations": list(p.zones),
                            "nodeConfigs": [{"reservationAffinities": [_affinity(p)]}],
                        }
                        for p in cluster.pools
                    ],
                },
            )
    raise _not_found(f"projects/{project}/locations/{location}/clusters/{name}")


def _affinity(pool: PoolNodes) -> dict[str, Any]:
    if pool.reservation is None:
        return {"consumeReservationType": "NO_RESERVATION", "key": "", "values": []}
    return {
        "consumeReservationType": "SPECIFIC_RESERVATION",
        "key": "compute.googleapis.com/reservation-name",
        "values": [pool.reservation],
    }


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
