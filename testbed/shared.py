"""Where the test bed finds the shared test data (charts, schemas, reference facts).

The data is never copied into the repository: NEMO_RL_GKE_SHARED names the folder, else the
`shared` folder beside this checkout (or /work/shared) is used.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def shared_dir() -> Path:
    """The shared test data folder: NEMO_RL_GKE_SHARED, or ../shared when it holds the data."""
    configured = os.environ.get("NEMO_RL_GKE_SHARED")
    if configured:
        return Path(configured)
    for candidate in (REPO.parent / "shared", Path("/work/shared")):
        if (candidate / "charts").exists():
            return candidate
    return REPO.parent / "shared"
