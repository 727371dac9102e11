"""The RayJob's driver script: setup steps (gIB, NUMA, tokens, data, model) and NeMo RL."""

from __future__ import annotations

import base64
import gzip
import shlex
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from planning.ray.image import grpo_script, model_is_gated
from planning.ray.pods import GIB_DIR, NEMO_RL_DIR, NVIDIA_DIR
from planning.ray.run import GIB_ENV_SCRIPT, GrpoRun, grpo_overrides

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


WORKLOAD_DIR = Path(__file__).resolve().parents[2] / "workload"
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


def grpo_entrypoint(run: GrpoRun) -> str:
    """The RayJob entrypoint: the driver script under bash (`source` is not POSIX sh)."""
    return f"bash -c {shlex.quote(grpo_script_text(run))}"
