"""Tool output in the formats the gates parse: for the gate tests, and for the test bed's
stand-ins of tools that need GPUs or RDMA.

nccl-tests: the layout of `all_gather_perf` / `all_reduce_perf` (nccl-tests' common.cu as
quoted in acceptance-facts.md: a header, one row per size with out-of-place and in-place
time / algbw / busbw / #wrong, then the out-of-bounds and "Avg bus bandwidth" lines), with
NCCL_DEBUG=INFO lines as NCCL prints them. fio: tests run the real fio when it is installed;
`fio_json` writes the same structure fio 3.x pretty-prints (checked against real fio output in
test_gates.py).
"""

from __future__ import annotations

import json

SIZES = [1024 * 2**k for k in range(24)]  # -b 1K -e 8G -f 2


def nccl_output(
    collective: str,
    *,
    busbw_8g: float,
    avg: float | None = None,
    network: str = "gIB",
    ranks: int = 16,
    wrong: int = 0,
    socket_rank: bool = False,
) -> str:
    """nccl-tests output whose 8 GiB out-of-place busbw is `busbw_8g` (GB/s)."""
    redop = "none" if collective == "all_gather" else "sum"
    root = "-1"
    lines = [
        "# nThread 1 nGpus 1 minBytes 1024 maxBytes 8589934592 step: 2(factor) warmup iters: 5"
        " iters: 100 agg iters: 1 validation: 1 graph: 0",
        "#",
        "# Using devices",
    ]
    lines += [
        f"#  Rank {r:2d} Group  0 Pid {1000 + r:5d} on nccl-host-{r // 8} device {r % 8:2d}"
        f" [0x{r:02x}] NVIDIA B200"
        for r in range(ranks)
    ]
    info = [f"nccl-host-0:1000:1100 [0] NCCL INFO Using network {network}"]
    if socket_rank:
        info.append("nccl-host-1:1008:1108 [0] NCCL INFO Using network Socket")
    lines += [
        "NCCL version 2.28.3+cuda13.0",
        *info,
        "#",
        "#                                                              out-of-place"
        "                       in-place",
        "#       size         count      type   redop    root     time   algbw   busbw #wrong"
        "     time   algbw   busbw #wrong",
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)"
        "            (us)  (GB/s)  (GB/s)",
    ]
    factor = (ranks - 1) / ranks
    values = []
    for size in SIZES:
        # Bandwidth grows with size and saturates at the 8 GiB figure.
        busbw = busbw_8g * min(1.0, (size / SIZES[-1]) ** 0.25)
        algbw = busbw / factor
        time_us = size / (algbw * 1e3)
        values.append(busbw)
        count = size // 4 // (ranks if collective == "all_gather" else 1)
        row_wrong = wrong if size == SIZES[-1] else 0
        lines.append(
            f"{size:12d}  {count:12d}     float  {redop:>6}  {root:>6}  {time_us:8.2f}"
            f"  {algbw:6.2f}  {busbw:6.2f}  {row_wrong:5d}  {time_us * 0.98:8.2f}"
            f"  {algbw * 1.02:6.2f}  {busbw * 1.02:6.2f}  {0:5d}"
        )
    mean = avg if avg is not None else sum(values) / len(values)
    lines += [
        "# Out of bounds values : 0 OK",
        f"# Avg bus bandwidth    : {mean:.3f}",
        "#",
    ]
    return "\n".join(lines) + "\n"


def fio_json(rw: str, bw_bytes: int, *, jobs: int = 1, error: int = 0) -> str:
    """fio --output-format=json for `jobs` job entries, each with `bw_bytes` in `rw`."""

    def section(bw: int) -> dict[str, object]:
        return {"io_bytes": bw * 60, "io_kbytes": bw * 60 // 1024, "bw_bytes": bw, "bw": bw // 1024}

    entries = []
    for index in range(jobs):
        entries.append(
            {
                "jobname": f"{rw}",
                "groupid": 0,
                "job_start": 0,
                "error": error,
                "eta": 0,
                "elapsed": 62,
                "job options": {"rw": rw, "bs": "1m"},
                "read": section(bw_bytes if rw == "read" else 0),
                "write": section(bw_bytes if rw == "write" else 0),
                "trim": section(0),
                "sync": {"total_ios": 0},
                "job_runtime": 60000 + index,
            }
        )
    report = {"fio version": "fio-3.33", "timestamp": 0, "jobs": entries, "disk_util": []}
    # fio pretty-prints with 2 spaces and " : " between keys and values.
    return json.dumps(report, indent=2, separators=(",", " : ")) + "\n"
