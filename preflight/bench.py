"""`python -m preflight.bench`: wall-clock numbers for preflight and the test suite.

Prints, per stack, the median wall time of `python -m preflight --stack S --quiet` in a fresh
process, the floor (a fresh process that only imports the SDK modules the program's
resources come from and touches their classes), the ratio of the two; b200 and h200 on each
RDMA path (`network.rdma` multi-network and dranet: seconds and resources); preflight of b200
with GPU pools of 2, 64 and 1000 nodes (the plan must not grow with the pool); how long preflight
takes to refuse each careless or hostile stack file of `hostile_stack_files` (exit code 2 and
one line, in a fresh process and in-process); and the time of one run of the fast test suite
(`make test`).
Numbers, never assertions: timing belongs here, not in tests.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from preflight.cli import REPO_ROOT, preflight
from preflight.report import display_type

STACKS = ("dev", "b200", "h200")


def sdk_modules(stack: str) -> list[str]:
    """Import statements for the SDK modules that hold the resource types a stack registers."""
    result = preflight(REPO_ROOT / f"Pulumi.{stack}.yaml")
    modules = {"import pulumi"}
    for record in result.run.records:
        package, module, cls = display_type(record.type).split(":")
        if package == "gcp":
            modules.add(f"from pulumi_gcp.{module} import {cls}")
        elif package == "kubernetes":
            modules.add(f"import pulumi_kubernetes.{_k8s_module(record.type)}")
    return sorted(modules)


def _k8s_module(type_: str) -> str:
    """`kubernetes:rbac.authorization.k8s.io/v1:ClusterRole` -> `rbac.v1`; custom resources
    (ray.io, networking.gke.io) come from `apiextensions`."""
    group, _, version = type_.split(":")[1].partition("/")
    if group.endswith(".k8s.io") or "." not in group:
        return f"{group.split('.')[0]}.{version}"
    if group == "helm.sh":
        return f"helm.{version}"
    return "apiextensions"


def wall(cmd: list[str], runs: int, ok: tuple[int, ...] = (0,)) -> float:
    """Median wall time of `cmd` over `runs` fresh processes (exit codes in `ok` accepted)."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        proc = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, check=False)
        if proc.returncode not in ok:
            raise SystemExit(f"{cmd} exited {proc.returncode}: {proc.stderr.decode()[-500:]}")
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def rdma_paths(python: str, runs: int) -> None:
    """Preflight of b200 and h200 on each RDMA path (network.rdma): plan time and resources."""
    import yaml

    print(f"{'stack / network.rdma':<26} {'preflight s':>12} {'resources':>10}")
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("b200", "h200"):
            base = yaml.safe_load((REPO_ROOT / f"Pulumi.{name}.yaml").read_text(encoding="utf-8"))
            for path in ("multi-network", "dranet"):
                config = dict(base["config"])
                network = dict(config.get("nemo-rl-gke:network") or {})
                config["nemo-rl-gke:network"] = {**network, "rdma": path}
                stack = Path(tmp) / f"Pulumi.{name}.yaml"
                stack.write_text(yaml.safe_dump({"config": config}), encoding="utf-8")
                cmd = [python, "-m", "preflight", "--stack-file", str(stack), "--quiet"]
                seconds = wall(cmd, runs)
                count = len(preflight(stack, project_dir=REPO_ROOT).run.records)
                print(f"{name + ' / ' + path:<26} {seconds:>12.2f} {count:>10}")


def pool_sizes(python: str, runs: int) -> None:
    """Preflight of b200 with ever larger GPU pools: the work must not grow with the nodes."""
    import yaml

    base = yaml.safe_load((REPO_ROOT / "Pulumi.b200.yaml").read_text(encoding="utf-8"))
    print(f"{'b200 GPU nodes':<15} {'preflight s':>12}  (exit 1 past the quota is expected)")
    with tempfile.TemporaryDirectory() as tmp:
        for nodes in (2, 64, 1000):
            config = dict(base["config"])
            config["nemo-rl-gke:gpu"] = {**config["nemo-rl-gke:gpu"], "nodes": nodes}
            stack = Path(tmp) / "Pulumi.b200.yaml"
            stack.write_text(yaml.safe_dump({"config": config}), encoding="utf-8")
            cmd = [python, "-m", "preflight", "--stack-file", str(stack), "--quiet"]
            print(f"{nodes:<15} {wall(cmd, runs, ok=(0, 1)):>12.2f}")


def _billion_laughs() -> bytes:
    lines = [b"    a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, 9):
        refs = ", ".join([f"*a{i - 1}"] * 9).encode()
        lines.append(f"    a{i}: &a{i} [".encode() + refs + b"]")
    return b"\n".join(lines) + b"\n"


def hostile_stack_files() -> dict[str, bytes]:
    """Stack files a careless or hostile user might write, each on top of a committed stack;
    preflight must refuse every one with exit code 2 and one line, quickly, showing no
    secret. The test suite runs the same files (tests/stack_config/test_hostile.py)."""
    dev = (REPO_ROOT / "Pulumi.dev.yaml").read_bytes()
    b200 = (REPO_ROOT / "Pulumi.b200.yaml").read_bytes()
    labels = b"  nemo-rl-gke:labels:\n"
    return {
        "alias-bomb": dev + labels + _billion_laughs(),
        "deep-nesting": dev + b"  nemo-rl-gke:labels: " + b"[" * 200_000 + b"\n",
        "multi-megabyte-map": dev
        + labels
        + b"".join(b"    k%d: v%d\n" % (i, i) for i in range(200_000)),
        "wide-map-under-the-size-limit": dev
        + labels
        + b"".join(b"    k%x: v\n" % i for i in range(20_000)),
        "not-utf8": dev + b"  nemo-rl-gke:name: caf\xe9\n",
        "duplicate-key": dev + b"  nemo-rl-gke:zone: us-central1-c\n",
        "nan": dev + b"  nemo-rl-gke:verify: {storage: {bucketMinMBPerSecond: .nan}}\n",
        "secret-in-a-label": dev + labels + b"    team: {secure: v1:NEVER-SHOWN-CIPHERTEXT}\n",
        "secret-in-a-model": dev
        + b"  nemo-rl-gke:ray: {job: {model: {secure: v1:NEVER-SHOWN-CIPHERTEXT}}}\n",
        "plaintext-credentials": dev + b"  gcp:credentials: NEVER-SHOWN-KEY-JSON\n",
        "look-alike-namespace": dev + "  nemo-rl-gk\u0435:protect: true\n".encode(),
        "rrule-interval-zero": dev
        + b"  nemo-rl-gke:cluster: {maintenance: {recurrence: FREQ=DAILY;INTERVAL=0}}\n",
        "rrule-that-almost-never-occurs": dev
        + b"  nemo-rl-gke:cluster: {maintenance:"
        + b" {recurrence: FREQ=DAILY;BYMONTH=2;BYMONTHDAY=31}}\n",
        "rrule-every-minute": dev
        + b"  nemo-rl-gke:cluster: {maintenance: {recurrence: 'FREQ=DAILY;BYMINUTE="
        + ",".join(map(str, range(60))).encode()
        + b"'}}\n",
        "year-9999-exclusion": dev
        + b"  nemo-rl-gke:cluster: {maintenance: {exclusionStart: '9999-12-31T00:00:00Z'}}\n",
        # YAML's true is not 1: pydantic alone would take it as one node / one GiB.
        "boolean-node-count": dev.replace(
            b"    autoscaling:\n      min: 0\n      max: 2\n", b"    nodes: true\n"
        ),
        "boolean-lustre-size": b200.replace(
            b"    capacityGib: 18000\n", b"    capacityGib: true\n"
        ),
        "zone-database-folder": dev
        + b"  nemo-rl-gke:health: {schedule: '@daily', timeZone: America}\n",
        "every-beyond-go-durations": dev + b"  nemo-rl-gke:health: {schedule: '@every 2562048h'}\n",
        "unquoted-timestamp": dev
        + b"  nemo-rl-gke:cluster: {maintenance: {windowStart: 2026-01-03T04:00:00Z}}\n",
        "runs-dir-leaves-data": dev + b"  nemo-rl-gke:ray: {job: {runsDir: /data/../etc}}\n",
        "hydra-interpolation": dev
        + b"  nemo-rl-gke:ray: {job: {model: 'org/${oc.env:HF_TOKEN}'}}\n",
        "rayjob-name-too-long": dev + b"  nemo-rl-gke:ray: {job: {name: " + b"a" * 45 + b"}}\n",
        "psa-on-the-gpu-nics": b200.replace(
            b"  nemo-rl-gke:network:\n", b"  nemo-rl-gke:network:\n    psaCidr: 192.168.240.0/20\n"
        ),
        "threshold-above-the-published-figure": b200
        + b"  nemo-rl-gke:verify: {nccl: {minBusBandwidthGBPerSecond: 400}}\n",
    }


def hostile(python: str, runs: int) -> None:
    """Seconds to refuse each hostile stack file: a fresh `python -m preflight` (interpreter
    and imports included), and in-process (the reading and validating alone)."""
    import io

    from preflight.cli import main as cli_main

    print(f"{'hostile stack file':<38} {'exit':>4} {'process s':>10} {'in-process s':>13}")
    with tempfile.TemporaryDirectory() as tmp:
        files = hostile_stack_files()
        warm = Path(tmp) / "Pulumi.warm.yaml"  # imports paid once, not by the first case
        warm.write_bytes(files["secret-in-a-label"])
        cli_main(["--stack-file", str(warm), "--quiet"], out=io.StringIO(), err=io.StringIO())
        for name, data in files.items():
            stack = Path(tmp) / f"Pulumi.{name}.yaml"
            stack.write_bytes(data)
            argv = ["--stack-file", str(stack), "--quiet"]
            process = wall([python, "-m", "preflight", *argv], runs, ok=(2,))
            started = time.perf_counter()
            code = cli_main(argv, out=io.StringIO(), err=io.StringIO())
            inside = time.perf_counter() - started
            print(f"{name:<38} {code:>4} {process:>10.2f} {inside:>13.3f}")


def main() -> int:
    """Print the benchmark table."""
    parser = argparse.ArgumentParser(prog="python -m preflight.bench")
    parser.add_argument("--runs", type=int, default=5, help="runs per measurement (median)")
    parser.add_argument("--skip-tests", action="store_true", help="do not time the test suite")
    args = parser.parse_args()

    python = sys.executable
    print(f"{'stack':<6} {'preflight s':>12} {'floor s':>9} {'ratio':>6}  (median of {args.runs})")
    for stack in STACKS:
        imports = "; ".join(sdk_modules(stack))
        floor = wall([python, "-c", imports], args.runs)
        run = wall([python, "-m", "preflight", "--stack", stack, "--quiet"], args.runs)
        print(f"{stack:<6} {run:>12.2f} {floor:>9.2f} {run / floor:>6.2f}")
    rdma_paths(python, args.runs)
    pool_sizes(python, args.runs)
    hostile(python, max(1, args.runs // 2))
    if not args.skip_tests:
        started = time.perf_counter()
        # The README's test command itself (its pytest options, workers included, live there).
        proc = subprocess.run(
            [shutil.which("make") or "make", "-s", "test"],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        elapsed = time.perf_counter() - started
        last = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else "(no output)"
        print(f"test suite: {elapsed:.1f} s wall - {last}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
