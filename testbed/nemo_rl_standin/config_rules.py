"""NeMo RL v0.7.0's config loading, written from its documented rules (SOURCE.md).

`nemo_rl/utils/config.py` loads a config with `OmegaConf.load`; a `defaults:` key (a string or
a list) names parent files beside the child, loaded depth-first and merged with `OmegaConf.merge`
(the child wins); a mapping carrying `_override_: true` replaces the parent's mapping instead of
merging into it. `parse_hydra_overrides` sets struct mode and applies the command line's
overrides with Hydra's own parser and config loader, so a key the config lacks fails unless
written `+key=value`. The tests and the NeMo RL stand-in both load configs this way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import DictConfig, OmegaConf


def _merge(parent: Any, child: Any) -> Any:
    """OmegaConf.merge on plain containers (mappings merge, the rest is replaced), except that
    a child mapping carrying `_override_: true` replaces the parent's mapping."""
    if isinstance(child, dict):
        if child.get("_override_") is True:
            return {k: _merge(None, v) for k, v in child.items() if k != "_override_"}
        if isinstance(parent, dict):
            merged = dict(parent)
            for key, value in child.items():
                merged[key] = _merge(parent.get(key), value)
            return merged
        return {k: _merge(None, v) for k, v in child.items()}
    return child


def _load_raw(path: Path) -> dict[str, Any]:
    loaded = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
    if not isinstance(loaded, dict):
        raise ValueError(f"{path} does not hold a mapping")
    raw: dict[str, Any] = {str(k): v for k, v in loaded.items()}
    defaults = raw.pop("defaults", None)
    if defaults is None:
        return raw
    base: dict[str, Any] = {}
    for parent in [defaults] if isinstance(defaults, str) else list(defaults):
        # Parents are resolved relative to the child's folder and loaded depth-first.
        base = _merge(base, _load_raw(path.parent / str(parent)))
    merged = _merge(base, raw)
    if not isinstance(merged, dict):
        raise ValueError(f"{path}: its defaults do not merge into a mapping")
    return merged


def load_config(path: Path) -> DictConfig:
    """A NeMo RL config with its `defaults:` chain resolved (the child wins)."""
    cfg = OmegaConf.create(_load_raw(path))
    if not isinstance(cfg, DictConfig):
        raise ValueError(f"{path} does not hold a mapping")
    return cfg


def apply_overrides(cfg: DictConfig, overrides: list[str]) -> DictConfig:
    """`parse_hydra_overrides`: struct mode, Hydra's parser, Hydra's config loader."""
    OmegaConf.set_struct(cfg, True)
    parsed = OverridesParser.create().parse_overrides(overrides=overrides)
    ConfigLoaderImpl._apply_overrides_to_config(parsed, cfg)
    return cfg
