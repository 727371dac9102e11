"""Typed stack configuration: models, loader and errors."""

from stack_config.errors import ConfigProblem, InvalidStackConfig
from stack_config.load import load_stack_config, secret_keys_present
from stack_config.models import (
    AuthorizedNetwork,
    Autoscaling,
    GpuConfig,
    LustreConfig,
    NetworkConfig,
    RayConfig,
    StackConfig,
)

__all__ = [
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
