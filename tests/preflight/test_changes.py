"""Day-2 changes offline: what a config change recreates, and the protected stack's refusal.

`python -m preflight --previous` compares the stack as it was with the stack as it is, the way
pulumi-gcp plans it and the engine cascades it (preflight.changes). The program itself reads
its last deployment's `replacementConfig` output and refuses, in a protected stack, a change
that recreates the GPU pool, the Lustre instance or the cluster (program.guard). The engine
tests (tests/engine/test_local_cluster.py) check the same plans under the real engine.
"""

from __future__ import annotations

import atexit
import io
import json
import shutil
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from planning.ray import IMAGE_CUDA
from planning.replacements import ROWS, Guarded, changes, markdown_table, refusals, row
from preflight import changes as preflight_changes
from preflight.cli import Result, main, preflight
from program.guard import (
    REPLACEMENT_EXPORT,
    RULE_KEYS,
    LustreGrowthRefused,
    ReplacementRefused,
    SystemPoolRefused,
    ZoneMoveRefused,
)
from tests.day2 import IN_PLACE, REPLACING, Case
from tests.harness import REPO, stack_data, write_stack


def b200_with(tmp_path: Path, **changes_: Any) -> Path:
    """A copy of Pulumi.b200.yaml (in its own folder) with `a.b` paths set (None: removed)."""
    config = json.loads(json.dumps(stack_data("b200")["config"]))
    for dotted, value in changes_.items():
        key, *path = dotted.split(".")
        full = key if ":" in key else f"nemo-rl-gke:{key}"
        if not path:
            config[full] = value
            continue
        target = config.setdefault(full, {})
        for part in path[:-1]:
            target = target.setdefault(part, {})
        if value is None:
            target.pop(path[-1], None)
        else:
            target[path[-1]] = value
    folder = tmp_path / f"v{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    return write_stack(folder, "b200", config)


B200_RESERVATION = {
    "name": "my-b200-reservation-placeholder",
    "zone": "us-central1-b",
    "machineType": "a4-highgpu-8g",
    "accelerators": [{"type": "nvidia-b200", "count": 8}],
    "count": 2,
}
"""A description of the committed b200 stack's reservation, exactly the pool's size."""


@cache
def committed_b200(protect: bool = True) -> Result:
    """The committed b200 stack (protected, or with protect off), every value known."""
    if protect:
        return preflight(REPO / "Pulumi.b200.yaml", known=True)
    folder = Path(tempfile.mkdtemp(prefix="b200-open-"))
    # Cached for the session, so removed when the worker exits rather than per test.
    atexit.register(shutil.rmtree, folder, True)
    return preflight(b200_with(folder, protect=False), project_dir=REPO, known=True)


def compare(tmp_path: Path, **changes_: Any) -> preflight_changes.ChangeReport:
    """From the committed b200 stack to one with the changes; unprotected, as the engine
    tests plan it (a protected stack refuses the recreating ones)."""
    changes_.setdefault("protect", False)
    before = committed_b200(protect=False)
    after = preflight(b200_with(tmp_path, **changes_), project_dir=REPO, known=True)
    return preflight_changes.compare(
        preflight_changes.snapshot(before.run, "known"),
        preflight_changes.snapshot(after.run, "known"),
        "Pulumi.b200.yaml",
    )


def ops(report: preflight_changes.ChangeReport) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for planned in report.planned:
        found.setdefault(planned.op, set()).add(planned.resource.name)
    return found


def test_a_zone_change_recreates_lustre_the_rdma_network_and_the_gpu_pool(
    tmp_path: Path,
) -> None:
    report = compare(tmp_path, zone="us-central1-c")
    by_name = {p.resource.name: p for p in report.planned}
    assert by_name["rdma-net"].delete_before_replace
    # Deleted first: its fixed instance id would be refused to a replacement created first.
    assert by_name["lustre-instance"].delete_before_replace
    assert by_name["lustre-instance"].why == ["location: us-central1-b -> us-central1-c"]
    assert "rdma-net is recreated and networkConfig names it" in by_name["gpu-pool"].why[0]
    assert "lustre-instance is recreated" in by_name["lustre-volume-pvc"].why[0]
    assert ops(report)["update"] == {"system-pool"}  # nodeLocations, in place
    assert [c.row.key for c in report.keys] == ["nemo-rl-gke:zone"]


@pytest.mark.parametrize("case", REPLACING + IN_PLACE, ids=lambda c: c.key)
def test_each_change_recreates_what_the_table_says_and_nothing_else(
    tmp_path: Path, case: Case, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same cases the engine tests plan on a running b200 stack."""
    if case.lift_cuda_check:
        monkeypatch.setitem(IMAGE_CUDA, "v0.7.0", (12, 9))
    report = compare(tmp_path, **case.edits)
    assert preflight_changes.replaced_names(report) == case.expected


def test_the_gpu_pool_is_deleted_before_it_is_recreated(tmp_path: Path) -> None:
    """The program asks for it (the reservation has no room for two pools), whatever the
    provider's own rule says."""
    report = compare(tmp_path, **{"gpu.reservation": "another-reservation"})
    (pool,) = [p for p in report.planned if p.resource.name == "gpu-pool"]
    assert pool.delete_before_replace
    # The element path, as the real provider names it (test_real_provider_plans.py).
    assert pool.why == [
        "nodeConfig.reservationAffinity.values[0]: my-b200-reservation-placeholder ->"
        " another-reservation"
    ]
    record = next(r for r in committed_b200().run.records if r.name == "gpu-pool")
    assert record.delete_before_replace is True


def test_editing_the_system_pool_minimum_does_not_recreate_it(tmp_path: Path) -> None:
    report = compare(tmp_path, **{"cluster.systemPool": {"min": 2, "max": 3}})
    assert ops(report).get("update") == {"system-pool"}
    assert "replace" not in ops(report)
    record = next(r for r in committed_b200().run.records if r.name == "system-pool")
    assert "initialNodeCount" in record.ignore_changes


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def refused_line(stack_file: Path, previous: Path) -> str:
    """The one line `preflight --previous` prints when it refuses a change (exit 2)."""
    code, out, err = run_cli(
        "--stack-file", str(stack_file), "--previous", str(previous), "--quiet"
    )
    assert code == 2, out + err
    (line,) = [x for x in err.splitlines() if not x.startswith("preflight: note:")]
    return line


def test_preflight_previous_prints_what_is_recreated_and_stops_a_protected_stack(
    tmp_path: Path,
) -> None:
    changed = b200_with(tmp_path, **{"lustre.throughput": 1000})
    code, out, _ = run_cli(
        "--stack-file", str(changed), "--previous", str(REPO / "Pulumi.b200.yaml"),
        "--policy-config", str(REPO / "policies" / "config" / "b200.json"), "--quiet",
    )  # fmt: skip
    assert code == 1
    assert "nemo-rl-gke:lustre.throughput: 500 -> 1000 recreates Lustre instance" in out
    assert "gcp:lustre:Instance lustre-instance (deleted first)" in out
    assert "perUnitStorageThroughput: 500 -> 1000" in out
    assert "pulumi preview stops here: nemo-rl-gke:lustre.throughput" in out
    assert "preflight b200: FAIL" in out


def test_an_unprotected_stack_may_change_and_gets_the_list(tmp_path: Path) -> None:
    before = b200_with(tmp_path, protect=False)
    after = b200_with(tmp_path, protect=False, **{"lustre.throughput": 1000})
    relaxed = tmp_path / "policy.json"  # the pack requires protection on b200: lifted here
    config = json.loads((REPO / "policies" / "config" / "b200.json").read_text())
    relaxed.write_text(json.dumps({**config, "protect-stateful-resources": {"required": False}}))
    code, out, _ = run_cli(
        "--stack-file", str(after), "--previous", str(before),
        "--policy-config", str(relaxed), "--quiet",
    )  # fmt: skip
    assert code == 0, out
    assert "Recreated (4):" in out  # the instance, its PV and claim, the storage gate
    assert "stops here" not in out


def test_the_json_of_an_earlier_preflight_serves_as_the_previous_stack(tmp_path: Path) -> None:
    earlier = tmp_path / "earlier.json"
    code, _, _ = run_cli("--stack", "b200", "--json", str(earlier), "--quiet")
    assert code == 0
    assert json.loads(earlier.read_text())["mode"] == "preview"
    changed = b200_with(tmp_path, **{"lustre.throughput": 1000})
    report = tmp_path / "now.json"
    code, _, _ = run_cli(
        "--stack-file", str(changed), "--previous", str(earlier), "--json", str(report), "--quiet"
    )
    assert code == 1
    recorded = json.loads(report.read_text())["changes"]
    replaced = {r["name"] for r in recorded["resources"] if r["op"] == "replace"}
    assert replaced == next(c for c in REPLACING if c.key == "lustre.throughput").expected
    assert recorded["keys"][0]["key"] == "nemo-rl-gke:lustre.throughput"


def test_previous_must_be_the_same_stack(tmp_path: Path) -> None:
    code, _, err = run_cli("--stack", "b200", "--previous", str(REPO / "Pulumi.h200.yaml"))
    assert code == 2
    assert "compare a stack with its own earlier configuration" in err


def test_the_program_refuses_a_protected_change_before_registering_anything(
    tmp_path: Path,
) -> None:
    """What `pulumi preview` / `up` do: the program reads its last outputs and stops."""
    exported = committed_b200().run.exports[REPLACEMENT_EXPORT].value
    changed = b200_with(tmp_path, **{"gpu.reservation": "another-reservation"})
    with pytest.raises(ReplacementRefused) as refused:
        preflight(changed, project_dir=REPO, previous_outputs={REPLACEMENT_EXPORT: exported})
    message = str(refused.value)
    assert message.startswith(
        "replacement refused: nemo-rl-gke:gpu.reservation: changing it from"
        " my-b200-reservation-placeholder to another-reservation recreates the GPU node pool"
    )
    assert (
        "pulumi config set nemo-rl-gke:protect false && pulumi config set"
        " nemo-rl-gke:protectionLift WHY && pulumi up" in message
    )
    # The same change in an unprotected stack goes through; an unchanged stack too.
    open_stack = b200_with(tmp_path, protect=False, **{"gpu.reservation": "another-reservation"})
    preflight(open_stack, project_dir=REPO, previous_outputs={REPLACEMENT_EXPORT: exported})
    preflight(REPO / "Pulumi.b200.yaml", previous_outputs={REPLACEMENT_EXPORT: exported})


def test_refusals_name_each_guarded_key_and_skip_growth() -> None:
    before = {"zone": "a", "network.gvnicCidr": "192.168.0.0/21", "network.psaCidr": "1.0.0.0/20"}
    grown = {**before, "network.gvnicCidr": "192.168.0.0/20"}
    assert list(changes(before, grown)) == []
    moved = {**before, "network.gvnicCidr": "192.168.16.0/21"}
    assert [c.row.short_key for c in changes(before, moved)] == ["network.gvnicCidr"]
    psa = {**before, "network.psaCidr": "2.0.0.0/20"}
    assert refusals(before, psa, protected=True) == []  # recreates no guarded resource
    assert refusals(before, {**before, "zone": "b"}, protected=False) == []
    assert len(refusals(before, {**before, "zone": "b"}, protected=True)) == 1
    assert list(changes({}, {"zone": "b"})) == []  # nothing recorded: nothing to compare


def test_every_key_the_program_exports_has_a_row_and_every_row_a_value() -> None:
    exported = committed_b200().run.exports[REPLACEMENT_EXPORT].value
    assert {r.short_key for r in ROWS} == set(exported) - {"protect", *RULE_KEYS}
    assert Guarded.GPU_POOL in row("gpu.driverVersion").guarded


def test_the_runbook_table_is_the_planning_table() -> None:
    runbook = (REPO / "docs" / "runbook.md").read_text(encoding="utf-8")
    assert markdown_table() in runbook
    assert [c.row.short_key for c in changes({}, {})] == []


def test_a_lustre_shrink_exits_2_naming_the_key(tmp_path: Path) -> None:
    """Planned as an in-place update, refused by the API at apply: refused at preview."""
    bigger = b200_with(tmp_path, **{"lustre.capacityGib": 36000})
    code, out, err = run_cli(
        "--stack", "b200", "--previous", str(bigger), "--quiet"
    )  # fmt: skip
    assert code == 2, out + err
    (line,) = [x for x in err.splitlines() if not x.startswith("preflight: note:")]
    assert line.startswith(
        "preflight: invalid stack config: nemo-rl-gke:lustre.capacityGib: Managed Lustre"
        " capacity never shrinks: 36000 GiB -> 18000 GiB"
    )
    assert "copy the data out, then change lustre.filesystem" in line
    # Growing by the tier's step is an ordinary update.
    code, out, err = run_cli(
        "--stack-file", str(bigger), "--previous", str(REPO / "Pulumi.b200.yaml"), "--quiet"
    )
    assert code != 2, err


def test_the_program_refuses_growth_past_the_threshold_it_was_created_under(
    tmp_path: Path,
) -> None:
    """The instance was created at 18000 GiB and grown to the 500 tier's threshold since: the
    capacity it was created at travels in the export, and the next step is refused, protected
    or not."""
    exported = dict(committed_b200().run.exports[REPLACEMENT_EXPORT].value)
    at_threshold = {**exported, "lustre.capacityGib": 3_060_000}
    assert exported["lustre.createdCapacityGib"] == 18000
    beyond = b200_with(tmp_path, protect=False, **{"lustre.capacityGib": 3_168_000})
    with pytest.raises(LustreGrowthRefused) as refused:
        preflight(beyond, project_dir=REPO, previous_outputs={REPLACEMENT_EXPORT: at_threshold})
    assert refused.value.key == "nemo-rl-gke:lustre.capacityGib"
    assert "created at 18000 GiB" in refused.value.problem
    assert "grows only up to 3060000 GiB" in refused.value.problem
    # Created above the threshold, the next step is an ordinary update, and the capacity it
    # was created at is carried on to the next deployment.
    created_big = {
        **exported,
        "lustre.capacityGib": 3_168_000,
        "lustre.createdCapacityGib": 3_168_000,
    }
    further = b200_with(tmp_path, protect=False, **{"lustre.capacityGib": 3_312_000})
    result = preflight(
        further, project_dir=REPO, previous_outputs={REPLACEMENT_EXPORT: created_big}
    )
    assert result.run.exports[REPLACEMENT_EXPORT].value["lustre.createdCapacityGib"] == 3_168_000


def test_lustre_grows_while_its_claim_keeps_the_size_it_was_created_at(tmp_path: Path) -> None:
    """The API server refuses to grow a claim with no expandable StorageClass behind its class
    name, so the claim stays at the created size; the PV and the instance grow."""
    exported = committed_b200().run.exports[REPLACEMENT_EXPORT].value
    grown = b200_with(tmp_path, **{"lustre.capacityGib": 36000})
    result = preflight(grown, project_dir=REPO, previous_outputs={REPLACEMENT_EXPORT: exported})
    by_name = {r.name: r for r in result.run.records}
    assert by_name["lustre-instance"].inputs["capacityGib"] == "36000"
    assert by_name["lustre-volume-pv"].inputs["spec"]["capacity"] == {"storage": "36000Gi"}
    claim = by_name["lustre-volume-pvc"].inputs["spec"]["resources"]
    assert claim == {"requests": {"storage": "18000Gi"}}
    # A new stack's claim asks for the whole instance, as before.
    first = preflight(grown, project_dir=REPO)
    first_claim = {r.name: r for r in first.run.records}["lustre-volume-pvc"]
    assert first_claim.inputs["spec"]["resources"] == {"requests": {"storage": "36000Gi"}}
    # preflight --previous plans it as the program does: the claim is not touched.
    code, out, err = run_cli(
        "--stack-file", str(grown), "--previous", str(REPO / "Pulumi.b200.yaml"), "--quiet"
    )  # fmt: skip
    assert code == 0, err
    assert "kubernetes:core/v1:PersistentVolume lustre-volume-pv: spec" in out
    assert "lustre-volume-pvc" not in out


def test_a_one_step_zone_change_under_an_rdma_pool_exits_2_naming_the_procedure(
    tmp_path: Path,
) -> None:
    """The real pulumi-gcp panics planning it; refused protected or not, naming the steps."""
    moved = b200_with(tmp_path, protect=False, zone="us-central1-c")
    open_b200 = b200_with(tmp_path, protect=False)
    line = refused_line(moved, open_b200)
    assert line.startswith(
        "preflight: invalid stack config: nemo-rl-gke:zone: moving the stack from us-central1-b"
        " to us-central1-c in one update replaces the RDMA network under the running GPU pool"
    ), line
    assert "--target-dependents" in line
    assert "::gpu-pool$" in line


def test_the_program_lets_a_zone_change_through_once_the_gpu_pool_is_gone(
    tmp_path: Path,
) -> None:
    """The program asks the cluster (getCluster): the pool is there, so the move stops; once
    it was destroyed (the first step), the same change goes on."""
    exported = dict(committed_b200(protect=False).run.exports[REPLACEMENT_EXPORT].value)
    assert exported["gpu.rdmaNetworks"] is True
    moved = b200_with(tmp_path, protect=False, zone="us-central1-c")
    reservation = {**B200_RESERVATION, "zone": "us-central1-c"}
    cluster = {"name": "nemo-rl-b200", "location": "us-central1"}
    running = {"nodes": 2, "zones": ["us-central1-b"], "name": "gpu-b200"}

    def described(pools: list[dict[str, Any]]) -> Path:
        path = tmp_path / f"cloud-{len(pools)}.json"
        clusters = [{**cluster, "pools": pools}]
        path.write_text(json.dumps({"reservations": [reservation], "clusters": clusters}))
        return path

    previous = {REPLACEMENT_EXPORT: exported}
    with pytest.raises(ZoneMoveRefused) as refused:
        preflight(
            moved, project_dir=REPO, previous_outputs=previous, reservations=described([running])
        )
    assert refused.value.key == "nemo-rl-gke:zone"
    result = preflight(
        moved, project_dir=REPO, previous_outputs=previous, reservations=described([])
    )
    assert result.run.exports[REPLACEMENT_EXPORT].value["zone"] == "us-central1-c"
    # A stack without RDMA networks (dev) moves in one update.
    assert (
        preflight(REPO / "Pulumi.dev.yaml")
        .run.exports[REPLACEMENT_EXPORT]
        .value["gpu.rdmaNetworks"]
        is False
    )


def test_a_system_pool_machine_change_stops_unless_the_new_shape_is_named(
    tmp_path: Path,
) -> None:
    """GKE recreates every system node for it (and the Ray head with its jobs), though the
    plan says update in place: refused, protected or not, until the stack names the shape."""
    bigger = b200_with(
        tmp_path, protect=False, **{"cluster.systemPool.machineType": "n2-highmem-32"}
    )
    open_b200 = b200_with(tmp_path, protect=False)
    line = refused_line(bigger, open_b200)
    assert line.startswith(
        "preflight: invalid stack config: nemo-rl-gke:cluster.systemPool.machineType: changing"
        " the system pool from n2-highmem-16/200gb to n2-highmem-32/200gb recreates every"
        " system node"
    ), line
    assert "cluster.systemPool.recreateNodesAs' n2-highmem-32/200gb" in line
    consented = b200_with(
        tmp_path,
        protect=False,
        **{
            "cluster.systemPool.machineType": "n2-highmem-32",
            "cluster.systemPool.recreateNodesAs": "n2-highmem-32/200gb",
        },
    )
    code, out, err = run_cli("--stack-file", str(consented), "--previous", str(open_b200))
    assert code != 2, out + err
    # The change report says what the plan's "update" does not.
    (pool,) = [x for x in out.splitlines() if "NodePool system-pool" in x]
    assert "GKE recreates every node of the pool for machineType" in pool, pool
    # The program stops the same way, reading its last outputs; a consent for another shape
    # (left from an earlier change) does not carry over.
    exported = committed_b200(protect=False).run.exports[REPLACEMENT_EXPORT].value
    stale = b200_with(
        tmp_path,
        protect=False,
        **{
            "cluster.systemPool.diskGb": 300,
            "cluster.systemPool.recreateNodesAs": "n2-highmem-32/200gb",
        },
    )
    with pytest.raises(SystemPoolRefused) as refused:
        preflight(stale, project_dir=REPO, previous_outputs={REPLACEMENT_EXPORT: exported})
    assert refused.value.key == "nemo-rl-gke:cluster.systemPool.machineType"


def offer(tmp_path: Path, *versions: str, latest: str) -> Path:
    """A description of the cloud: the b200 reservation, and GKE offering these versions."""
    path = tmp_path / f"offer-{len(list(tmp_path.iterdir()))}.json"
    reservation = B200_RESERVATION
    engine = {
        "validMasterVersions": list(versions),
        "validNodeVersions": list(versions),
        "channelLatest": {"REGULAR": latest},
    }
    path.write_text(json.dumps({"reservations": [reservation], "engineVersions": engine}))
    return path


def test_an_upgrade_moves_the_control_plane_then_each_pool_and_refuses_an_unoffered_version(
    tmp_path: Path,
) -> None:
    """GKE offers 1.35 and 1.36: raising cluster.minVersion updates the control plane and
    says which pools stay behind; each pool moves when its key names an offered version; a
    version GKE does not offer stops the preview naming its key."""
    cloud = offer(tmp_path, "1.36.2-gke.1000", "1.35.8-gke.1036000", latest="1.36.2-gke.1000")
    before = b200_with(tmp_path)
    step1 = b200_with(tmp_path, **{"cluster.minVersion": "1.36"})

    def previewed(stack: Path, previous: Path) -> tuple[int, str, str]:
        return run_cli(
            "--stack-file", str(stack), "--previous", str(previous),
            "--reservations", str(cloud), "--quiet",
        )  # fmt: skip

    code, out, err = previewed(step1, before)
    assert code == 0, out + err
    assert "gcp:container:Cluster gke-cluster: minMasterVersion" in out
    assert "NodePool" not in out
    assert "Note: the system pool stays on the version it was created at until" in out
    assert "Note: the gpu pool stays on" in out

    step2 = b200_with(
        tmp_path,
        **{"cluster.minVersion": "1.36", "cluster.systemPool.version": "1.36.2-gke.1000"},
    )
    code, out, err = previewed(step2, step1)
    assert code == 0, out + err
    (system,) = [x for x in out.splitlines() if "NodePool system-pool" in x]
    assert "version" in system
    assert "NodePool gpu-pool" not in out

    step3 = b200_with(
        tmp_path,
        **{
            "cluster.minVersion": "1.36",
            "cluster.systemPool.version": "1.36.2-gke.1000",
            "gpu.version": "1.36.2-gke.1000",
        },
    )
    code, out, err = previewed(step3, step2)
    assert code == 0, out + err
    (gpu,) = [x for x in out.splitlines() if "NodePool gpu-pool" in x]
    assert "version" in gpu
    assert "recreates every GPU node" in out

    too_new = b200_with(tmp_path, **{"cluster.minVersion": "1.37"})
    code, _, err = previewed(too_new, step1)
    assert code == 2
    assert (
        "preflight: invalid stack config: nemo-rl-gke:cluster.minVersion: 1.37 is not offered"
        in err
    )
    code, _, err = previewed(too_new, before)  # 1.35 to 1.37: two minors in one step
    assert code == 2
    assert "nemo-rl-gke:cluster.minVersion: 1.35 to 1.37 is 2 minors in one step" in err
    unoffered = b200_with(
        tmp_path,
        **{"cluster.minVersion": "1.36", "cluster.systemPool.version": "1.36.1-gke.5"},
    )
    code, _, err = previewed(unoffered, step1)
    assert code == 2
    assert "nemo-rl-gke:cluster.systemPool.version: 1.36.1-gke.5 is not a node version" in err
    assert "set cluster.systemPool.version to 1.36.2-gke.1000" in err


def test_a_running_cluster_on_a_minor_gke_dropped_still_updates(tmp_path: Path) -> None:
    """Only what changes is judged: a stack whose 1.35 left the channel keeps updating other
    keys; a first deploy at 1.35 is refused."""
    cloud = offer(tmp_path, "1.36.2-gke.1000", latest="1.36.2-gke.1000")
    before = b200_with(tmp_path)
    other = b200_with(tmp_path, **{"gpu.nodes": 1})
    code, out, err = run_cli(
        "--stack-file", str(other), "--previous", str(before), "--reservations", str(cloud),
        "--quiet",
    )  # fmt: skip
    assert code == 0, out + err
    code, _, err = run_cli("--stack-file", str(before), "--reservations", str(cloud), "--quiet")
    assert code == 2
    assert "nemo-rl-gke:cluster.minVersion: 1.35 is not offered by GKE here any more" in err


def test_the_runbook_s_protection_lift_passes_the_pack_step_by_step(tmp_path: Path) -> None:
    """docs/runbook.md's deliberate change on b200, each step against the one before, with
    b200's own policy config (which requires protection): lift, change, protect again."""
    steps = tmp_path / "steps"
    folders = [steps / str(i) for i in range(4)]
    for folder in folders:
        folder.mkdir(parents=True)
    before = b200_with(folders[0])
    lifted = b200_with(folders[1], protect=False, protectionLift="lustre-throughput")
    changed = b200_with(
        folders[2], protect=False, protectionLift="lustre-throughput", **{"lustre.throughput": 1000}
    )
    again = b200_with(folders[3], **{"lustre.throughput": 1000})
    for stack, previous in ((lifted, before), (changed, lifted), (again, changed)):
        code, out, err = run_cli("--stack-file", str(stack), "--previous", str(previous), "--quiet")
        assert code == 0, out + err
    # Without the lift, the same first step fails the pack: protection is required on b200.
    bare = b200_with(folders[1], protect=False)
    code, out, err = run_cli("--stack-file", str(bare), "--previous", str(before))
    assert code == 1, out + err
    assert "protect-stateful-resources" in out
