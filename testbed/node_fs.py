"""A Ray pod's container on this host: which folder each container path is, and what is there.

kwok runs no container, so the test bed runs a Ray pod's processes on this host (testbed.ray_pods).
The container paths its commands name are mapped to folders of the test bed, from the pod's own
spec: each volume mount (a hostPath of the node, a claim, an emptyDir), the image's work folder
/opt/nemo-rl (the NeMo RL stand-in, testbed/nemo_rl_standin), the driver folder GKE mounts at
/usr/local/nvidia into every GPU container, and the container's private /tmp. The map is applied
to the text of what the container runs - its command, args and env values - and, through a `bash`
on the node's PATH, to every `bash -c` script a process of the node starts (a Ray job's
entrypoint); every mapped script is logged in the pod's folder. Nothing else is rewritten.

What the node's folders hold, each saying it is a stand-in where a real thing cannot be here:
the gIB installer's folder (Google's set_nccl_env.sh setting what the real one sets, the plugin
library's name, the tuner files), the driver folder (`nvidia-smi topo -m` only), `ldconfig`, `uv`
(runs the command with this host's Python environment, which has Ray 2.55.1) and `hf` (lays out a
Hugging Face cache entry instead of downloading).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from testbed.shared import shared_dir

REPO = Path(__file__).resolve().parents[1]
STANDIN_NEMO_RL = Path(__file__).resolve().parent / "nemo_rl_standin"
STANDIN_TORCH = Path(__file__).resolve().parent / "torch_standin"
STANDIN_TRANSFORMERS = Path(__file__).resolve().parent / "transformers_standin"
"""The image's torch and transformers, as the test bed's Python finds them (PYTHONPATH of every
Ray pod)."""
IMAGE_WORKDIR = "/opt/nemo-rl"
GKE_DRIVER_DIR = "/usr/local/nvidia"
"""Where GKE's device plugin mounts the node's driver (libraries, nvidia-smi) in GPU containers."""
GKE_DRIVER_HOST_PATH = "/home/kubernetes/bin/nvidia"
GIB_HOST_PATH = "/home/kubernetes/bin/gib"

IMAGE_ENV = {
    # NeMo RL v0.7.0's docker/Dockerfile ENV lines that matter to Ray and to the driver's
    # environment (the library path stands for the image's cuDNN folder; it is not needed here).
    "NRL_CONTAINER": "1",
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0",
    "LD_LIBRARY_PATH": "/opt/nemo_rl_venv/lib/python3.13/site-packages/nvidia/cudnn/lib",
}
NODES_ENV = "NEMO_RL_GKE_TESTBED_NODES"
"""Folder of the test bed's node records (`<pod ip>.json`), the same on every pod: what a
process can learn about the node it runs on (the NeMo RL stand-in's workers read it)."""


def register_node(nodes: Path, ip: str, info: dict[str, Any]) -> None:
    """Record a Ray node of the test bed: its pod, whether its GPUs have RDMA, its /tmp."""
    nodes.mkdir(parents=True, exist_ok=True)
    (nodes / f"{ip}.json").write_text(json.dumps(info), encoding="utf-8")


def node_info(ip: str) -> dict[str, Any]:
    """The record of the node at `ip` (empty outside the test bed)."""
    folder = os.environ.get(NODES_ENV)
    path = Path(folder, f"{ip}.json") if folder else None
    if path is None or not path.exists():
        return {}
    found: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return found


def map_paths(text: str, mounts: dict[str, str], keep: list[str] | None = None) -> str:
    """Replace each container path of `mounts` in `text` where it starts a path (after a
    separator such as a space, quote, `=` or `:`) and ends at a path boundary; in one pass, so a
    host folder written in is never mapped again, and never inside a host path of `keep` (the
    test bed's folders, this host's Python) that a command already names."""
    if not mounts:
        return text
    names = "|".join(re.escape(c) for c in sorted(mounts, key=len, reverse=True))
    kept = "|".join(re.escape(k) for k in sorted(keep or [], key=len, reverse=True))
    pattern = rf"(?<![\w./-])(?:{names})(?![\w.-])"
    if kept:
        pattern = rf"(?:{kept})[^\s'\":]*|{pattern}"
    return re.sub(pattern, lambda m: mounts.get(m.group(0), m.group(0)), text)


def nemo_rl_configs() -> Path:
    """NeMo RL v0.7.0's example configs (shared test data, never copied into the repository)."""
    return shared_dir() / "reference" / "nemo-rl-v0.7.0" / "configs"


@dataclass
class NodeFs:
    """The container paths of one pod and the host folders they are."""

    root: Path
    """The pod's own folder (short: Ray's socket paths live under its /tmp)."""
    mounts: dict[str, Path] = field(default_factory=dict)
    """Container path -> host folder."""
    keep: list[str] = field(default_factory=list)
    """Host paths never mapped again (the test bed's folders, this host's Python)."""

    def map_text(self, text: str) -> str:
        """`text` with every mapped container path (at a path boundary) replaced, in one pass."""
        return map_paths(text, {c: str(h) for c, h in self.mounts.items()}, self.keep)

    def describe(self) -> str:
        """One line for logs."""
        return ", ".join(f"{c} -> {h}" for c, h in sorted(self.mounts.items()))


@dataclass(frozen=True)
class NodeFolders:
    """Host folders shared by every pod of the local cluster (as a node's host paths and a
    ReadWriteMany claim are shared by its pods)."""

    root: Path

    @property
    def gib(self) -> Path:
        """/home/kubernetes/bin/gib of every GPU node: the gIB installer's output."""
        return self.root / "host-gib"

    @property
    def nvidia(self) -> Path:
        """/home/kubernetes/bin/nvidia of every GPU node: the driver folder."""
        return self.root / "host-nvidia"

    @property
    def nemo_rl(self) -> Path:
        """/opt/nemo-rl of the NeMo RL image: the stand-in."""
        return self.root / "image-nemo-rl"

    @property
    def tools(self) -> Path:
        """Tools every pod finds on its PATH (ldconfig, uv, hf)."""
        return self.root / "image-bin"

    def claim(self, namespace: str, claim: str) -> Path:
        """A PersistentVolumeClaim's data, shared by every pod that mounts it."""
        return self.root / "volumes" / namespace / claim


GIB_ENV = """# set_nccl_env.sh: test bed stand-in for the script of Google's gIB installer.
# It sets what Google documents the real one sets (the plugin library and NCCL's gIB settings,
# per the tutorial and Google's verl sample) and nothing else: no NCCL_NET, and no socket
# interface, so the interface a worker reports is the platform's own choice.
echo "set_nccl_env.sh (test bed stand-in)" >&2
export NCCL_NET_PLUGIN={gib}/lib64/libnccl-net_internal.so
export NCCL_CROSS_NIC=0
export NCCL_NET_GDR_LEVEL=PIX
export NCCL_IB_ADAPTIVE_ROUTING=1
export NCCL_IB_QPS_PER_CONNECTION=4
export NCCL_IB_TC=52
export NCCL_IB_FIFO_TC=84
"""

NVIDIA_SMI = """#!/bin/sh
# nvidia-smi: test bed stand-in (no GPU here). Only `topo -m`, in the real tool's layout: GPUs of
# the node (NVIDIA_STANDIN_GPUS) on this host's NUMA nodes, the first half on node 0.
echo "nvidia-smi (test bed stand-in: no GPU here)" >&2
[ "$*" = "topo -m" ] || {{ echo "stand-in nvidia-smi: only 'topo -m' ({args})" >&2; exit 2; }}
exec {python} - "${{NVIDIA_STANDIN_GPUS:-8}}" <<'EOF'
import os, sys
gpus = int(sys.argv[1])
nodes = sorted(int(n[4:]) for n in os.listdir("/sys/devices/system/node") if n[4:].isdigit())
cols = [f"GPU{{i}}" for i in range(gpus)]
print("\\t" + "\\t".join(cols + ["CPU Affinity", "NUMA Affinity", "GPU NUMA ID"]))
for i in range(gpus):
    node = nodes[min(len(nodes) - 1, i * len(nodes) // gpus)]
    cpus = open(f"/sys/devices/system/node/node{{node}}/cpulist").read().strip()
    links = ["X" if j == i else "NV18" for j in range(gpus)]
    print("\\t".join([f"GPU{{i}}", *links, cpus, str(node), "", "N/A"]))
print("\\nLegend:\\n\\n  X    = Self\\n  NV#  = Connection traversing a bonded set of # NVLinks")
EOF
"""

LDCONFIG = """#!/bin/sh
# ldconfig: test bed stand-in (writing the host's linker cache needs root and changes the host).
echo "ldconfig (test bed stand-in) $*" >&2
for dir in "$@"; do
  case "$dir" in -*) continue ;; esac
  [ -d "$dir" ] || { echo "ldconfig: Can't stat $dir: No such file or directory" >&2; exit 1; }
done
"""

UV = """#!{python}
# uv: test bed stand-in. The image's `uv run CMD` runs CMD in NeMo RL's virtual environment; here
# CMD runs with this host's Python environment (Ray 2.55.1, OmegaConf, Hydra), from the NeMo RL
# stand-in's folder.
import os, sys
sys.stderr.write("uv (test bed stand-in: runs the command with the test bed's Python)\\n")
args = sys.argv[1:]
if not args or args[0] != "run":
    sys.exit(f"stand-in uv: only `uv run ...` is expected, got {{args}}")
args = args[1:]
while args and args[0].startswith("--"):  # uv's own options (--no-sync ...)
    args = args[1:]
if not os.path.isfile(os.path.join(os.getcwd(), "pyproject.toml")):
    sys.exit(f"stand-in uv: no project in {{os.getcwd()}} (NeMo RL's uv run needs /opt/nemo-rl)")
command = {{"python": {python!r}, "hf": {hf!r}}}.get(args[0], args[0])
os.execv(command, [command, *args[1:]])
"""

HF = """#!{python}
# hf: test bed stand-in for huggingface_hub's CLI (no Hub here). `hf download REPO [--repo-type
# model|dataset] [--exclude GLOB]` lays out the cache entry the real one writes under $HF_HOME/hub
# (refs/main, a snapshot with config.json); it refuses a gated repository without a token (HF_TOKEN,
# or the file HF_TOKEN_PATH names, default $HF_HOME/token), as the Hub does; in offline mode
# (HF_HUB_OFFLINE=1) it calls no Hub: a cached entry is printed, anything else fails.
import os, sys
sys.stderr.write("hf (test bed stand-in: writes a Hugging Face cache entry, downloads nothing)\\n")
args = sys.argv[1:]
if len(args) < 2 or args[0] != "download":
    sys.exit(f"stand-in hf: only `hf download REPO` is expected, got {{args}}")
repo, options = args[1], args[2:]
kind = "model"
while options:
    if options[0] == "--repo-type" and len(options) > 1 and options[1] in ("model", "dataset"):
        kind = options[1]
    elif options[0] != "--exclude" or len(options) < 2:
        sys.exit(f"stand-in hf: unexpected options {{options}}")
    options = options[2:]
home = os.environ.get("HF_HOME")
if not home or not os.path.isdir(os.path.dirname(home.rstrip("/"))):
    sys.exit(f"stand-in hf: HF_HOME must be on a mounted volume, got {{home!r}}")
entry = os.path.join(home, "hub", kind + "s--" + repo.replace("/", "--"))
revision = "0" * 40
snapshot = os.path.join(entry, "snapshots", revision)
if os.environ.get("HF_HUB_OFFLINE", "").upper() in ("1", "ON", "YES", "TRUE"):
    if os.path.isdir(snapshot):
        print(snapshot)
        sys.exit(0)
    sys.exit(f"stand-in hf: offline mode is on (HF_HUB_OFFLINE) and {{repo}} is not in the cache")
token = os.environ.get("HF_TOKEN")
token_path = os.environ.get("HF_TOKEN_PATH") or os.path.join(home, "token")
if not token and os.path.isfile(token_path):
    token = open(token_path).read().strip()
if kind == "model" and repo.split("/")[0] in {gated!r} and not token:
    sys.exit(f"403 Forbidden: {{repo}} is a gated repository: log in or set a token (stand-in hf)")
os.makedirs(snapshot, exist_ok=True)
os.makedirs(os.path.join(entry, "refs"), exist_ok=True)
with open(os.path.join(entry, "refs", "main"), "w") as ref:
    ref.write(revision)
with open(os.path.join(snapshot, "config.json" if kind == "model" else "README.md"), "w") as f:
    f.write('{{"test_bed_standin": true}}\\n')
print(snapshot)
"""

BASH = """#!{python}
# bash on the node's PATH: the test bed's stand-in for the container's file system. A `bash -c`
# script gets the pod's container paths mapped to the test bed's folders (logged), then runs in
# the real /bin/bash. Used for what Ray starts inside the node (a job's entrypoint); the
# container's own command is mapped by the test bed agent.
import json, os, sys
sys.path.insert(0, {repo!r})
from testbed.node_fs import map_paths
mounts = json.loads({mounts!r})
args = sys.argv[1:]
if "-c" in args:
    at = args.index("-c") + 1
    if at < len(args):
        script = map_paths(args[at], mounts, json.loads({keep!r}))
        if script != args[at]:
            with open({log!r}, "a") as log:
                log.write("bash -c with container paths mapped: " + script + "\\n")
        args[at] = script
os.execv("/bin/bash", ["bash", *args])
"""


def _write(path: Path, text: str, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    path.chmod(mode)


def install_node_folders(folders: NodeFolders, gated_orgs: frozenset[str]) -> None:
    """Write the folders every node shares: gIB, driver, the NeMo RL stand-in, the image's tools."""
    python = sys.executable
    gib = folders.gib
    _write(gib / "scripts" / "set_nccl_env.sh", GIB_ENV.format(gib=gib))
    _write(gib / "lib64" / "libnccl-net_internal.so", "test bed stand-in: not a library\n")
    for tuner in ("tuner_config_a4.txtpb", "tuner_config_a3u.txtpb"):
        _write(gib / "configs" / tuner, "# test bed stand-in tuner file\n")
    nvidia = folders.nvidia
    (nvidia / "lib64").mkdir(parents=True, exist_ok=True)
    _write(nvidia / "bin" / "nvidia-smi", NVIDIA_SMI.format(python=python, args="$*"), 0o755)
    tools = folders.tools
    _write(tools / "ldconfig", LDCONFIG, 0o755)
    hf = tools / "hf"
    _write(hf, HF.format(python=python, gated=sorted(gated_orgs)), 0o755)
    _write(tools / "uv", UV.format(python=python, hf=str(hf)), 0o755)
    nemo_rl = folders.nemo_rl
    examples = nemo_rl / "examples"
    examples.mkdir(parents=True, exist_ok=True)
    for name, target in (
        ("run_grpo.py", STANDIN_NEMO_RL / "run_grpo.py"),
        ("configs", nemo_rl_configs()),
    ):
        link = examples / name
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(target)
    _write(
        nemo_rl / "pyproject.toml",
        "# test bed stand-in for NeMo RL's project file (uv run needs a project here)\n",
    )


def pod_fs(
    root: Path, pod: dict[str, Any], container: dict[str, Any], folders: NodeFolders
) -> NodeFs:
    """The container's paths, from the pod's volumes and mounts (and what GKE and the image add)."""
    # Every pod's folder is kept: NeMo RL forwards the driver's PATH (with its node's `bash`)
    # to workers on other nodes, whose commands name their own pod's folder.
    # Resolved too: the engine tests run a copy of the project whose .venv links to the
    # checkout's, and Ray starts its processes by the real path; a checkout under /tmp (the
    # container's /tmp is mapped) must never be mapped.
    keep = [str(folders.root.parent), sys.prefix, str(REPO)]
    keep += [str(Path(p).resolve()) for p in (sys.prefix, REPO, Path(sys.executable).parent.parent)]
    fs = NodeFs(root=root, keep=list(dict.fromkeys(keep)))
    fs.mounts["/tmp"] = root / "tmp"
    fs.mounts[IMAGE_WORKDIR] = folders.nemo_rl
    fs.mounts.update(volume_mounts(root, pod, container, folders))
    for host in fs.mounts.values():
        host.mkdir(parents=True, exist_ok=True)
    log = root / "mapped-scripts.log"
    _write(
        root / "bin" / "bash",
        BASH.format(
            python=sys.executable,
            repo=str(REPO),
            mounts=json.dumps({c: str(h) for c, h in fs.mounts.items()}),
            keep=json.dumps(fs.keep),
            log=str(log),
        ),
        0o755,
    )
    return fs


def volume_mounts(
    root: Path, pod: dict[str, Any], container: dict[str, Any], folders: NodeFolders
) -> dict[str, Path]:
    """One container's mounts (container path -> host folder): a pod's emptyDir, ConfigMap and
    Secret volumes are folders of the pod (shared by its containers, as on a node), claims and
    host paths the node's."""
    volumes = {v["name"]: v for v in pod["spec"].get("volumes", [])}
    namespace = pod["metadata"]["namespace"]
    mounts: dict[str, Path] = {}
    limits = container.get("resources", {}).get("limits", {})
    if int(limits.get("nvidia.com/gpu", 0) or 0) > 0:
        mounts[GKE_DRIVER_DIR] = folders.nvidia
    for mount in container.get("volumeMounts", []):
        path, volume = mount["mountPath"], volumes.get(mount["name"], {})
        if path == "/dev/shm":
            continue  # Ray reads /dev/shm itself; the host's holds the small test bed stores
        if "hostPath" in volume:
            host = volume["hostPath"]["path"]
            mounts[path] = {
                GIB_HOST_PATH: folders.gib,
                GKE_DRIVER_HOST_PATH: folders.nvidia,
            }.get(host, root / "host" / host.strip("/"))
        elif "persistentVolumeClaim" in volume:
            mounts[path] = folders.claim(namespace, volume["persistentVolumeClaim"]["claimName"])
        else:
            mounts[path] = root / "volumes" / mount["name"]
    return mounts


def sidecar_fs(
    fs: NodeFs, pod: dict[str, Any], container: dict[str, Any], folders: NodeFolders
) -> NodeFs:
    """Another container of a pod whose Ray container has `fs`: the same pod folder and /tmp,
    its own mounts."""
    mounts = {c: h for c, h in fs.mounts.items() if c in ("/tmp", IMAGE_WORKDIR)}
    mounts.update(volume_mounts(fs.root, pod, container, folders))
    for host in mounts.values():
        host.mkdir(parents=True, exist_ok=True)
    return NodeFs(root=fs.root, mounts=mounts, keep=list(fs.keep))


def pod_path(fs: NodeFs, folders: NodeFolders) -> str:
    """PATH of the pod's processes: the node's bash, the image's tools, this host's Python."""
    venv = Path(sys.executable).parent
    return os.pathsep.join(
        [str(fs.root / "bin"), str(folders.tools), str(venv), "/usr/local/bin", "/usr/bin", "/bin"]
    )


def quoted_command(argv: list[str]) -> str:
    """A command line for logs."""
    return " ".join(shlex.quote(a) for a in argv)


def container_environment(
    pod: dict[str, Any],
    container: dict[str, Any],
    fs: NodeFs,
    folders: NodeFolders,
    secret: Callable[[str, str, str], str | None] = lambda _ns, _name, _key: None,
    hub: str | None = None,
) -> dict[str, str]:
    """The container's environment as the kubelet builds it over the image's (values, `$(VAR)`
    references, downward-API fields, Secret keys), container paths mapped; then what the test
    bed's node adds: PATH with the node's tools and this host's Python, HOME and TMPDIR in the
    pod's folder, where the node records are, the torch and transformers stand-ins where the
    image's Python has them, how many GPUs its nvidia-smi shows, and the test bed's Hub
    (`hub`, testbed/hub_server.py) where the real Hub would be reached."""
    env = dict(IMAGE_ENV)
    env["HOSTNAME"] = pod["metadata"].get("name", "")
    namespace = pod["metadata"].get("namespace", "")
    for item in container.get("env", []):
        name = item["name"]
        ref = item.get("valueFrom", {}).get("secretKeyRef")
        if "value" in item:
            env[name] = re.sub(
                r"\$\((\w+)\)", lambda m: env.get(m.group(1), m.group(0)), item["value"]
            )
        elif "fieldRef" in item.get("valueFrom", {}):
            env[name] = field_value(pod, item["valueFrom"]["fieldRef"]["fieldPath"])
        elif ref:
            found = secret(namespace, ref["name"], ref["key"])
            if found is not None:
                env[name] = found
    env = {k: fs.map_text(v) for k, v in env.items()}
    home = fs.root / "home"
    home.mkdir(parents=True, exist_ok=True)
    limits = container.get("resources", {}).get("limits", {})
    env.update(
        {
            "PATH": pod_path(fs, folders),
            "HOME": str(home),
            "TMPDIR": str(fs.mounts["/tmp"]),
            NODES_ENV: str(folders.root / "nodes"),
            "PYTHONPATH": os.pathsep.join([str(STANDIN_TORCH), str(STANDIN_TRANSFORMERS)]),
            "NVIDIA_STANDIN_GPUS": str(limits.get("nvidia.com/gpu", 0)),
            **({"HF_ENDPOINT": hub} if hub else {}),
        }
    )
    return env


def field_value(pod: dict[str, Any], path: str) -> str:
    """A downward-API fieldRef (`spec.nodeName`, `metadata.labels['x']`, `status.podIP`, ...)."""
    match = re.fullmatch(r"metadata\.(labels|annotations)\['([^']+)'\]", path)
    if match:
        return str(pod["metadata"].get(match.group(1), {}).get(match.group(2), ""))
    value: Any = pod
    for part in path.split("."):
        value = value.get(part, "") if isinstance(value, dict) else ""
    return str(value)
