"""The GPU pool's reservation is read during the preview, and a plan it cannot hold stops.

The program reads it with pulumi-gcp's invokes (`getReservation`, `getReservationBlock`,
`getReservationSubBlock`; `getCluster` for the nodes the pool already has). Here preflight
answers them from descriptions (`--reservations`), each one a reservation GKE would accept a
pool for and never fill: another machine type (XPK #476), a block that is not there (Cluster
Toolkit #5043), too few free VMs (#4492). Proof limit: a description, not the Compute API; the
engine tests run the same check under the real CLI with the GCP stand-in's descriptions.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from planning.reservation import (
    Capacity,
    PoolDemand,
    ReservationPath,
    ReservationSeen,
    consumed_reservation,
    fit_problems,
    nodes_inside,
    parse_reservation,
)
from preflight.cli import main, preflight
from pulumi_offline.fake_reservations import GET_RESERVATION, CloudFixtures, answer
from pulumi_offline.sdk_results import complete, fields
from stack_config import InvalidStackConfig
from tests.harness import REPO, stack_data, write_stack

B200 = {"machineType": "a4-highgpu-8g", "accelerators": [{"type": "nvidia-b200", "count": 8}]}
NAME = "my-b200-reservation-placeholder"


def reservation(**changes: Any) -> dict[str, Any]:
    return {"name": NAME, "zone": "us-central1-b", **B200, "count": 2, "inUse": 0, **changes}


def run_b200(
    tmp_path: Path,
    reservations: list[dict[str, Any]],
    gpu: dict[str, Any] | None = None,
    clusters: list[dict[str, Any]] | None = None,
) -> Any:
    """Preflight of b200 (its gpu settings changed by `gpu`) against a description."""
    description = tmp_path / "reservations.json"
    description.write_text(
        json.dumps({"reservations": reservations, "clusters": clusters or []}), encoding="utf-8"
    )
    config = dict(stack_data("b200")["config"])
    config["nemo-rl-gke:gpu"] = {**config["nemo-rl-gke:gpu"], **(gpu or {})}
    stack_file = write_stack(tmp_path, "b200", config)
    return preflight(stack_file, project_dir=REPO, reservations=description)


def stopped(tmp_path: Path, *args: Any, **kwargs: Any) -> InvalidStackConfig:
    with pytest.raises(InvalidStackConfig) as caught:
        run_b200(tmp_path, *args, **kwargs)
    assert caught.value.key == "nemo-rl-gke:gpu.reservation"
    assert "\n" not in str(caught.value)
    return caught.value


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        ("res-a", ("res-a", None, None)),
        ("res-a/reservationBlocks/b-1", ("res-a", "b-1", None)),
        ("res-a/reservationBlocks/b-1/reservationSubBlocks/s-2", ("res-a", "b-1", "s-2")),
    ],
)
def test_the_three_reservation_forms_parse(text: str, parts: tuple[str, ...]) -> None:
    path = parse_reservation(text)
    assert path is not None
    assert (path.name, path.block, path.sub_block) == parts
    assert str(path) == text


@pytest.mark.parametrize(
    "text",
    [
        "projects/p/reservations/r",
        "res-a/reservationSubBlocks/s",
        "res-a/reservationBlocks/",
        "Res",
    ],
)
def test_other_forms_do_not_parse(text: str) -> None:
    assert parse_reservation(text) is None


def test_a_matching_reservation_lets_the_plan_through(tmp_path: Path) -> None:
    result = run_b200(tmp_path, [reservation()])
    assert result.mandatory == []
    # The reservation is read from the description; only GKE's versions (not described) are assumed.
    notes = [n for n in result.notes if not n.startswith("security: ")]
    assert [n.split(" ")[0] for n in notes] == ["GKE's"]


def test_another_machine_type_stops_the_plan(tmp_path: Path) -> None:
    error = stopped(
        tmp_path,
        [
            reservation(
                machineType="a3-ultragpu-8g",
                accelerators=[{"type": "nvidia-h200-141gb", "count": 8}],
            )
        ],
    )
    assert "reserves a3-ultragpu-8g VMs, but the pool runs a4-highgpu-8g" in error.problem
    assert "set gpu.type to h200" in error.fix


def test_other_gpus_on_the_right_machine_stop_the_plan(tmp_path: Path) -> None:
    error = stopped(tmp_path, [reservation(accelerators=[{"type": "nvidia-b200", "count": 4}])])
    assert "reserves 4 x nvidia-b200 per VM, but the pool needs 8 x nvidia-b200" in error.problem


def test_a_reservation_in_another_zone_is_not_found_in_the_gpu_zone(tmp_path: Path) -> None:
    """Reservations are zonal: the Compute API answers 404 in every other zone."""
    error = stopped(tmp_path, [reservation(zone="us-central1-a")])
    assert error.problem == (
        f"reservation {NAME} was not found in zone us-central1-b of project my-gcp-project-prod"
    )
    assert "gcloud compute reservations list --project my-gcp-project-prod" in error.fix


def test_too_few_free_vms_stop_the_plan(tmp_path: Path) -> None:
    error = stopped(tmp_path, [reservation(count=3, inUse=2)])
    assert (
        "has 1 free VMs in the reservation (3 reserved, 2 in use), but the pool needs 2 more"
        in error.problem
    )


def test_a_reservation_smaller_than_the_pool_stops_the_plan(tmp_path: Path) -> None:
    error = stopped(tmp_path, [reservation(count=2)], gpu={"nodes": 3})
    assert "holds 2 VMs in the reservation, but the pool can grow to 3" in error.problem


def test_the_pool_s_own_nodes_are_not_counted_against_it(tmp_path: Path) -> None:
    """After `up` the pool's 2 nodes are the reservation's 2 VMs in use: the next preview must
    pass, and growing the pool beyond the reservation must not."""
    cluster = {
        "name": "nemo-rl-b200",
        "location": "us-central1",
        "pools": [
            {"name": "gpu-b200", "nodes": 2, "zones": ["us-central1-b"], "reservation": NAME}
        ],
    }
    full = [reservation(count=2, inUse=2)]
    assert run_b200(tmp_path, full, clusters=[cluster]).mandatory == []
    roomy = [reservation(count=4, inUse=3)]  # 2 ours + 1 someone else's
    error = stopped(tmp_path, roomy, gpu={"nodes": 4}, clusters=[cluster])
    assert "has 1 free VMs" in error.problem
    assert "needs 2 more beyond its 2 nodes" in error.problem


def test_a_block_that_does_not_exist_stops_the_plan(tmp_path: Path) -> None:
    error = stopped(
        tmp_path,
        [reservation(blocks=[{"name": "block-1", "count": 2}])],
        gpu={"reservation": f"{NAME}/reservationBlocks/block-9"},
    )
    assert error.problem.startswith(f"block block-9 of reservation {NAME} was not found")


def test_a_sub_block_path_is_read_as_xpk_sends_it(tmp_path: Path) -> None:
    sub = f"{NAME}/reservationBlocks/block-1/reservationSubBlocks/sub-1"
    described = [
        reservation(
            count=8,
            blocks=[{"name": "block-1", "count": 8, "subBlocks": [{"name": "sub-1", "count": 2}]}],
        )
    ]
    result = run_b200(tmp_path, described, gpu={"reservation": sub})
    assert result.mandatory == []
    pool = next(r for r in result.run.records if r.name == "gpu-pool")
    # Sent fully qualified, as Cluster Toolkit does since short block paths came back 404.
    assert pool.inputs["nodeConfig"]["reservationAffinity"]["values"] == [
        f"projects/my-gcp-project-prod/reservations/{sub}"
    ]
    # The sub-block holds 2 hosts: a third node does not fit there, whatever the reservation has.
    error = stopped(tmp_path, described, gpu={"reservation": sub, "nodes": 3})
    assert "holds 2 VMs in the sub-block, but the pool can grow to 3" in error.problem


def test_a_whole_reservation_of_the_own_project_keeps_the_short_form(tmp_path: Path) -> None:
    # The form running pools were created with: a new form would recreate them.
    result = run_b200(tmp_path, [reservation()])
    pool = next(r for r in result.run.records if r.name == "gpu-pool")
    assert pool.inputs["nodeConfig"]["reservationAffinity"]["values"] == [NAME]


def test_a_reservation_open_to_automatic_consumption_stops_the_plan(tmp_path: Path) -> None:
    error = stopped(tmp_path, [reservation(specificReservationRequired=False)])
    assert "specificReservationRequired is false" in error.problem
    assert "--require-specific-reservation" in error.fix


def test_a_shared_reservation_is_read_in_its_owner_s_project(tmp_path: Path) -> None:
    shared = reservation(project="owner-project")
    assert run_b200(tmp_path, [shared], gpu={"reservationProject": "owner-project"}).mandatory == []
    error = stopped(tmp_path, [shared])
    assert "of project my-gcp-project-prod" in error.problem


def test_the_check_can_be_switched_off(tmp_path: Path) -> None:
    assert run_b200(tmp_path, [], gpu={"checkReservation": False}).mandatory == []


def test_without_a_description_preflight_assumes_and_says_so(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--stack", "b200", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert f"reservation {NAME} was not read (offline): assumed to hold the pool" in err
    assert main(["--stack", "dev", "--quiet"]) == 0  # Spot: no reservation, nothing to read
    assert "was not read" not in capsys.readouterr().err


def test_a_bad_description_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"reservations": [{"name": "x"}]}')
    assert main(["--stack", "b200", "--quiet", "--reservations", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}: reservations.0.zone: Field required" in err
    assert len(err.strip().splitlines()) == 1


def test_the_cli_stops_with_exit_code_2_naming_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    description = tmp_path / "r.json"
    description.write_text(json.dumps({"reservations": [reservation(count=1)]}))
    assert main(["--stack", "b200", "--quiet", "--reservations", str(description)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("preflight: invalid stack config: nemo-rl-gke:gpu.reservation: ")


def test_fit_problems_name_every_mismatch_at_once() -> None:
    demand = PoolDemand("a4-highgpu-8g", "nvidia-b200", 8, nodes=2, zone="us-central1-b")
    seen = ReservationSeen(
        zone="https://www.googleapis.com/compute/v1/projects/p/zones/us-central1-c",
        machine_type="zones/us-central1-c/machineTypes/a3-ultragpu-8g",
        accelerators=(("nvidia-h200-141gb", 8),),
        capacity=Capacity(1, 0),
    )
    assert fit_problems(ReservationPath("r"), demand, seen) == [
        "is in zone us-central1-c, but the GPU pool is in us-central1-b",
        "reserves a3-ultragpu-8g VMs, but the pool runs a4-highgpu-8g",
        "holds 1 VMs in the reservation, but the pool can grow to 2",
    ]


def test_answers_carry_every_field_of_the_sdk_result() -> None:
    from pulumi_gcp.compute.get_reservation import GetReservationResult

    fixtures = CloudFixtures.model_validate({"reservations": [reservation()]})
    result = answer(
        fixtures, GET_RESERVATION, {"name": NAME, "zone": "us-central1-b"}, "my-gcp-project-prod"
    )
    assert set(result) == set(fields(GetReservationResult))
    (specific,) = result["specificReservations"]
    assert specific["count"] == 2
    assert specific["inUseCount"] == 0
    assert specific["instanceProperties"][0]["machineType"] == "a4-highgpu-8g"
    assert "minCpuPlatform" in specific["instanceProperties"][0]  # nested fields complete too
    with pytest.raises(KeyError, match="no field"):
        complete(GetReservationResult, {"notAField": 1})


def test_a_reservation_made_from_an_instance_template_is_judged_by_its_size_only() -> None:
    """The API does not repeat an instance template's machine type: nothing to compare."""
    demand = PoolDemand("a4-highgpu-8g", "nvidia-b200", 8, nodes=2, zone="us-central1-b")
    seen = ReservationSeen("us-central1-b", "", (), Capacity(2, 0))
    assert fit_problems(ReservationPath("r"), demand, seen) == []
    assert fit_problems(
        ReservationPath("r"), demand, ReservationSeen("us-central1-b", "", (), Capacity(1, 0))
    ) == ["holds 1 VMs in the reservation, but the pool can grow to 2"]


OTHER = "my-b200-reservation-next"


def running_pool(consumes: str | None, nodes: int = 2) -> dict[str, Any]:
    """The b200 cluster as GKE reports it, its GPU pool consuming `consumes`."""
    pool = {"name": "gpu-b200", "nodes": nodes, "zones": ["us-central1-b"]}
    return {
        "name": "nemo-rl-b200",
        "location": "us-central1",
        "pools": [{**pool, "reservation": consumes}] if consumes else [pool],
    }


def test_a_move_to_a_full_reservation_is_refused_before_the_pool_is_deleted(
    tmp_path: Path,
) -> None:
    """The pool's 2 nodes sit in the old reservation: they are no credit in the new one, which
    must hold the whole pool because GKE replaces the pool delete-first."""
    both_full = [reservation(count=2, inUse=2), reservation(name=OTHER, count=2, inUse=2)]
    error = stopped(tmp_path, both_full, gpu={"reservation": OTHER}, clusters=[running_pool(NAME)])
    assert "has 0 free VMs in the reservation (2 reserved, 2 in use)" in error.problem
    assert "but the pool needs 2 more;" in error.problem
    assert f"the pool's 2 nodes consume {NAME}" in error.problem
    assert "GKE deletes the pool before it creates the new one" in error.problem
    assert "make room for all 2 nodes in the new reservation first" in error.fix
    assert f"gpu.nodes 0 (the pool leaves {NAME}), then gpu.reservation" in error.fix


def test_a_move_to_a_reservation_with_room_goes_ahead(tmp_path: Path) -> None:
    target = [reservation(count=2, inUse=2), reservation(name=OTHER, count=2, inUse=0)]
    result = run_b200(tmp_path, target, gpu={"reservation": OTHER}, clusters=[running_pool(NAME)])
    assert result.mandatory == []


def test_narrowing_to_a_block_does_not_credit_nodes_that_need_not_be_in_it(
    tmp_path: Path,
) -> None:
    block = f"{NAME}/reservationBlocks/block-1"
    described = [
        reservation(count=4, inUse=2, blocks=[{"name": "block-1", "count": 2, "inUse": 2}])
    ]
    error = stopped(tmp_path, described, gpu={"reservation": block}, clusters=[running_pool(NAME)])
    assert "has 0 free VMs in the block" in error.problem
    # Already on that block: its nodes are the block's VMs in use, and the next preview passes.
    on_block = run_b200(
        tmp_path, described, gpu={"reservation": block}, clusters=[running_pool(block)]
    )
    assert on_block.mandatory == []


@pytest.mark.parametrize(
    ("value", "target", "inside"),
    [
        ("res-a", "res-a", True),
        ("res-a", "res-b", False),
        ("res-a/reservationBlocks/b-1", "res-a", True),
        ("res-a", "res-a/reservationBlocks/b-1", False),
        ("res-a/reservationBlocks/b-1", "res-a/reservationBlocks/b-2", False),
        ("res-a/reservationBlocks/b-1/reservationSubBlocks/s", "res-a/reservationBlocks/b-1", True),
        ("projects/own/reservations/res-a", "res-a", True),
        ("projects/shared/reservations/res-a", "res-a", False),
        ("", "res-a", False),
    ],
)
def test_nodes_count_only_inside_the_part_they_consume(
    value: str, target: str, inside: bool
) -> None:
    path = parse_reservation(target)
    assert path is not None
    assert nodes_inside(path, "own", consumed_reservation(value, "own")) is inside
