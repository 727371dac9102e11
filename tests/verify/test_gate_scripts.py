"""The gate scripts, run here under dash (POSIX sh) and bash with the test bed's stand-ins.

The inputs are exactly the environment the component gives each pod (from planning.verify);
the outputs are the verdict line and the termination message the kubelet would keep.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from planning.ray import gib_shell_setup
from planning.verify import GatePlan, GateSettings, StorageTarget, VerifyInputs, plan_gates
from testbed.gate_standins import Scenario
from tests.verify.harness import run_gate

GATES = Path(__file__).resolve().parents[2] / "verify" / "gates"


def b200(nodes: int = 2, **settings: Any) -> dict[str, GatePlan]:
    inputs = VerifyInputs(
        gpu_type="b200",
        gpus_per_node=8,
        rdma_nics=8,
        nodes=nodes,
        pool="nemo-rl-b200-gpu/a4-highgpu-8g/reservation",
        networks=("gvnic-1", *[f"rdma-{i}" for i in range(8)]),
        worker_setup=gib_shell_setup("tuner_config_a4.txtpb"),
        diagnostic_image="diag:v1",
        fio_image="fio:3",
        storage=StorageTarget("lustre", 18000, 500),
    )
    return {g.gate: g for g in plan_gates(inputs, GateSettings(**settings))}


def first_line(text: str) -> str:
    return text.splitlines()[0] if text else ""


def test_gpu_health_passes_on_a_healthy_node(tmp_path: Path) -> None:
    plan = b200()["gpu-health"]
    run = run_gate(plan, tmp_path)[0]
    assert run.returncode == 0, run.stdout + run.stderr
    assert first_line(run.message) == (
        "gpu-health gate passed on gpu-node-0: gpus 8 GPUs (>= 8);"
        " gpus_with_uncorrected_ecc 0 GPUs (<= 0)"
    )
    assert "RESULT gpu-health gpus 8 >= 8 GPUs PASS gpu-node-0" in run.message
    stderr = tmp_path / "pods" / f"{plan.job_name}-0" / "nvidia-smi.csv.err"
    assert "stand-in" in stderr.read_text()


@pytest.mark.parametrize(
    ("scenario", "expected"),
    [
        (Scenario(gpus=7), "gpus 7 GPUs (needs >= 8)"),
        (Scenario(ecc_errors=[0, 0, 3]), "gpus_with_uncorrected_ecc 1 GPUs (needs <= 0)"),
        (Scenario(ecc_errors=[-1]), "gpus_with_uncorrected_ecc 1 GPUs (needs <= 0)"),
    ],
)
def test_gpu_health_fails_with_the_measurement(
    tmp_path: Path, scenario: Scenario, expected: str
) -> None:
    run = run_gate(b200(nodes=1)["gpu-health"], tmp_path, scenario)[0]
    assert run.returncode == 1
    assert first_line(run.message) == f"gpu-health gate FAILED on gpu-node-0: {expected}"


def test_rdma_passes_with_eight_devices_and_gib(tmp_path: Path) -> None:
    runs = run_gate(b200()["rdma"], tmp_path)
    assert [r.returncode for r in runs] == [0, 0], runs[0].stdout + runs[0].stderr
    assert "rdma_devices 8 devices (>= 8); nccl_network gIB name (= gIB)" in runs[1].message
    # The workers' setup ran: Google's script was sourced before NCCL started.
    assert "set_nccl_env.sh (test bed stand-in)" in runs[0].stderr


@pytest.mark.parametrize(
    ("scenario", "expected"),
    [
        (Scenario(rdma_devices=7), "rdma_devices 7 devices (needs >= 8)"),
        (Scenario(network="Socket"), "nccl_network Socket name (needs = gIB)"),
    ],
)
def test_rdma_fails_on_a_missing_nic_or_sockets(
    tmp_path: Path, scenario: Scenario, expected: str
) -> None:
    run = run_gate(b200(nodes=1)["rdma"], tmp_path, scenario)[0]
    assert run.returncode == 1
    assert first_line(run.message) == f"rdma gate FAILED on gpu-node-0: {expected}"


def test_nccl_passes_at_googles_published_bandwidth(tmp_path: Path) -> None:
    runs = run_gate(b200()["nccl"], tmp_path)
    assert [r.returncode for r in runs] == [0, 0], runs[0].stdout + runs[0].stderr
    head = first_line(runs[0].message)
    assert head.startswith("nccl gate passed on 2 nodes:")
    assert "all_gather_busbw_8GiB 344.46 GB/s (>= 292.8)" in head
    assert "all_gather_avg_busbw 120.845 GB/s (>= 100)" in head
    assert "all_reduce_busbw_8GiB 280.00 GB/s (>= 0)" in head
    assert "node 1 served its ranks" in runs[1].stdout


@pytest.mark.parametrize(
    ("scenario", "expected"),
    [
        (
            Scenario(busbw_8g={"all_gather": 250.0, "all_reduce": 200.0}),
            "all_gather_busbw_8GiB 250.00 GB/s (needs >= 292.8)",
        ),
        (
            Scenario(avg_busbw={"all_gather": 80.0, "all_reduce": 80.0}),
            "all_gather_avg_busbw 80.000 GB/s (needs >= 100)",
        ),
        (
            Scenario(socket_rank=True),
            "all_gather_network Socket name (needs = gIB); all_reduce_network Socket name"
            " (needs = gIB)",
        ),
    ],
)
def test_nccl_fails_with_the_measured_value_and_threshold(
    tmp_path: Path, scenario: Scenario, expected: str
) -> None:
    runs = run_gate(b200()["nccl"], tmp_path, scenario)
    assert runs[0].returncode == 1
    assert first_line(runs[0].message) == f"nccl gate FAILED on 2 nodes: {expected}"


def test_nccl_all_reduce_is_judged_when_a_threshold_is_set(tmp_path: Path) -> None:
    plan = b200(nccl_min_all_reduce_busbw=300.0)["nccl"]
    runs = run_gate(plan, tmp_path)
    assert first_line(runs[0].message) == (
        "nccl gate FAILED on 2 nodes: all_reduce_busbw_8GiB 280.00 GB/s (needs >= 300)"
    )


def test_nccl_scales_to_more_nodes(tmp_path: Path) -> None:
    runs = run_gate(b200(nodes=4)["nccl"], tmp_path)
    assert [r.returncode for r in runs] == [0, 0, 0, 0], runs[0].stdout + runs[0].stderr
    assert first_line(runs[0].message).startswith("nccl gate passed on 4 nodes:")


def test_storage_adds_every_node_and_judges_the_sum(tmp_path: Path) -> None:
    # b200: 18000 GiB x 500 MB/s/TiB = 8789 MB/s provisioned; 50% = 4394 MB/s.
    runs = run_gate(b200()["storage"], tmp_path)
    assert [r.returncode for r in runs] == [0, 0], runs[0].stdout + runs[0].stderr
    head = first_line(runs[0].message)
    assert "write_throughput 12000 MB/s (>= 4394)" in head
    assert "read_throughput 14000 MB/s (>= 4394)" in head
    # Nothing is left on the shared volume.
    assert list((tmp_path / "data" / ".nemo-rl-gke" / "verify").rglob("*.json")) == []


def test_storage_fails_below_the_tier(tmp_path: Path) -> None:
    slow = Scenario(fio_bw_bytes={"write": 1_000_000_000, "read": 3_000_000_000})
    runs = run_gate(b200()["storage"], tmp_path, slow)
    assert runs[0].returncode == 1
    assert first_line(runs[0].message) == (
        "storage gate FAILED on 2 nodes: write_throughput 2000 MB/s (needs >= 4394)"
    )


needs_fio = pytest.mark.skipif(
    shutil.which("fio") is None and os.environ.get("NEMO_RL_GKE_REQUIRE_FIO") != "1",
    reason="fio is not installed here (apt-get install fio; .ci/run installs it)",
)


@needs_fio
def test_storage_parses_real_fio_output(tmp_path: Path) -> None:
    plan = b200(nodes=1, storage_min_fraction=0.0001)["storage"]
    quick = {"FIO_RUNTIME": "2", "FIO_SIZE": "16m", "FIO_JOBS": "2", "FIO_DIRECT": "0"}
    env_plan = replace(plan, env={**plan.env, **quick})
    (run,) = run_gate(env_plan, tmp_path, real_fio=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "fio (test bed stand-in" not in run.stderr
    assert "write_throughput" in first_line(run.message)


@needs_fio
def test_the_fio_parser_agrees_with_a_json_parser_on_real_fio(tmp_path: Path) -> None:
    out = tmp_path / "fio.json"
    subprocess.run(
        ["fio", "--name=w", f"--directory={tmp_path}", "--rw=write", "--bs=1m", "--size=32m",
         "--numjobs=3", "--ioengine=psync", "--output-format=json", f"--output={out}"],
        check=True, capture_output=True,
    )  # fmt: skip
    expected = sum(job["write"]["bw_bytes"] for job in json.loads(out.read_text())["jobs"])
    script = f'GATE_NAME=t GATE_TMP={tmp_path} . {GATES}/common.sh; fio_bw_bytes write "$1"'
    parsed = subprocess.run(
        ["sh", "-c", script, "sh", str(out)],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    assert int(parsed) == expected > 0
