"""verify/gates/job_nccl.py's reading of NCCL's log and its measurements, on real output.

`h100-torch-nccl/` (shared test data) is PyTorch 2.11.0+cu130 with its bundled NCCL 2.28.9 on one
real H100, the torch and NCCL of NeMo RL v0.7.0's image, on a machine without RDMA: one run on
plain sockets, one told to use gIB where no plugin exists. Both must fail the gate. Its runs
under real Ray are in tests/program/test_ray_driver_under_ray.py.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path
from typing import Any

import pytest

from planning.verify import GATES_DIR
from tests.real_plans import SHARED

TORCH_NCCL = SHARED / "testdata" / "h100-torch-nccl"

pytestmark = pytest.mark.skipif(
    not TORCH_NCCL.is_dir() and os.environ.get("NEMO_RL_GKE_REQUIRE_SHARED") != "1",
    reason=f"real torch + NCCL output not found at {TORCH_NCCL} (set NEMO_RL_GKE_SHARED)",
)


def driver() -> Any:
    """verify/gates/job_nccl.py as a module (a script Ray runs, not a package)."""
    spec = importlib.util.spec_from_file_location("job_nccl", GATES_DIR / "job_nccl.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def real(name: str) -> str:
    return (TORCH_NCCL / name).read_text(encoding="utf-8")


def test_a_real_socket_run_shows_nccl_s_version_and_its_network() -> None:
    found = driver().read_nccl_log(real("all_reduce-1rank-socket.log"))
    assert found == {
        "version": "2.28.9+cuda13.0",
        "network": "Socket",
        "warning": "",
        "gib_version": "",
        "gdrdma": "",
    }


def test_a_real_run_told_to_use_gib_without_its_plugin_has_no_network_and_nccl_s_warning() -> None:
    found = driver().read_nccl_log(real("all_reduce-nccl-net-gib-missing.log"))
    assert found == {
        "version": "2.28.9+cuda13.0",
        "network": "",
        "warning": "Failed to initialize any NET plugin",
        "gib_version": "",
        "gdrdma": "",
    }


def rank(index: int, log: str, node: str, busbw: float, **extra: Any) -> dict[str, Any]:
    return {
        "rank": index,
        "node": node,
        "formed": True,
        "wrong": 0,
        "busbw": {"all_gather": busbw, "all_reduce": busbw * 0.8},
        "log": log,
        **extra,
    }


def test_ranks_on_sockets_count_for_nothing_on_gib() -> None:
    """Two ranks whose NCCL fell back to sockets (the real log): formed, versioned, not gIB."""
    log = real("all_reduce-1rank-socket.log")
    measures = driver().judge([rank(0, log, "a", 300.0), rank(1, log, "b", 290.0)], 2, 2)
    assert measures["ranks_formed"] == "2"
    assert measures["ranks_with_nccl_version"] == "2"
    assert measures["ranks_on_gib"] == "0"
    assert measures["networks"] == "Socket"
    assert measures["nodes_spanned"] == "2"
    assert measures["all_gather_busbw"] == "290.00"  # the slowest rank


def test_gib_on_every_rank_and_the_slowest_rank_s_bandwidth() -> None:
    """The real log with NCCL's network line as a gIB run prints it (Google's NCCL pages)."""
    log = real("all_reduce-1rank-socket.log").replace(
        "NCCL INFO Using network Socket", "NCCL INFO Using network gIB"
    )
    ranks = [rank(i, log, f"n{i // 8}", 340.0 - i) for i in range(16)]
    measures = driver().judge(ranks, 16, 2)
    assert measures["ranks_on_gib"] == "16"
    assert measures["all_gather_busbw"] == "325.00"
    assert measures["wrong_values"] == "0"


GIB_LINES = (
    "n0:41:41 [0] NCCL INFO NET/gIB : Initializing gIB v1.1.1\n"
    "n0:41:41 [0] NCCL INFO Using network gIB\n"
    "n0:41:52 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/gIB/0{rdma}\n"
    "n0:41:52 [0] NCCL INFO Channel 01/0 : 8[0] -> 0[0] [receive] via NET/gIB/0{rdma}\n"
)
"""A rank's lines as NCCL 2.28 and the gIB plugin print them (NCCL `src/transport/net.cc`'s
channel line, `via NET/<net>/<dev>` with `/GDRDMA` where GPUDirect RDMA is on; the plugin's
`NET/gIB : Initializing gIB <version>`, Google's NCCL/gIB pages)."""


def test_every_rank_must_run_a_gpudirect_rdma_channel_and_the_gib_version_is_reported() -> None:
    log = real("all_reduce-1rank-socket.log")
    rdma, bounced = GIB_LINES.format(rdma="/GDRDMA"), GIB_LINES.format(rdma="")
    ranks = [rank(i, log + (rdma if i else bounced), f"n{i // 8}", 340.0) for i in range(16)]
    measures = driver().judge(ranks, 16, 2)
    assert measures["ranks_with_gdrdma"] == "15"  # rank 0's channels bounce through the host
    assert measures["gib_version"] == "v1.1.1"
    found = driver().read_nccl_log(rdma)
    assert (found["gib_version"], found["gdrdma"], found["network"]) == ("v1.1.1", "yes", "gIB")


def test_a_rank_that_never_answered_leaves_no_bandwidth_to_judge() -> None:
    """A missing rank's bandwidth is not an average of the others: the metric is absent, and
    the gate fails it as not measured."""
    log = real("all_reduce-1rank-socket.log")
    ranks = [rank(0, log, "a", 300.0), {"rank": 1, "formed": False, "error": "died"}]
    measures = driver().judge(ranks, 2, 2)
    assert measures["ranks_formed"] == "1"
    assert "all_gather_busbw" not in measures


def test_bus_bandwidth_factors_are_nccl_tests_ones() -> None:
    job_nccl = driver()
    assert job_nccl.bus_factor("all_reduce", 16) == pytest.approx(2 * 15 / 16)
    assert job_nccl.bus_factor("all_gather", 16) == pytest.approx(15 / 16)
    assert job_nccl.bus_factor("all_gather", 1) == 0  # one rank has no bus traffic (the logs)


RECORDED = Path(__file__).resolve().parent / "data" / "h100-job-nccl"
"""The gate's own rank code on a real H100 (README.md there): not shared data, this project's."""


@pytest.mark.parametrize("net", ["socket", "gIB"])
def test_the_rank_code_s_real_results_judge_as_recorded(net: str) -> None:
    """What the rank returned with real torch and NCCL judges the same here, and fails the
    gate: one rank, and no gIB."""
    job_nccl = driver()
    result = json.loads((RECORDED / f"job_nccl-rank0-{net}.json").read_text())
    log = (RECORDED / f"job_nccl-rank0-{net}.log").read_text()
    recorded = result.pop("judge")
    judged = job_nccl.judge([{**result, "log": log}], 1, 1)
    # Recorded before the gIB version and GPUDirect RDMA counts: those are absent there.
    assert {k: judged[k] for k in recorded} == recorded
    assert (judged["ranks_with_gdrdma"], judged["gib_version"]) == ("0", "")
    assert recorded["ranks_formed"] == "1"
    assert recorded["ranks_with_nccl_version"] == "1"
    assert recorded["ranks_on_gib"] == "0"
    assert recorded["nccl_version"] == "2.28.9+cuda13.0"


def test_real_torch_gave_right_values_at_every_size_on_sockets() -> None:
    result = json.loads((RECORDED / "job_nccl-rank0-socket.json").read_text())
    assert result["formed"] is True
    assert result["wrong"] == 0
    assert "error" not in result
    assert result["torch"] == "2.11.0+cu130"
    assert (
        driver().read_nccl_log((RECORDED / "job_nccl-rank0-socket.log").read_text())["network"]
        == "Socket"
    )


def test_real_torch_without_the_gib_plugin_fails_the_rank_with_nccl_s_warning() -> None:
    result = json.loads((RECORDED / "job_nccl-rank0-gIB.json").read_text())
    assert result["error"].startswith("DistBackendError: NCCL error")
    assert result["error"].endswith("Failed to initialize any NET plugin")
    found = driver().read_nccl_log((RECORDED / "job_nccl-rank0-gIB.log").read_text())
    assert found["warning"] == "Failed to initialize any NET plugin"
