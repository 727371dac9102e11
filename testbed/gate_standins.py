"""Stand-ins for what the acceptance gates run on a GPU node, where no GPU or RDMA NIC exists.

`install(folder, scenario)` writes a bin folder of stand-in tools (nvidia-smi, the nccl-tests
binaries, mpirun, ssh, the diagnostic image's container_entry.sh, and fio when the real one is
not installed), a fake /sys/class/infiniband tree and the gIB / driver folders the workers'
setup expects. Every stand-in says on stderr that it is one, checks the arguments it gets the
way the real tool would need them (and exits 2 on anything else), and prints output in the
real tool's format with the values of the scenario. The gate scripts themselves run unchanged.
"""

from __future__ import annotations

import json
import shlex
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path


@dataclass
class Scenario:
    """What the fake hardware measures."""

    gpus: int = 8
    ecc_errors: list[int] = field(default_factory=list)
    """Uncorrected ECC errors per GPU (missing entries are 0; -1 prints [N/A])."""
    rdma_devices: int = 8
    network: str = "gIB"
    busbw_8g: dict[str, float] = field(
        default_factory=lambda: {"all_gather": 344.46, "all_reduce": 280.0}
    )
    avg_busbw: dict[str, float] = field(
        default_factory=lambda: {"all_gather": 120.845, "all_reduce": 110.0}
    )
    socket_rank: bool = False
    gdrdma: bool = True
    """NCCL's gIB channels use GPUDirect RDMA (`via NET/gIB/<n>/GDRDMA`)."""
    fio_bw_bytes: dict[str, int] = field(
        default_factory=lambda: {"write": 6_000_000_000, "read": 7_000_000_000}
    )
    """Per node."""

    def to_json(self) -> str:
        """The scenario file the stand-ins read."""
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Scenario:
        """Back from the scenario file."""
        return cls(**json.loads(text))


PY = "#!/usr/bin/env python3\n"

NVIDIA_SMI = (
    PY
    + """import json, os, sys
sys.stderr.write("nvidia-smi (test bed stand-in: no GPU here)\\n")
want = ["--query-gpu=index,ecc.errors.uncorrected.volatile.total", "--format=csv,noheader,nounits"]
if sys.argv[1:] != want:
    sys.exit(f"stand-in nvidia-smi: unexpected arguments {sys.argv[1:]}")
s = json.load(open(os.environ["GATE_STANDIN_SCENARIO"]))
for i in range(s["gpus"]):
    ecc = s["ecc_errors"][i] if i < len(s["ecc_errors"]) else 0
    print(f"{i}, {'[N/A]' if ecc < 0 else ecc}")
"""
)

PERF = (
    PY
    + """import json, os, sys
sys.path.insert(0, os.environ["GATE_STANDIN_PYTHONPATH"])
from testbed.tool_outputs import nccl_output
name = os.path.basename(sys.argv[0])
sys.stderr.write(f"{name} (test bed stand-in: prints nccl-tests output of the scenario)\\n")
args = sys.argv[1:]
collective = name.removesuffix("_perf")
s = json.load(open(os.environ["GATE_STANDIN_SCENARIO"]))
if os.environ.get("NCCL_DEBUG") != "INFO":
    sys.exit(f"stand-in {name}: NCCL_DEBUG=INFO is needed to see the network NCCL picks")
ranks = int(os.environ.get("GATE_STANDIN_RANKS", "8"))
print(nccl_output(collective, busbw_8g=s["busbw_8g"].get(collective, 100.0),
                  avg=s["avg_busbw"].get(collective), network=s["network"], ranks=ranks,
                  socket_rank=s["socket_rank"]), end="")
"""
)

MPIRUN = (
    PY
    + """import os, subprocess, sys
sys.stderr.write("mpirun (test bed stand-in: runs the nccl-tests stand-in once for all ranks)\\n")
args = sys.argv[1:]
def value(flag):
    return args[args.index(flag) + 1] if flag in args else None
hostfile = value("--hostfile")
if hostfile is None:
    sys.exit("stand-in mpirun: no --hostfile")
hosts = [line.split() for line in open(hostfile) if line.strip()]
nodes = int(os.environ["NODES"])
slots = ["port=222", f"slots={os.environ['EXPECTED_GPUS']}"]
if len(hosts) != nodes or any(h[1:] != slots for h in hosts):
    sys.exit(f"stand-in mpirun: want {nodes} hosts, port=222, a slot per GPU: {hosts}")
exported = [args[i + 1] for i, a in enumerate(args) if a == "-x"]
for needed in ("NCCL_DEBUG", "LD_LIBRARY_PATH"):
    if needed not in exported:
        sys.exit(f"stand-in mpirun: {needed} is not passed to the ranks (-x)")
binary = next((a for a in args if a.endswith("_perf")), None)
if binary is None:
    sys.exit("stand-in mpirun: no nccl-tests binary")
rest = args[args.index(binary) + 1:]
if rest[:4] != ["-b", "1K", "-e", "8G"] or "-g" not in rest or rest[rest.index("-g") + 1] != "1":
    sys.exit(f"stand-in mpirun: expected -b 1K -e 8G ... -g 1, got {rest}")
env = dict(os.environ, GATE_STANDIN_RANKS=str(nodes * int(os.environ["EXPECTED_GPUS"])))
sys.exit(subprocess.run([binary, *rest], env=env).returncode)
"""
)

SSH = (
    PY
    + """import os, sys
# ssh -q -o ... -p 222 HOST COMMAND...
args = sys.argv[1:]
sys.stderr.write(f"ssh (test bed stand-in: no network) {args}\\n")
while args and args[0].startswith("-"):
    args = args[2:] if args[0] in ("-o", "-p") else args[1:]
host, command = args[0], args[1:]
pods = os.environ["GATE_STANDIN_PODS"]
short = host.split(".", 1)[0]
if not os.path.isdir(os.path.join(pods, short, "sshd")):
    sys.exit(255)  # nobody listens on port 222 there (yet)
if command == ["hostname"]:
    print(host)
elif len(command) == 2 and command[0] == "touch":
    open(os.path.join(pods, short, os.path.basename(command[1])), "w").close()
else:
    sys.exit(f"stand-in ssh: unexpected command {command}")
"""
)

CONTAINER_ENTRY = (
    PY
    + """import os, sys
sys.stderr.write("container_entry.sh (test bed stand-in: marks sshd as listening)\\n")
if sys.argv[1:] != ["daemon"]:
    sys.exit(f"stand-in container_entry.sh: unexpected arguments {sys.argv[1:]}")
os.makedirs(os.path.join(os.environ["GATE_TMP"], "sshd"), exist_ok=True)
"""
)

FIO = (
    PY
    + """import json, os, sys
sys.path.insert(0, os.environ["GATE_STANDIN_PYTHONPATH"])
from testbed.tool_outputs import fio_json
sys.stderr.write("fio (test bed stand-in: writes fio JSON with the scenario's bandwidth)\\n")
opts = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
for needed in ("name", "directory", "rw", "output-format", "output", "runtime", "numjobs"):
    if needed not in opts:
        sys.exit(f"stand-in fio: --{needed} missing")
if opts["output-format"] != "json" or not os.path.isdir(opts["directory"]):
    sys.exit("stand-in fio: needs --output-format=json and an existing --directory")
s = json.load(open(os.environ["GATE_STANDIN_SCENARIO"]))
with open(opts["output"], "w") as out:
    out.write(fio_json(opts["rw"], s["fio_bw_bytes"][opts["rw"]]))
"""
)

GIB_ENV = """# set_nccl_env.sh (test bed stand-in for Google's script: sets two of its variables;
# like the real one it does not set NCCL_NET, which the workers' setup exports before it)
echo "set_nccl_env.sh (test bed stand-in)" >&2
export NCCL_NET_PLUGIN=/usr/local/gib/lib64/libnccl-net_internal.so
export NCCL_CROSS_NIC=0
"""


def install(folder: Path, scenario: Scenario, *, real_fio: bool = False) -> dict[str, str]:
    """Write the stand-ins under `folder`; return the environment a gate runs with."""
    bin_dir = folder / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    tools = {
        "nvidia-smi": NVIDIA_SMI,
        "all_gather_perf": PERF,
        "all_reduce_perf": PERF,
        "mpirun": MPIRUN,
        "ssh": SSH,
        "container_entry.sh": CONTAINER_ENTRY,
        "ldconfig": "#!/bin/sh\necho 'ldconfig (test bed stand-in)' >&2\n",
    }
    if not (real_fio and shutil.which("fio")):
        tools["fio"] = FIO
    for name, text in tools.items():
        path = bin_dir / name
        path.write_text(text, encoding="utf-8")
        path.chmod(0o755)
    ib = folder / "sys-class-infiniband"
    shutil.rmtree(ib, ignore_errors=True)
    for index in range(scenario.rdma_devices):
        (ib / f"mlx5_{index}" / "device" / "net" / f"eth{index + 2}").mkdir(parents=True)
    gib = folder / "gib"
    (gib / "scripts").mkdir(parents=True, exist_ok=True)
    (gib / "scripts" / "set_nccl_env.sh").write_text(GIB_ENV, encoding="utf-8")
    (gib / "lib64").mkdir(exist_ok=True)
    (folder / "nvidia" / "lib64").mkdir(parents=True, exist_ok=True)
    scenario_file = folder / "scenario.json"
    scenario_file.write_text(scenario.to_json(), encoding="utf-8")
    return {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "NVIDIA_SMI": str(bin_dir / "nvidia-smi"),
        "NCCL_TESTS": str(bin_dir),
        "CONTAINER_ENTRY": str(bin_dir / "container_entry.sh"),
        "IB_SYSFS": str(ib),
        "GATE_STANDIN_SCENARIO": str(scenario_file),
        "GATE_STANDIN_PYTHONPATH": str(Path(__file__).resolve().parents[1]),
        "GATE_STANDIN_GIB": str(gib),
        "GATE_STANDIN_NVIDIA": str(folder / "nvidia"),
    }


def local_setup(setup: str, env: dict[str, str]) -> str:
    """The workers' setup with the node's /usr/local/gib and /usr/local/nvidia (host paths in a
    pod) pointed at the stand-in folders: the only change made to what a gate runs."""
    return setup.replace("/usr/local/gib", env["GATE_STANDIN_GIB"]).replace(
        "/usr/local/nvidia", env["GATE_STANDIN_NVIDIA"]
    )


def describe(env: dict[str, str]) -> str:
    """One line for logs: where the stand-ins are."""
    return f"gate stand-ins in {shlex.quote(str(Path(env['NVIDIA_SMI']).parent))}"
