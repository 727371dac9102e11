"""Emitted Kubernetes objects against real schemas.

RayCluster and RayJob are validated against the openAPIV3Schema of the pinned KubeRay CRDs
(found through NEMO_RL_GKE_SCHEMAS, default ../shared/schemas/kuberay-1.7.0 beside the
repository). A clone without them skips these tests with the reason; `.ci/run` sets
NEMO_RL_GKE_REQUIRE_SCHEMAS=1, turning a missing folder into a failure. Core objects are
validated against Kubernetes 1.35's OpenAPI schemas bundled with `kubernetes-validate`.

Proof limit: schema-valid is not the same as accepted: admission webhooks, the KubeRay
operator's own validation and GKE's policies can still refuse an object.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from preflight.cli import Result
from pulumi_offline.config_values import SECRET_PLACEHOLDER
from tests.harness import REPO, run_stack, variant

SCHEMA_DIR = Path(
    os.environ.get("NEMO_RL_GKE_SCHEMAS", str(REPO.parent / "shared" / "schemas" / "kuberay-1.7.0"))
)
REQUIRED = os.environ.get("NEMO_RL_GKE_REQUIRE_SCHEMAS") == "1"
KUBERNETES_VERSION = "1.35.0"
CORE_API_VERSIONS = {"v1", "apps/v1", "batch/v1", "policy/v1", "rbac.authorization.k8s.io/v1"}


def crd_validator(kind_plural: str) -> jsonschema.Draft7Validator:
    """Validator for the CRD's served v1 schema (OpenAPI v3 ~ JSON Schema draft 4-7)."""
    path = SCHEMA_DIR / f"ray.io_{kind_plural}.yaml"
    if not path.exists():
        message = f"KubeRay CRD schemas not found at {SCHEMA_DIR} (set NEMO_RL_GKE_SCHEMAS)"
        if REQUIRED:
            pytest.fail(message)
        pytest.skip(message)
    return _load_crd_validator(path)


@functools.cache
def _load_crd_validator(path: Path) -> jsonschema.Draft7Validator:
    # The CRDs are 0.9-1.4 MB; libyaml parses them in a fraction of PyYAML's time.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    crd = yaml.load(path.read_text(), Loader=loader)  # noqa: S506 - a safe loader
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    return jsonschema.Draft7Validator(version["schema"]["openAPIV3Schema"])


def plain(value: Any) -> Any:
    """Wire form -> manifest form: integral floats back to ints."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def unmasked(record: Any) -> dict[str, Any]:
    """Inputs with every secret replaced by a same-shaped value holding no secret."""
    from preflight.recorder import SECRET_SIG, SIG_KEY

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            if value.get(SIG_KEY) == SECRET_SIG:
                return redact(value["value"])
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    def redact(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: redact(v) for k, v in value.items()}
        if isinstance(value, list):
            return [redact(v) for v in value]
        return "redacted" if isinstance(value, str) else value

    return plain(walk(record.raw_inputs))  # type: ignore[no-any-return]


def manifests(result: Result, api_version_prefix: str) -> list[dict[str, Any]]:
    return [
        plain(r.inputs)
        for r in result.run.records
        if r.type.startswith("kubernetes:")
        and r.inputs.get("apiVersion", "").startswith(api_version_prefix)
    ]


@pytest.fixture(scope="module")
def with_jobs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Result]:
    """Each stack with the RayJob enabled (b200/h200 train a gated model: token given)."""
    results = {}
    for stack in ("dev", "b200", "h200"):
        tmp = tmp_path_factory.mktemp(stack)
        changes: dict[str, Any] = {"nemo-rl-gke:ray": {"job": {"enabled": True}}}
        if stack != "dev":
            changes["nemo-rl-gke:hfToken"] = {"secure": "v1:ciphertext"}
        results[stack] = run_stack(stack, tmp, variant(stack, changes))
    return results


@pytest.mark.schema
@pytest.mark.parametrize("stack", ["dev", "b200", "h200"])
def test_raycluster_and_rayjob_match_the_kuberay_crds(
    stack: str, with_jobs: dict[str, Result]
) -> None:
    result = with_jobs[stack]
    objects = manifests(result, "ray.io/")
    kinds = sorted(o["kind"] for o in objects)
    assert kinds == ["RayCluster", "RayJob"]
    for obj in objects:
        crd_validator("rayclusters" if obj["kind"] == "RayCluster" else "rayjobs").validate(obj)


@pytest.mark.schema
def test_schema_check_rejects_a_broken_raycluster(with_jobs: dict[str, Result]) -> None:
    """The check can fail: a worker group without groupName is refused by the CRD."""
    (cluster,) = [o for o in manifests(with_jobs["b200"], "ray.io/") if o["kind"] == "RayCluster"]
    del cluster["spec"]["workerGroupSpecs"][0]["groupName"]
    with pytest.raises(jsonschema.ValidationError, match="groupName"):
        crd_validator("rayclusters").validate(cluster)


@pytest.mark.parametrize("stack", ["dev", "b200", "h200"])
def test_core_objects_match_kubernetes_openapi(stack: str, with_jobs: dict[str, Result]) -> None:
    result = with_jobs[stack]
    core = [
        unmasked(r)
        for r in result.run.records
        if r.type.startswith("kubernetes:") and r.inputs.get("apiVersion") in CORE_API_VERSIONS
    ]
    kinds = {o["kind"] for o in core}
    assert {
        "Namespace",
        "ServiceAccount",
        "PersistentVolume",
        "PersistentVolumeClaim",
        "PodDisruptionBudget",
    } <= kinds
    for obj in core:
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
    assert SECRET_PLACEHOLDER not in str(core)
    if stack != "dev":
        (secret,) = [o for o in core if o["kind"] == "Secret"]
        assert secret["stringData"] == {"HF_TOKEN": "redacted"}


def test_core_check_can_fail() -> None:
    bad = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "x"},
        "spec": {"accessModes": "RWX"},
    }
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, KUBERNETES_VERSION, strict=True)
