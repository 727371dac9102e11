"""The Managed Lustre instances that use a VPC's private services connection, kept across the
stand-in's processes.

Google refuses to delete a private services connection while a producer service still uses it:
"Failed to delete connection; Producer services (e.g. CloudSQL, Cloud Memstore, etc.) are still
using this connection." (pulumi/pulumi-gcp#3354); google-beta 7.45 sends `REMOVE_PEERING` as an
ordinary delete (shared reference day-two-facts.md section 5). The engine starts a stand-in per
command, so the instances it created are kept as files in the folder NEMO_RL_GKE_STANDIN_CLOUD
(unset: nothing is tracked and nothing refused). This proves the order the engine deletes in,
not how long Google keeps a deleted instance's producer attached.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

REFUSAL = (
    "Failed to delete connection; Producer services (e.g. CloudSQL, Cloud Memstore, etc.) are"
    " still using this connection."
)


def _folder() -> Path | None:
    folder = os.environ.get("NEMO_RL_GKE_STANDIN_CLOUD")
    return Path(folder) / "lustre-instances" if folder else None


def _file(folder: Path, resource_id: str) -> Path:
    return folder / f"{hashlib.sha256(resource_id.encode()).hexdigest()[:16]}.json"


def created(resource_id: str, network: str) -> None:
    """A Lustre instance now uses `network`'s private services connection."""
    folder = _folder()
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
        _file(folder, resource_id).write_text(json.dumps({"id": resource_id, "network": network}))


def deleted(resource_id: str) -> None:
    """The instance is gone."""
    folder = _folder()
    if folder is not None:
        _file(folder, resource_id).unlink(missing_ok=True)


def users(network: str) -> list[str]:
    """The instances still on `network` (their ids)."""
    folder = _folder()
    if folder is None or not folder.is_dir():
        return []
    found = [json.loads(f.read_text()) for f in sorted(folder.glob("*.json"))]
    return [str(f["id"]) for f in found if f.get("network") == network]
