"""Pure planning for the Ray workload: pod sizing, gIB/NCCL environment, the GRPO command.

Nothing here touches Pulumi; the RayCluster component only places these values.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from planning.catalog import GpuProfile
from planning.ray_sizes import DATASET_TRAIN_ROWS, RECIPES, RecipeShape, epochs_for

NEMO_RL_DIR = "/opt/nemo-rl"
"""WORKDIR of the NeMo RL image (NVIDIA-NeMo/RL:docker/Dockerfile)."""
GIB_DIR = "/usr/local/gib"
NVIDIA_DIR = "/usr/local/nvidia"
DATA_DIR = "/data"
HF_HOME = f"{DATA_DIR}/huggingface_cache"
GB_PER_GIB = 1.073741824
GIB = 2**30

RAY_OBJECT_STORE_FRACTION = 0.3
"""Ray's default object store share of a node's memory (ray 2.55.1,
`ray_constants.DEFAULT_OBJECT_STORE_MEMORY_PROPORTION`)."""
RAY_OBJECT_STORE_MAX_BYTES = 200 * 10**9
"""Ray's default cap on the object store (`DEFAULT_OBJECT_STORE_MAX_MEMORY_BYTES`, 200 GB)."""
SHM_HEADROOM_GIB_PER_GPU = 8
"""/dev/shm beyond the object store, per GPU: NCCL's intra-node buffers and vLLM's shared memory
live there too, and a full /dev/shm fails them instead of spilling."""

GATED_MODEL_ORGS = frozenset({"meta-llama", "google", "mistralai", "nvidia"})
"""Hugging Face orgs whose models need an accepted licence and a token to download."""

# CUDA runtime of each NeMo RL image, and the driver branch that CUDA needs
# (NVIDIA-NeMo/RL:docker/Dockerfile per tag; CUDA 13 needs R580+, CUDA 12.9 R575+).
IMAGE_CUDA: dict[str, tuple[int, int]] = {"v0.5.0": (12, 9), "v0.6.0": (12, 9), "v0.7.0": (13, 2)}
IMAGE_RAY: dict[str, str] = {"v0.5.0": "2.49.2", "v0.6.0": "2.54.0", "v0.7.0": "2.55.1"}
"""Ray pinned in each tag's uv.lock: the RayCluster's rayVersion must equal it."""


@dataclass(frozen=True)
class PodSize:
    """Requests (= limits) of a Ray pod, and its shared memory."""

    cpu: int
    memory_gib: int
    gpus: int
    shm_gib: int
    """/dev/shm (a memory emptyDir): the object store plus NCCL's and vLLM's headroom."""
    object_store_gib: int
    """Ray's object store (`--object-store-memory`), always inside /dev/shm."""

    @property
    def object_store_bytes(self) -> int:
        """The object store as `ray start` takes it."""
        return self.object_store_gib * GIB


def worker_size(gpu: GpuProfile) -> PodSize:
    """One Ray worker per GPU node, taking every GPU and most of the node.

    About 10% of vCPUs and 20% of memory stay free for the kubelet, GKE's DaemonSets and
    sidecars. The tutorial's B200 worker (206 CPU / 2400Gi) sits inside these bounds.

    /dev/shm and the object store are sized together. Left to itself, Ray sizes the store at
    30% of the node's memory (at most 200 GB) and, when /dev/shm is smaller than that, puts it
    on disk (/tmp/ray, "This will harm performance"; ray `services.determine_plasma_store_config`)
    - what a 5 GiB /dev/shm did on L4. So the store is Ray's own default size, in whole GiB,
    passed explicitly, and /dev/shm holds it plus a headroom per GPU for NCCL and vLLM (B200
    and H200: 186 + 64 = 250 GiB, the size Google's RDMA test pods use). Memory /dev/shm counts
    against the pod's memory only as it fills.
    """
    memory_gib = int(gpu.memory_gb / GB_PER_GIB * 0.8)
    object_store_gib = min(
        int(memory_gib * RAY_OBJECT_STORE_FRACTION), RAY_OBJECT_STORE_MAX_BYTES // GIB
    )
    return PodSize(
        cpu=int(gpu.vcpus * 0.9),
        memory_gib=memory_gib,
        gpus=gpu.gpus_per_node,
        shm_gib=object_store_gib + SHM_HEADROOM_GIB_PER_GPU * gpu.gpus_per_node,
        object_store_gib=object_store_gib,
    )


def image_tag(image: str) -> str:
    """`nvcr.io/nvidia/nemo-rl:v0.7.0` -> `v0.7.0`."""
    return image.rsplit(":", 1)[-1]


def _version(tag: str) -> tuple[int, ...]:
    match = re.match(r"^v?(\d+)\.(\d+)\.(\d+)", tag)
    if match is None:
        raise ValueError(f"cannot read a NeMo RL version from image tag {tag!r}")
    return tuple(int(p) for p in match.groups())


def grpo_script(image: str) -> str:
    """The GRPO entry point of the image: `run_grpo_math.py` was removed in v0.6.0."""
    return (
        "examples/run_grpo.py"
        if _version(image_tag(image)) >= (0, 6, 0)
        else "examples/run_grpo_math.py"
    )


DATASET = "gsm8k"
"""The dataset every run trains on (`data.train.dataset_name`)."""


def gsm8k_overrides(image: str) -> list[str]:
    """Dataset overrides that train and validate on GSM8K in the image's config schema.

    NeMo RL's GSM8K dataset builds only a training split, and GRPO setup refuses to start
    when validation is on (`grpo.val_period > 0` in grpo_math_1B.yaml) without a validation
    dataset: validate on GSM8K's test split, as upstream's GSM8K recipes do.
    """
    if _version(image_tag(image)) >= (0, 6, 0):
        return [
            f"data.train.dataset_name={DATASET}",
            "data.validation={dataset_name:gsm8k,split:test}",
        ]
    # v0.5.0 (Google's sample, tutorial-facts §12.1): a response dataset from the HF Hub.
    return [
        "data.dataset_name=ResponseDataset",
        "+data.train_data_path=openai/gsm8k",
        "+data.val_data_path=openai/gsm8k",
        "+data.train_split=train",
        "+data.val_split=test",
        '+data.subset="main"',
        '+data.input_key="question"',
        '+data.output_key="answer"',
    ]


def model_is_gated(model: str) -> bool:
    """True for models whose download needs a Hugging Face token. The Hub resolves repo ids
    without regard to case (`Meta-Llama/...` is Meta's gated repository), so the owner is
    compared in lower case."""
    return model.split("/", 1)[0].lower() in GATED_MODEL_ORGS


RUN_ID_LENGTH = 8
"""Hex digits of a run id derived from the run's definition."""
GIB_ENV_SCRIPT = f"{GIB_DIR}/scripts/set_nccl_env.sh"
"""Google's gIB NCCL settings, installed on RDMA GPU nodes with the plugin (and kept current)."""
GIB_RESOURCE = "nemo_rl_gib"
"""Ray resource every RDMA worker advertises once; the job's driver asks for it, so the driver
starts on a worker whose shell has sourced the gIB script (NeMo RL forwards the driver's
environment to every training and generation process)."""
OWN_CLUSTER_RETRIES = 3
"""`backoffLimit` of a RayJob that brings its own cluster (pools that scale from zero, Spot on
dev): a preempted node fails the run, KubeRay runs it again on a new cluster and NeMo RL resumes
from the newest checkpoint in the run's folder. Three covers a bad hour on Spot without looping
forever on a run that fails for its own reasons."""

KEEP_FAILED_HEAD_MINUTES = 24 * 60
"""How long the head of a failed run's own cluster stays (its dashboard, the job's driver log,
Ray's logs of every process in the head's session folder) before KubeRay deletes the cluster:
a day to look, while the GPU workers go at once."""
SUCCEEDED_CLUSTER_TTL_SECONDS = 60
"""A run that succeeded gives its whole cluster back a minute after it ends."""


def deletion_rules(keep_failed_seconds: int) -> list[dict[str, Any]]:
    """KubeRay's deletionRules (RayJobDeletionPolicy, beta and on since KubeRay 1.6) of a RayJob
    that brings its own cluster outside the queue: on success the cluster goes after a minute;
    on failure (the Ray job failed, or the RayJob did: a start deadline, a submission that
    failed) the GPU workers go at once and the head stays `keep_failed_seconds` for a
    post-mortem. KubeRay requires the TTLs to grow from workers to cluster, and refuses these
    rules with shutdownAfterJobFinishes, with a clusterSelector, or DeleteWorkers with
    autoscaling (ray-operator/controllers/ray/utils/validation.go)."""
    failed: list[dict[str, str]] = [{"jobStatus": "FAILED"}, {"jobDeploymentStatus": "Failed"}]
    rules: list[dict[str, Any]] = [
        {
            "policy": "DeleteCluster",
            "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": SUCCEEDED_CLUSTER_TTL_SECONDS},
        }
    ]
    for condition in failed:
        rules.append({"policy": "DeleteWorkers", "condition": {**condition, "ttlSeconds": 0}})
        rules.append(
            {
                "policy": "DeleteCluster",
                "condition": {**condition, "ttlSeconds": keep_failed_seconds},
            }
        )
    return rules


@dataclass(frozen=True)
class GrpoRun:
    """Everything that shapes one GRPO run, and its identity.

    A run is named `<job>-<run id>`. The run id defaults to a fingerprint of what the run is
    (image, config, model, steps, nodes, GPUs), so changing any of them starts a new run in new
    directories instead of resuming another run's checkpoints. Pinning the run id keeps the
    directories, so NeMo RL resumes from the newest checkpoint there; `attempt` makes a new
    RayJob for the same run (KubeRay never re-runs a finished RayJob).
    """

    image: str
    config: str
    model: str
    steps: int
    nodes: int
    gpus_per_node: int
    wandb: bool
    wandb_project: str
    job: str
    """Base name of the job (`ray.job.name`)."""
    runs_dir: str
    """Folder on the shared volume that holds every run's directory."""
    run_id: str | None = None
    """Pinned run id; None derives it from the run's definition."""
    attempt: int = 1
    rdma: bool = False
    """The GPU has RDMA NICs: the driver runs on an RDMA worker with the gIB environment."""
    tuner_config: str = ""
    """NCCL tuner file of the GPU (RDMA GPUs only)."""
    checkpoints: bool = True
    """Write (and resume from) checkpoints in the run's directory. The GRPO smoke runs without:
    a smoke run that resumed from an earlier one's last step would pass without training."""

    def fingerprint(self) -> str:
        """Short hash of what the run is (not of how it is logged)."""
        definition = json.dumps(
            [self.image, self.config, self.model, self.steps, self.nodes, self.gpus_per_node]
        )
        return hashlib.sha256(definition.encode()).hexdigest()[:RUN_ID_LENGTH]

    @property
    def id(self) -> str:
        """The run id: pinned, or the fingerprint."""
        return self.run_id or self.fingerprint()

    @property
    def name(self) -> str:
        """`<job>-<run id>`: names the run's directories and its W&B run."""
        return f"{self.job}-{self.id}"

    @property
    def rayjob_name(self) -> str:
        """The RayJob of this attempt (a new attempt is a new RayJob of the same run)."""
        return self.name if self.attempt == 1 else f"{self.name}-a{self.attempt}"

    @property
    def run_dir(self) -> str:
        """The run's own directory on the shared volume."""
        return f"{self.runs_dir.rstrip('/')}/{self.name}"

    @property
    def checkpoint_dir(self) -> str:
        """Where NeMo RL writes (and resumes from) checkpoints."""
        return f"{self.run_dir}/checkpoints"

    @property
    def log_dir(self) -> str:
        """Where NeMo RL writes its logs (instead of `logs` inside the container)."""
        return f"{self.run_dir}/logs"

    @property
    def gpus(self) -> int:
        """GPUs the run asks for: NeMo RL checks the cluster has this many before it starts."""
        return self.nodes * self.gpus_per_node

    @property
    def shape(self) -> RecipeShape | None:
        """The sizes of the run's recipe, when it is one this project knows."""
        return RECIPES.get(self.config)

    @property
    def epochs(self) -> int | None:
        """`grpo.max_num_epochs` that lets the run reach its steps (GSM8K's training rows over
        the recipe's prompts a step); None for a recipe of unknown sizes."""
        shape = self.shape
        return epochs_for(shape, DATASET_TRAIN_ROWS[DATASET], self.steps) if shape else None


def grpo_overrides(run: GrpoRun) -> list[str]:
    """The Hydra overrides the job passes to `run_grpo.py` (NeMo RL parses them in struct mode,
    so every key must exist in the config or be written `+key`)."""
    overrides = [
        f"policy.model_name={run.model}",
        f"cluster.num_nodes={run.nodes}",
        f"cluster.gpus_per_node={run.gpus_per_node}",
        f"grpo.max_num_steps={run.steps}",
        # The recipes stop after one epoch (116 steps on GSM8K at 64 prompts) whatever the
        # step count says: ask for the epochs the steps need.
        *([f"grpo.max_num_epochs={run.epochs}"] if run.epochs is not None else []),
        *(
            ["checkpointing.enabled=true", f"checkpointing.checkpoint_dir={run.checkpoint_dir}"]
            if run.checkpoints
            else ["checkpointing.enabled=false"]
        ),
        f"logger.log_dir={run.log_dir}",
        # NeMo RL initialises no logger by default: loss, reward and accuracy would only be
        # printed. TensorBoard writes them under the run's logs, on the shared volume.
        "logger.tensorboard_enabled=true",
        *gsm8k_overrides(run.image),
        f"logger.wandb_enabled={str(run.wandb).lower()}",
    ]
    if run.wandb:
        overrides += [
            f"logger.wandb.project={run.wandb_project}",
            f"logger.wandb.name={run.name}",
        ]
    return overrides


Step = str | tuple[str, str]
"""A setup step, or a step and what to tell the user when it fails."""


def fail_fast(steps: Sequence[Step]) -> str:
    """Steps joined with `&&`; a step that can fail says on stderr that it failed (assignments
    cannot), with its own advice where it has one. The chain's status is the one of its first
    failing step, and no later step runs; a caller that must not go on (a Ray pod, whose `ray
    start` KubeRay appends after a `;`) ends it with `|| exit 1`."""

    def guarded(step: Step) -> str:
        command, advice = step if isinstance(step, tuple) else (step, "")
        if command.startswith(("export ", "unset ")):
            return command
        said = f"nemo-rl-gke: setup step failed: {command}" + (f": {advice}" if advice else "")
        return f"{{ {command} || {{ echo {shlex.quote(said)} >&2; false; }}; }}"

    return " && ".join(guarded(step) for step in steps)


POD_INTERFACE = "eth0"
"""The pod network's interface in every Ray pod (the GPU NICs of the multi-network path are
eth1-eth9)."""


def socket_interface_steps() -> list[str]:
    """NCCL's bootstrap and Gloo's collectives on the pod network, as Google's NeMo RL sample
    sets them on A4 workers: left unset NCCL picks among all interfaces but `lo` and `docker*`
    and Gloo takes the hostname's address, either of which can be an RDMA or gVNIC NIC that
    the other pod cannot reach that way. Set after Google's script, so the platform's choice
    wins over whatever the script sets."""
    return [
        f"export NCCL_SOCKET_IFNAME={POD_INTERFACE}",
        f"export GLOO_SOCKET_IFNAME={POD_INTERFACE}",
    ]


def gib_setup_steps(tuner_config: str) -> list[str]:
    """What gives a process Google's gIB environment, as Google's NeMo RL sample does before
    `ray start`: the image's LD_LIBRARY_PATH is kept (the gIB and driver libraries go in front
    of it, never in its place); NCCL_NET=gIB before Google's script, as Google's A4 NCCL example
    does, so a gIB plugin that fails to load stops NCCL instead of degrading silently to another
    transport (cluster-toolkit examples/gke-a4/nccl-jobset-example.yaml); then the script on the
    node sets NCCL's gIB settings, then what the sample adds (GID index) and this GPU's tuner."""
    return [
        f"ldconfig {NVIDIA_DIR}/lib64",
        f"export LD_LIBRARY_PATH={GIB_DIR}/lib64:{NVIDIA_DIR}/lib64"
        "${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}",
        "export NCCL_NET=gIB",
        f"source {GIB_ENV_SCRIPT}",
        "export NCCL_IB_GID_INDEX=3",
        f"export NCCL_TUNER_CONFIG_PATH={GIB_DIR}/configs/{tuner_config}",
        *socket_interface_steps(),
    ]


def gpu_setup_steps() -> list[str]:
    """Driver libraries in front of the image's LD_LIBRARY_PATH, sockets on the pod network
    (GPUs without RDMA)."""
    return [
        f"export LD_LIBRARY_PATH={NVIDIA_DIR}/lib64${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}",
        *socket_interface_steps(),
    ]


def gib_shell_setup(tuner_config: str) -> str:
    """The gIB setup as one shell chain (the workers' and the gates' word for word)."""
    return fail_fast(gib_setup_steps(tuner_config))


def gpu_shell_setup() -> str:
    """The driver-library setup as one shell chain (GPUs without RDMA)."""
    return fail_fast(gpu_setup_steps())


NUMA_AFFINITY_FILE = "/tmp/nrl_gpu_cpu_affinity"
"""Where NeMo RL v0.7.0 reads each GPU's NUMA-local CPUs (`nemo_rl/distributed/numa_utils.py`,
GPU_CPU_AFFINITY_PATH); its Slurm launcher `ray.sub` writes it on every node before `ray start`,
and `bind_to_gpu_numa` skips silently when it is missing."""


NUMA_WARNING = "nemo-rl-gke: no GPU NUMA map from nvidia-smi topo -m; NeMo RL runs unpinned"


def numa_affinity_setup() -> str:
    """Write NeMo RL's GPU -> NUMA-local CPU list file on a GPU worker, as `ray.sub` does.

    The same source as ray.sub: the NUMA Affinity column of `nvidia-smi topo -m` (the field
    before the last, first entry of a list) and the node's CPU list from sysfs, one `gpu:cpus`
    line per GPU. Everything it needs is there on a GKE GPU worker: bash and awk in the image
    (Ubuntu based), `nvidia-smi` from the driver folder GKE mounts at /usr/local/nvidia for
    every GPU container (the RDMA workers mount it explicitly too), and /sys read-only in every
    container. NeMo RL pins CPUs with `sched_setaffinity` from this file; its memory binding
    also needs libnuma.so.1, which NeMo RL's Dockerfile does not install (it logs and goes on
    without). Best effort, like ray.sub: a node that cannot tell its topology starts anyway,
    with a warning, and NeMo RL runs unpinned.
    """
    awk = (
        '\'/^GPU[0-9]/ { gpu = substr($1, 4); numa = $(NF-1); sub(/[,-].*/, "", numa);'
        " if (numa ~ /^[0-9]+$/) print gpu, numa }'"
    )
    return (
        f"{{ {NVIDIA_DIR}/bin/nvidia-smi topo -m 2>/dev/null | awk {awk}"
        " | while read -r gpu numa; do"
        ' cpus=$(cat "/sys/devices/system/node/node$numa/cpulist" 2>/dev/null);'
        ' [ -n "$cpus" ] && echo "$gpu:$cpus";'
        f" done > {NUMA_AFFINITY_FILE};"
        f" [ -s {NUMA_AFFINITY_FILE} ] || echo"
        f" {shlex.quote(NUMA_WARNING)}"
        " >&2; true; }"
    )


DRIVER_CLEAN_ENV = ("CUDA_VISIBLE_DEVICES", "RAY_worker_niceness")
"""What Ray gives a job's driver that NeMo RL must not forward. With entrypoint resources (the
driver's place on an RDMA worker) Ray's job manager leaves RAY_worker_niceness=0 in the job's
runtime env and starts the supervisor with num_gpus=0, so the driver inherits
CUDA_VISIBLE_DEVICES="" (ray 2.55.1 `job_manager.py`, `job_supervisor.py`). NeMo RL's init_ray
passes its whole environment to `ray.init`: RAY_worker_niceness in both fails the merge with the
job's runtime env, and an actor started with CUDA_VISIBLE_DEVICES="" and num_gpus=1 dies in
Ray's GPU-id lookup (SOURCE.md, reproduced with Ray 2.55.1)."""


RAY_TOKEN_TEMPLATE = "/tmp/ray-auth-token.XXXXXX"  # noqa: S105 - a path, not a token
"""Where a driver keeps the dashboard's token (mktemp: mode 0600, in the container's own /tmp,
never under /tmp/ray, whose logs the log sidecar ships)."""


def ray_token_file() -> list[Step]:
    """The driver's Ray token as a file, and out of its environment.

    KubeRay 1.7's token mode gives every Ray container RAY_AUTH_TOKEN; NeMo RL copies the
    driver's whole environment into every actor's runtime env, which Ray 2.55.1's runtime-env
    agent writes into `runtime_env_agent.log` and the State API serves. The driver connects with
    RAY_AUTH_TOKEN_PATH instead (Ray reads either); workers keep the token their raylet was
    started with. Nothing to do where the cluster has no token."""
    return [
        (
            'if [ -n "${RAY_AUTH_TOKEN:-}" ]; then'
            f' export RAY_AUTH_TOKEN_PATH="$(mktemp {RAY_TOKEN_TEMPLATE})"'
            ' && printf %s "$RAY_AUTH_TOKEN" > "$RAY_AUTH_TOKEN_PATH"; fi',
            "the driver keeps the Ray token in a file of its container's /tmp",
        ),
        "unset RAY_AUTH_TOKEN",
    ]


TOKENS_DIR = "/var/run/secrets/nemo-rl-gke"
"""Where the Ray pods mount the token Secret as files (optional: the Secret may not exist)."""
TOKEN_ENV = ("HF_TOKEN", "WANDB_API_KEY")
"""The stack's tokens, by the names their libraries give them (keys of the token Secret)."""
WANDB_NETRC = "wandb-netrc"
"""Key of the token Secret holding the W&B key as a netrc entry (wandb reads the file NETRC
names when WANDB_API_KEY is unset)."""


def wandb_netrc(api_key: str) -> str:
    """The netrc entry wandb reads for api.wandb.ai (`wandb/sdk/lib/wbnetrc`)."""
    return f"machine api.wandb.ai\n  login user\n  password {api_key}\n"


def token_files() -> list[str]:
    """The driver names the Secret's files, never their values: NeMo RL copies the driver's
    whole environment into every actor's runtime env, which Ray's State API serves
    (`/api/v0/actors?detail=1`), so a token in the environment is readable by whoever reaches
    the dashboard. huggingface_hub reads its token from HF_TOKEN_PATH, wandb its key from the
    netrc file NETRC names. Files of a mounted Secret also follow the Secret in running pods
    (a token set after the RayCluster started reaches the next job)."""
    return [
        f"unset {' '.join(TOKEN_ENV)}",
        f"export HF_TOKEN_PATH={TOKENS_DIR}/HF_TOKEN",
        f"export NETRC={TOKENS_DIR}/{WANDB_NETRC}",
    ]


TOKEN_WAIT_SECONDS = 180
"""How long the driver waits for a token it needs to appear in the Secret's files. The kubelet
rewrites a mounted Secret's files on its sync loop, about a minute (sync period plus cache TTL)
after the Secret changed: a token set in the same `pulumi up` that starts the job is not there
yet when the job starts on pods that were already running."""


def tokens_needed(run: GrpoRun) -> list[str]:
    """The tokens (TOKEN_ENV names) the run cannot do without: HF_TOKEN for a gated model,
    WANDB_API_KEY with W&B on. The stack config requires their keys; the driver waits for them."""
    return [
        key
        for key, on in (("HF_TOKEN", model_is_gated(run.model)), ("WANDB_API_KEY", run.wandb))
        if on
    ]


def token_wait(run: GrpoRun) -> list[str]:
    """One step per token the run needs: wait up to TOKEN_WAIT_SECONDS for its file, then fail
    naming it."""
    tries = TOKEN_WAIT_SECONDS // 2
    files = {"HF_TOKEN": "HF_TOKEN", "WANDB_API_KEY": WANDB_NETRC}
    return [
        f'for _ in {{1..{tries}}}; do [ -s "{TOKENS_DIR}/{files[key]}" ] && break; sleep 2;'
        f' done; [ -s "{TOKENS_DIR}/{files[key]}" ]'
        for key in tokens_needed(run)
    ]


HUB_DATASET = "openai/gsm8k"
"""The Hub repository of the run's dataset (NeMo RL's `gsm8k` loads it, config `main`)."""
OFFLINE_ENV = ("HF_HUB_OFFLINE=1", "HF_DATASETS_OFFLINE=1")
"""After the downloads, nothing of the run calls the Hub: huggingface_hub and datasets read
these once, at import, so they are set before NeMo RL's Python starts, and NeMo RL forwards
them to every worker with the rest of the driver's environment."""


def model_download(model: str) -> str:
    """Put the policy model into the Hugging Face cache on /data once, before NeMo RL starts:
    otherwise every training and generation worker (16 on two B200 nodes) asks the Hub for the
    same files at once. `hf` is huggingface_hub's CLI, in the image's venv (NeMo RL v0.7.0's
    uv.lock pins huggingface-hub 1.14.0, which ships `hf`; `huggingface-cli` is gone since 1.0);
    it reads HF_HOME from the pod and its token from HF_TOKEN_PATH. Meta's repositories carry
    a second copy of the weights under original/ that transformers never reads."""
    return f"uv run hf download {shlex.quote(model)} --exclude 'original/*'"


WORKLOAD_DIR = Path(__file__).resolve().parents[1] / "workload"
"""What the platform runs inside NeMo RL's processes (workload/)."""
SITE_HOOK = "sitecustomize.py"
SITE_VARIABLE = "NEMO_RL_GKE_SITE"


def site_hook() -> str:
    """workload/sitecustomize.py: rank 0 alone writes a checkpoint's tokenizer."""
    return (WORKLOAD_DIR / SITE_HOOK).read_text(encoding="utf-8")


def site_dir(run: GrpoRun) -> str:
    """Where the driver puts the hook, on the shared volume: every worker's pod reads it."""
    return f"{run.run_dir}/.nemo-rl-gke/python"


def ship_file(variable: str, text: str, path: str) -> list[Step]:
    """Steps that write `text` to `path` from the command line itself (gzip, then base64,
    through a variable, so a failing step's message does not repeat it)."""
    encoded = base64.b64encode(gzip.compress(text.encode(), mtime=0)).decode()
    return [
        f"export {variable}={encoded}",
        f"mkdir -p {shlex.quote(str(PurePosixPath(path).parent))}",
        f'printf %s "${variable}" | base64 -d | gunzip > {shlex.quote(path)}',
        f"unset {variable}",
    ]


def tokenizer_guard_steps(run: GrpoRun) -> list[Step]:
    """The hook on the shared volume and first on PYTHONPATH: NeMo RL forwards the driver's
    environment to every worker, whose Python imports it at start-up (workload/)."""
    folder = site_dir(run)
    return [
        *ship_file(SITE_VARIABLE, site_hook(), f"{folder}/{SITE_HOOK}"),
        f"export PYTHONPATH={shlex.quote(folder)}${{PYTHONPATH:+:$PYTHONPATH}}",
    ]


def licence_advice(model: str) -> str:
    """What a failed download of a gated model most often means: the token's account has not
    accepted the model's licence (the Hub answers 403 for a token without access), or there is
    no token."""
    return (
        f"{model} is gated: the account of the stack's hfToken must have accepted its licence at"
        f" https://huggingface.co/{model} (pulumi config set --secret hfToken ...)"
    )


HUB_DATASET_CONFIG = "main"
"""The GSM8K configuration NeMo RL loads (`load_dataset("openai/gsm8k", "main")`)."""
DATASET_PREPARE = (
    f"from datasets import load_dataset; load_dataset({HUB_DATASET!r}, {HUB_DATASET_CONFIG!r})"
)
"""The one online load that leaves GSM8K where `datasets` finds it offline."""


def dataset_prepare() -> str:
    """Prepare GSM8K with `datasets` itself, online, into $HF_HOME/datasets on the shared volume.

    A Hub-cache copy (`hf download --repo-type dataset`) is not enough: for a Hub id, datasets
    4.8.5 (NeMo RL v0.7.0's lock) refuses in offline mode before it looks at the Hub cache, and
    its only offline fallback is a dataset it prepared itself under HF_DATASETS_CACHE
    (`load.py`, CachedDatasetModuleFactory). One online load here writes exactly that; NeMo
    RL's offline load then reads it (tests/planning/test_ray_dataset.py runs both)."""
    return f"uv run python -c {shlex.quote(DATASET_PREPARE)}"


SAVE_BY_VARIABLE = "NEMO_RL_GKE_CLEAR_UNTIL"
"""Set on a submitted run that has an expected length (tools/submit_run.py --hours): the Unix
time its workers' nodes are free of host maintenance until."""
SAVE_BY_MARGIN_SECONDS = 30 * 60
"""Kept before that time: NeMo RL's timer starts with its training loop, after the model load
and vLLM's start (minutes to a quarter of an hour on 8B), and the save itself takes minutes."""


def save_by_steps() -> list[Step]:
    """With SAVE_BY_VARIABLE set, NeMo RL's one-time save-and-stop before the window ends
    (`checkpointing.checkpoint_must_save_by`, DD:HH:MM:SS from the training loop's start: it
    saves when the next step would pass it, then stops), so the window's end never costs more
    than a save interval. A run that starts with less than the margin left stops at once."""
    left = f"$(( ${SAVE_BY_VARIABLE} - $(date +%s) - {SAVE_BY_MARGIN_SECONDS} ))"
    return [
        (
            f'if [ -n "${{{SAVE_BY_VARIABLE}:-}}" ]; then left={left} && [ "$left" -gt 0 ]'
            " && export NEMO_RL_GKE_SAVE_BY=checkpointing.checkpoint_must_save_by=$(printf"
            " '%02d:%02d:%02d:%02d' $((left / 86400)) $((left % 86400 / 3600))"
            " $((left % 3600 / 60)) $((left % 60))); fi",
            f"the run's maintenance-free window ({SAVE_BY_VARIABLE}) ends within"
            f" {SAVE_BY_MARGIN_SECONDS // 60} minutes: submit it again with its --hours",
        )
    ]


def grpo_script_text(run: GrpoRun) -> str:
    """The shell script of the job's driver: a clean environment, the tokens as files, the
    node's GPU setup, the model and the dataset in the shared cache, then NeMo RL's GRPO example
    with the Hub off."""
    setup = gib_setup_steps(run.tuner_config) if run.rdma else gpu_setup_steps()
    args = " ".join(shlex.quote(o) for o in grpo_overrides(run))
    steps = fail_fast(
        [
            f"unset {' '.join(DRIVER_CLEAN_ENV)}",
            *ray_token_file(),
            *token_wait(run),
            *token_files(),
            *setup,
            f"mkdir -p {shlex.quote(run.log_dir)}",
            # v0.7.0 writes a checkpoint's tokenizer from every rank at once; rank 0 alone does.
            *(tokenizer_guard_steps(run) if run.checkpoints else []),
            f"cd {NEMO_RL_DIR}",
            # The model's licence is checked here, before NeMo RL starts: the first file of a
            # gated model the token cannot read fails the download with the Hub's 403.
            (model_download(run.model), licence_advice(run.model))
            if model_is_gated(run.model)
            else model_download(run.model),
            dataset_prepare(),
            f"export {' '.join(OFFLINE_ENV)}",
            *save_by_steps(),
        ]
    )
    config = shlex.quote(run.config)
    # The driver's output is kept with the run (Ray keeps it in the pod's temporary folder,
    # lost with the pod). The script's status is the run's: pipefail, and a log that cannot be
    # written (tee still passes the output on) fails nothing.
    log = shlex.quote(driver_log(run))
    return (
        f"{steps} && set -o pipefail && uv run python {grpo_script(run.image)} --config {config}"
        f' {args} ${{NEMO_RL_GKE_SAVE_BY:+"$NEMO_RL_GKE_SAVE_BY"}}'
        f" 2>&1 | {{ tee -a {log} || true; }}"
    )


def driver_log(run: GrpoRun) -> str:
    """Where the driver's output goes, beside NeMo RL's own logs (appended per attempt)."""
    return f"{run.log_dir}/driver.log"


TENSORBOARD_PORT = 6006
TENSORBOARD_PID = "/tmp/nemo-rl-gke-tensorboard.pid"
TENSORBOARD_LOG = "/tmp/nemo-rl-gke-tensorboard.log"
TENSORBOARD_READY_SECONDS = 60


def curves_board_script() -> str:
    """What runs in the Ray head for the curves: TensorBoard over the folder given as $1, on
    the pod's loopback. One server at a time: the one an earlier call started (its process
    group, from the PID file) is stopped first, otherwise the new one cannot bind the port and
    the port-forward shows the old run. It returns once the new server listens, or fails with
    its log."""
    wait = TENSORBOARD_READY_SECONDS * 5
    return (
        f"if [ -s {TENSORBOARD_PID} ]; then old=$(cat {TENSORBOARD_PID});"
        ' kill -- "-$old" 2>/dev/null;'
        f' for _ in $(seq {wait}); do kill -0 -- "-$old" 2>/dev/null || break; sleep 0.2; done;'
        " fi;"
        f" cd {NEMO_RL_DIR} && : > {TENSORBOARD_LOG} &&"
        ' { setsid nohup uv run tensorboard --logdir "$1" --host 127.0.0.1'
        f" --port {TENSORBOARD_PORT} > {TENSORBOARD_LOG} 2>&1 < /dev/null &"
        f" echo $! > {TENSORBOARD_PID}; }};"
        f" for _ in $(seq {wait}); do grep -q 'at http://127.0.0.1:{TENSORBOARD_PORT}'"
        f' {TENSORBOARD_LOG} && exit 0; kill -0 "$(cat {TENSORBOARD_PID})" 2>/dev/null || break;'
        f" sleep 0.2; done; cat {TENSORBOARD_LOG} >&2; exit 1"
    )


def curves_command(namespace: str, cluster: str, run: GrpoRun) -> str:
    """TensorBoard over a run's logs (the stack's run, or RUN_LOGS), started on the Ray head
    (the image has it: NeMo RL's logger writes with it) on the pod's loopback only, reached
    through a port-forward: nothing is opened to the cluster."""
    head = f"ray.io/cluster={cluster},ray.io/node-type=head"
    return (
        f'RUN_LOGS="${{RUN_LOGS:-{run.log_dir}}}" && HEAD=$(kubectl -n {namespace} get pod -l'
        f" {head} -o name) && kubectl -n {namespace} exec"
        f' "$HEAD" -c ray-head -- bash -c {shlex.quote(curves_board_script())} curves'
        f' "$RUN_LOGS" && kubectl -n {namespace} port-forward "$HEAD"'
        f" {TENSORBOARD_PORT}:{TENSORBOARD_PORT}"
    )


def grpo_entrypoint(run: GrpoRun) -> str:
    """The RayJob entrypoint: the driver script under bash (`source` is not POSIX sh)."""
    return f"bash -c {shlex.quote(grpo_script_text(run))}"


DASHBOARD_PORT = 8265


def port_forward_command(namespace: str, service: str) -> str:
    """Reach the Ray dashboard on localhost:8265."""
    return f"kubectl -n {namespace} port-forward svc/{service} {DASHBOARD_PORT}:{DASHBOARD_PORT}"


OPERATOR_POD_LABELS = {"app.kubernetes.io/name": "kuberay-operator"}
"""The KubeRay chart's labels on its operator pod (nameOverride in its values)."""
RAY_POD_SELECTOR = {"matchExpressions": [{"key": "ray.io/node-type", "operator": "Exists"}]}
"""Every pod KubeRay makes for a Ray cluster (head and workers, any cluster of the namespace)."""


def dashboard_ingress(operator_namespace: str | None, smoke_labels: Mapping[str, str]) -> Any:
    """The NetworkPolicy spec over the Ray pods: every port among themselves; the dashboard
    (8265) only for the KubeRay operator and the smoke gate's pods. Without the operator's
    namespace (GKE's add-on) the dashboard port is open to the cluster, as its token guards it."""
    dashboard: dict[str, Any] = {"ports": [{"port": DASHBOARD_PORT, "protocol": "TCP"}]}
    if operator_namespace is not None:
        dashboard["from"] = [
            {
                "namespaceSelector": {
                    "matchLabels": {"kubernetes.io/metadata.name": operator_namespace}
                },
                "podSelector": {"matchLabels": dict(OPERATOR_POD_LABELS)},
            },
            {"podSelector": {"matchLabels": dict(smoke_labels)}},
        ]
    return {
        "podSelector": RAY_POD_SELECTOR,
        "policyTypes": ["Ingress"],
        "ingress": [{"from": [{"podSelector": RAY_POD_SELECTOR}]}, dashboard],
    }


DASHBOARD_TOKEN_KEY = "auth_token"  # noqa: S105 - a key name, not a token
"""The key of the token Secret KubeRay 1.7 generates for a RayCluster in token mode."""


def dashboard_token_command(namespace: str, cluster: str) -> str:
    """Print the Ray dashboard's token: with `authOptions.mode: token`, KubeRay 1.7 generates it
    into a Secret named after the RayCluster."""
    return (
        f"kubectl -n {namespace} get secret {cluster}"
        f" -o jsonpath='{{.data.{DASHBOARD_TOKEN_KEY}}}' | base64 -d"
    )


def submit_command(run: GrpoRun, token_command: str) -> str:
    """`ray job submit` of the same GRPO run through a dashboard port-forward.

    The dashboard asks for its token, which Ray's client sends when RAY_AUTH_MODE is `token`;
    the run's own tokens are not on the command line (the Ray pods read them from the
    Kubernetes Secret). On RDMA GPUs the driver asks for the gIB worker resource, as the RayJob
    does.
    """
    placement = (
        f" --entrypoint-resources {shlex.quote(json.dumps({GIB_RESOURCE: 1}))}" if run.rdma else ""
    )
    return (
        f'RAY_AUTH_MODE=token RAY_AUTH_TOKEN="$({token_command})"'
        f" ray job submit --address http://localhost:8265{placement}"
        f" -- bash -c {shlex.quote(grpo_script_text(run))}"
    )
