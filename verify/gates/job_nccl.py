"""Job NCCL gate, the Ray driver: NCCL as the training run's own software uses it, on every GPU.

Runs on the stack's RayCluster in the NeMo RL image, submitted like the GRPO smoke (the gate's
Job runs grpo_smoke.py, which submits this through Ray's job API and judges what it prints).
The driver script before it is the GRPO driver's own setup (the node's gIB environment, the
socket interfaces), and it starts its workers the way NeMo RL does: one placement group per
GPU node with one {GPU, CPU} bundle per GPU, one actor per bundle, the driver's whole
environment in every actor's runtime env. The actors form one torch.distributed group with the
NCCL backend over all GPUs of all nodes (the image's torch and the NCCL it bundles), time
all_gather and all_reduce with CUDA events, check the values, and hand back NCCL's own log
(NCCL_DEBUG=INFO, one file per rank). The driver prints one `MEASURE <metric> <value>` line per
measurement (the gate judges them against its thresholds) and exits non-zero when a rank failed.

Environment: NODES, GPUS_PER_NODE, SIZES (bytes, space-separated, the largest is judged),
ITERATIONS, READY_SECONDS (how long the GPUs may take to be free), RUN_SECONDS.
"""

from __future__ import annotations

import os
import re
import socket
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

FLOAT_BYTES = 4
VERSION = re.compile(r"NCCL INFO NCCL version (\S+)")
NETWORK = re.compile(r"NCCL INFO Using network (\S+)")
WARNING = re.compile(r"NCCL WARN (.*)")
GIB_VERSION = re.compile(r"NET/gIB : Initializing gIB (\S+)")
"""The gIB plugin's own start-up line: its version, the plugin-to-NCCL compatibility question."""
GDRDMA = re.compile(r"via NET/gIB/\d+/GDRDMA")
"""A channel NCCL set up over gIB with GPUDirect RDMA (NCCL transport/net.cc prints
`Channel NN/N : a[d] -> b[d] [send] via NET/<net>/<dev>/GDRDMA`): the proof the GPUs use RDMA."""
COLLECTIVES = ("all_gather", "all_reduce")


def bus_factor(collective: str, world: int) -> float:
    """nccl-tests' bus bandwidth factor (doc/PERFORMANCE.md): what each rank's link carries."""
    if collective == "all_reduce":
        return 2 * (world - 1) / world
    return (world - 1) / world


def read_nccl_log(text: str) -> dict[str, str]:
    """What NCCL's INFO log of one rank says: its version, the network it used, its first
    warning, the gIB plugin's version (empty where the log has none), and "yes" where a
    channel runs over gIB with GPUDirect RDMA."""
    found = {"version": "", "network": "", "warning": "", "gib_version": "", "gdrdma": ""}
    patterns = (
        ("version", VERSION),
        ("network", NETWORK),
        ("warning", WARNING),
        ("gib_version", GIB_VERSION),
    )
    for line in text.splitlines():
        for key, pattern in patterns:
            match = pattern.search(line)
            if match and not found[key]:
                found[key] = match.group(1).strip()
        if GDRDMA.search(line):
            found["gdrdma"] = "yes"
    return found


def print_measures(measures: dict[str, str]) -> None:
    """The `MEASURE <metric> <value>` lines, in one write: Ray's log thread prints the actors'
    lines to the same stdout meanwhile, and `print` writes a line's text and its newline
    apart, so a worker's line could land inside a MEASURE line, which the gate then misses."""
    sys.stdout.write("".join(f"MEASURE {k} {v or 'none'}\n" for k, v in measures.items()))
    sys.stdout.flush()


def judge(results: list[dict[str, Any]], world: int, nodes: int) -> dict[str, str]:
    """The measurements over every rank's result: how many ranks formed the group, used gIB,
    printed NCCL's version line and ran a channel with GPUDirect RDMA; the nodes they spanned;
    wrong values; per collective the lowest bus bandwidth of any rank at the largest size
    (GB/s); the NCCL and gIB versions seen."""
    logs = [read_nccl_log(r.get("log", "")) for r in results]
    formed = [r for r in results if r.get("formed")]
    measures = {
        "ranks_formed": str(len(formed)),
        "ranks_on_gib": str(sum(1 for log in logs if log["network"] == "gIB")),
        "ranks_with_nccl_version": str(sum(1 for log in logs if log["version"])),
        "ranks_with_gdrdma": str(sum(1 for log in logs if log["gdrdma"])),
        "nodes_spanned": str(len({r.get("node") for r in formed})),
        "wrong_values": str(sum(int(r.get("wrong", 0)) for r in formed)),
        "nccl_version": ",".join(sorted({log["version"] for log in logs if log["version"]})),
        "networks": ",".join(sorted({log["network"] for log in logs if log["network"]})),
        "gib_version": ",".join(sorted({log["gib_version"] for log in logs if log["gib_version"]})),
    }
    for collective in COLLECTIVES:
        timed = [r["busbw"][collective] for r in formed if collective in r.get("busbw", {})]
        if len(timed) == world:
            measures[f"{collective}_busbw"] = f"{min(timed):.2f}"
    del nodes  # judged by the gate's threshold on nodes_spanned
    return measures


class Rank:
    """One rank of the group: a Ray actor with one GPU, as a NeMo RL worker is."""

    def address(self) -> tuple[str, int]:
        """Where rank 0's TCP store listens: this node's address and a free port."""
        import ray

        with socket.socket() as probe:
            probe.bind(("", 0))
            port = int(probe.getsockname()[1])
        return str(ray.util.get_node_ip_address()), port  # type: ignore[no-untyped-call]

    def run(
        self, rank: int, world: int, master: str, port: int, sizes: list[int], iterations: int
    ) -> dict[str, Any]:
        """Form the group, time each collective at each size, check the values; NCCL's log."""
        import ray

        log_path = Path(tempfile.gettempdir(), f"nemo-rl-gke-job-nccl-{rank}.log")
        log_path.unlink(missing_ok=True)
        # NCCL reads these when its first communicator forms, after this point.
        os.environ.update(
            {
                "NCCL_DEBUG": "INFO",
                "NCCL_DEBUG_SUBSYS": "INIT,NET,ENV",
                "NCCL_DEBUG_FILE": str(log_path),
            }
        )
        result: dict[str, Any] = {
            "rank": rank,
            "node": ray.util.get_node_ip_address(),  # type: ignore[no-untyped-call]
            "formed": False,
            "busbw": {},
            "wrong": 0,
        }
        try:
            import torch  # type: ignore[import-not-found]  # the NeMo RL image's
            import torch.distributed as dist  # type: ignore[import-not-found]

            result["torch"] = str(torch.__version__)
            torch.cuda.set_device(0)
            dist.init_process_group(
                "nccl",
                init_method=f"tcp://{master}:{port}",
                rank=rank,
                world_size=world,
                timeout=timedelta(seconds=600),
            )
            result["formed"] = True
            for collective in COLLECTIVES:
                for size in sizes:
                    seconds, wrong = self._time(
                        torch, dist, collective, size, rank, world, iterations
                    )
                    result["wrong"] += wrong
                    busbw = size / seconds * bus_factor(collective, world) / 1e9
                    print(
                        f"rank {rank}: {collective} bytes={size} time_s={seconds:.6f}"
                        f" busbw_GBps={busbw:.2f} wrong={wrong}",
                        flush=True,
                    )
                    result["busbw"][collective] = busbw
            dist.destroy_process_group()
        except Exception as failed:  # the rank's failure is a measurement, not a crash
            result["error"] = f"{type(failed).__name__}: {failed}"
        result["log"] = log_path.read_text(errors="replace") if log_path.exists() else ""
        return result

    @staticmethod
    def _time(
        torch: Any, dist: Any, collective: str, size: int, rank: int, world: int, iterations: int
    ) -> tuple[float, int]:
        """Seconds per call (CUDA events around `iterations` calls after one warm-up) and how
        many checked values were wrong."""
        count = size // FLOAT_BYTES // world * world
        if collective == "all_reduce":
            data = torch.ones(count, device="cuda")

            def call() -> None:
                dist.all_reduce(data)

        else:
            part = torch.full((count // world,), float(rank), device="cuda")
            data = torch.empty(count, device="cuda")

            def call() -> None:
                dist.all_gather_into_tensor(data, part)

        call()
        torch.cuda.synchronize()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iterations):
            call()
        end.record()
        torch.cuda.synchronize()
        seconds = start.elapsed_time(end) / 1000 / iterations
        # The values: a sum over all ranks of ones, or every rank's own number in its chunk.
        if collective == "all_reduce":
            data.fill_(1.0)
            call()
            want = float(count * world)
        else:
            want = float(count // world * world * (world - 1) / 2)
        got = float(data.double().sum().item())
        return seconds, 0 if got == want else 1


def main() -> int:
    """Place the ranks, run them, print the measurements."""
    import ray
    from ray.util.placement_group import placement_group
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    nodes, per_node = int(os.environ["NODES"]), int(os.environ["GPUS_PER_NODE"])
    sizes = [int(s) for s in os.environ.get("SIZES", "1048576").split()]
    iterations = int(os.environ.get("ITERATIONS", "5"))
    world = nodes * per_node
    # As NeMo RL's init_ray: the driver's whole environment goes to every worker.
    env_vars = dict(os.environ)
    env_vars.pop("RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES", None)
    ray.init(address="auto", runtime_env={"env_vars": env_vars})
    have = int(ray.cluster_resources().get("GPU", 0))  # type: ignore[no-untyped-call]
    print(f"job-nccl: {world} ranks on {nodes} nodes x {per_node} GPUs; the cluster has {have}")
    groups = [
        placement_group([{"GPU": 1, "CPU": 1}] * per_node, strategy="STRICT_PACK")
        for _ in range(nodes)
    ]
    try:
        ray.get([g.ready() for g in groups], timeout=float(os.environ.get("READY_SECONDS", "300")))
    except ray.exceptions.GetTimeoutError:
        print_measures({"ranks_formed": "0"})
        print(
            f"job-nccl: {world} GPUs in {nodes} groups of {per_node} were not free in time"
            f" (the cluster has {have} GPUs)",
            file=sys.stderr,
        )
        return 1
    actor = ray.remote(num_gpus=1, num_cpus=1)(Rank)
    ranks: list[Any] = [
        actor.options(
            scheduling_strategy=PlacementGroupSchedulingStrategy(
                placement_group=group, placement_group_bundle_index=index
            )
        ).remote()
        for group in groups
        for index in range(per_node)
    ]
    master, port = ray.get(ranks[0].address.remote())
    started = time.monotonic()
    futures = [r.run.remote(i, world, master, port, sizes, iterations) for i, r in enumerate(ranks)]
    results: list[dict[str, Any]] = []
    for i, future in enumerate(futures):
        try:
            results.append(ray.get(future, timeout=float(os.environ.get("RUN_SECONDS", "900"))))
        except Exception as died:  # a rank that never answered counts as not formed
            results.append({"rank": i, "formed": False, "error": f"{type(died).__name__}: {died}"})
    print(f"job-nccl: {len(results)} ranks answered in {time.monotonic() - started:.0f} s")
    warnings = []
    for result in results:
        if result.get("error"):
            print(f"job-nccl: rank {result['rank']} failed: {result['error']}", file=sys.stderr)
        warning = read_nccl_log(result.get("log", ""))["warning"]
        if warning:
            warnings.append(warning)
            print(f"job-nccl: rank {result['rank']}: NCCL WARN {warning}", file=sys.stderr)
    print_measures(judge(results, world, nodes))
    failed = [r for r in results if r.get("error") or not r.get("formed")]
    if failed:
        # The job's last line says why (the gate's verdict quotes it): the first failure.
        why = failed[0].get("error") or "it did not form the group"
        cause = f"; NCCL WARN {warnings[0]}" if warnings else ""
        raise RuntimeError(
            " ".join(f"{len(failed)} of {world} ranks failed; rank {failed[0]['rank']}: {why}"
                     f"{cause}".split())
        )  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
