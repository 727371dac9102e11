"""tools/checkov/scan.py: the reviewed skips land on the right objects, and the scan can fail.

The checkov run itself needs checkov in its own virtualenv (`make scan` creates
.tools/checkov); without it those tests skip and say so. `.ci/run` runs `make scan` first.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
CHECKOV = Path(os.environ.get("NEMO_RL_GKE_CHECKOV", REPO / ".tools/checkov/bin/checkov"))


def load_scan() -> ModuleType:
    """The scan script as a module (tools/ is not a package)."""
    spec = importlib.util.spec_from_file_location("checkov_scan", REPO / "tools/checkov/scan.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


scan = load_scan()


@pytest.fixture(scope="module")
def b200_manifests(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """b200's objects as `python -m preflight --manifests` writes them."""
    folder = tmp_path_factory.mktemp("b200")
    scan.render("b200", folder)
    return folder


def annotations_of(folder: Path, kind: str, name: str) -> dict[str, str]:
    """The annotations of the rendered object kind/name."""
    for path in folder.glob("*.yaml"):
        obj = yaml.safe_load(path.read_text(encoding="utf-8"))
        if obj["kind"] == kind and obj["metadata"]["name"] == name:
            found: dict[str, str] = obj["metadata"].get("annotations", {})
            return found
    raise AssertionError(f"{kind}/{name} not rendered")


def test_skips_become_annotations_on_their_objects_only(
    b200_manifests: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "copy"
    folder.mkdir()
    for path in b200_manifests.glob("*.yaml"):
        (folder / path.name).write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    placed = scan.annotate("b200", folder)
    assert ("Pod/nemo-rl-head", "CKV_K8S_43") in placed
    # The head keeps its token only where it autoscales (dev); b200 carries no such skip.
    assert ("Pod/nemo-rl-head", "CKV_K8S_38") not in placed
    installer = annotations_of(folder, "DaemonSet", "nccl-rdma-installer")
    skipped = {value.split("=", 1)[0] for key, value in installer.items() if "checkov" in key}
    assert {"CKV_K8S_16", "CKV_K8S_43"} <= skipped
    assert not [
        k for k in annotations_of(folder, "NetworkPolicy", "nemo-rl-ingress") if "checkov" in k
    ]


def test_a_skip_for_an_object_that_is_not_there_fails(b200_manifests: Path, tmp_path: Path) -> None:
    skips = tmp_path / "skips.yaml"
    skips.write_text(
        yaml.safe_dump([{"object": "Deployment/gone", "why": "x", "checks": ["CKV_K8S_8"]}]),
        encoding="utf-8",
    )
    with pytest.raises(SystemExit, match="Deployment/gone matches nothing in b200"):
        scan.annotate("b200", b200_manifests, skips)


needs_checkov = pytest.mark.skipif(
    not CHECKOV.exists(), reason=f"checkov not installed at {CHECKOV}; run `make scan` once"
)


@needs_checkov
def test_a_missing_skip_and_an_unused_one_both_fail_the_scan(tmp_path: Path) -> None:
    # One checkov run for both (each run takes seconds); `make scan` checks the clean case.
    entries = yaml.safe_load(scan.SKIPS.read_text(encoding="utf-8"))
    kept = [e for e in entries if "CKV_K8S_43" not in e["checks"]]
    kept.append({"object": "Namespace/nemo-rl", "why": "x", "checks": ["CKV_K8S_21"]})
    skips = tmp_path / "skips.yaml"
    skips.write_text(yaml.safe_dump(kept), encoding="utf-8")
    counts, problems = scan.scan(str(CHECKOV), "b200", skips)
    assert counts["failed"] >= 3
    assert counts["passed"] > 100
    assert any("CKV_K8S_43" in p and "nemo-rl-head" in p for p in problems)
    assert "b200: the skip of CKV_K8S_21 on Namespace/nemo-rl was not used; remove it" in problems
