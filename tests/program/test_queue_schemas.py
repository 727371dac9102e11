"""The program's Kueue objects against the CRDs of the pinned Kueue chart (v1beta2 schemas).

The CRDs are templates of the chart (../shared/charts/kueue-0.19.2/templates/crd, test data
found through NEMO_RL_GKE_SHARED); their schemas are plain YAML once the few Helm directive
lines are dropped. A clone without the shared data skips with the reason; `.ci/run` sets
NEMO_RL_GKE_REQUIRE_SHARED=1, turning that into a failure. The engine tests create the same
objects in a real API server with these CRDs, through Kueue's own webhooks.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from planning.versions import VERSIONS
from preflight.cli import Result
from tests.harness import REPO, run_stack, variant
from tests.program.test_ray_schemas import plain

SHARED = Path(os.environ.get("NEMO_RL_GKE_SHARED", str(REPO.parent / "shared")))
CRDS = SHARED / "charts" / f"kueue-{VERSIONS.kueue_chart.value}" / "templates" / "crd"
pytestmark = pytest.mark.skipif(
    not CRDS.exists() and os.environ.get("NEMO_RL_GKE_REQUIRE_SHARED") != "1",
    reason=f"the shared Kueue chart is not at {CRDS.parent.parent} (set NEMO_RL_GKE_SHARED)",
)


@functools.cache
def validator(plural: str) -> jsonschema.Draft7Validator:
    """The served v1beta2 schema of one Kueue CRD, with `additionalProperties: false` added
    where the schema lists properties, so a field the API server would prune fails here."""
    lines = (CRDS / f"kueue.x-k8s.io_{plural}.yaml").read_text().splitlines()
    spec = lines[lines.index("spec:") :]  # the licence comment and metadata hold the templating
    text = "\n".join(line for line in spec if not line.lstrip().startswith("{{"))
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    crd = yaml.load(text, Loader=loader)  # noqa: S506 - a safe loader
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1beta2"]
    assert version["served"]
    assert version["storage"]
    return jsonschema.Draft7Validator(_closed(version["schema"]["openAPIV3Schema"]))


def _closed(schema: Any) -> Any:
    if isinstance(schema, dict):
        closed = {k: _closed(v) for k, v in schema.items()}
        if isinstance(schema.get("pattern"), str) and schema["pattern"].startswith("^(?i)"):
            # Go's regexp takes an inline flag after the anchor; Python's only at the start.
            closed["pattern"] = "(?i)^" + schema["pattern"].removeprefix("^(?i)")
        if (
            "properties" in schema
            and "additionalProperties" not in schema
            and not schema.get("x-kubernetes-preserve-unknown-fields")
        ):
            closed["additionalProperties"] = False
        return closed
    if isinstance(schema, list):
        return [_closed(v) for v in schema]
    return schema


PLURALS = {
    "Topology": "topologies",
    "ResourceFlavor": "resourceflavors",
    "ClusterQueue": "clusterqueues",
    "LocalQueue": "localqueues",
    "AdmissionCheck": "admissionchecks",
    "ProvisioningRequestConfig": "provisioningrequestconfigs",
}


def kueue_manifests(result: Result) -> list[dict[str, Any]]:
    return [
        plain(r.inputs)
        for r in result.run.records
        if r.type.startswith("kubernetes:kueue.x-k8s.io/")
    ]


@pytest.fixture(scope="module")
def flex(tmp_path_factory: pytest.TempPathFactory) -> Result:
    gpu = {"type": "b200", "autoscaling": {"min": 0, "max": 4}, "capacity": "flex-start"}
    return run_stack(
        "b200", tmp_path_factory.mktemp("flex"), variant("b200", {"nemo-rl-gke:gpu": gpu})
    )


def test_every_kueue_object_matches_its_crd(b200: Result, h200: Result, flex: Result) -> None:
    kinds = set()
    for result in (b200, h200, flex):
        for obj in kueue_manifests(result):
            assert obj["apiVersion"] == "kueue.x-k8s.io/v1beta2"
            validator(PLURALS[obj["kind"]]).validate(
                {k: v for k, v in obj.items() if k != "metadata"}
            )
            kinds.add(obj["kind"])
    assert kinds == set(PLURALS)


def test_the_check_catches_cluster_toolkits_v1beta1_field(flex: Result) -> None:
    """Cluster Toolkit writes `spec.admissionChecks` into a v1beta2 ClusterQueue; the API server
    prunes it and the check never applies. The schema check refuses it."""
    (queue,) = [o for o in kueue_manifests(flex) if o["kind"] == "ClusterQueue"]
    spec = dict(queue["spec"])
    spec["admissionChecks"] = spec.pop("admissionChecksStrategy")["admissionChecks"]
    with pytest.raises(jsonschema.ValidationError, match="admissionChecks"):
        validator("clusterqueues").validate({"spec": spec})
