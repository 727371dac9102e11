"""Ray pods: the containers' folders and model cache, and a GPU worker's size."""

from __future__ import annotations

from dataclasses import dataclass

from planning.catalog import GpuProfile

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
