"""Typed stack configuration: models by concern, the loader and its errors.

| Module | Config it judges |
|---|---|
| `gpu_pool` | `gpu`: GPU type, size, capacity, reservation |
| `network_plan` | `network`: the address plan and control-plane access |
| `storage` | `lustre`, `bucket` |
| `cluster` | `cluster`: version, system pool, maintenance |
| `ray_job` | `ray`: operator, RayCluster head, the GRPO job |
| `gates` | `verify`: the acceptance gates |
| `queue` | `kueue`: the job queue (Kueue, topology-aware scheduling) |
| `stack` | the whole stack and the rules that cross concerns |
"""

from stack_config.errors import ConfigProblem, InvalidStackConfig
from stack_config.gpu_pool import Autoscaling, GpuConfig
from stack_config.load import load_stack_config, secret_keys_present
from stack_config.network import AuthorizedNetwork, NetworkConfig
from stack_config.ray import RayConfig
from stack_config.secrets import SECRET_KEYS
from stack_config.stack import StackConfig
from stack_config.storage import LustreConfig

__all__ = [
    "SECRET_KEYS",
    "AuthorizedNetwork",
    "Autoscaling",
    "ConfigProblem",
    "GpuConfig",
    "InvalidStackConfig",
    "LustreConfig",
    "NetworkConfig",
    "RayConfig",
    "StackConfig",
    "load_stack_config",
    "secret_keys_present",
]
