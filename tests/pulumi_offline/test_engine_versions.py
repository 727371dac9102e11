"""The fake cloud's answer to getEngineVersions, shaped as pulumi-gcp's result type."""

from __future__ import annotations

from planning.resource_types import GET_ENGINE_VERSIONS
from pulumi_offline.fake_reservations import (
    PINNED_VERSIONS,
    CloudFixtures,
    EngineVersions,
    answer,
    assumed_versions,
)
from pulumi_offline.gcp_types import result_type
from pulumi_offline.sdk_results import fields


def test_the_answer_lists_newest_first_and_filters_by_prefix() -> None:
    fixtures = CloudFixtures.model_validate(
        {
            "engineVersions": {
                "validMasterVersions": ["1.35.8-gke.1036000", "1.36.2-gke.1000", "1.35.10-gke.5"],
                "validNodeVersions": ["1.35.8-gke.1036000"],
                "channelLatest": {"REGULAR": "1.36.2-gke.1000"},
            }
        }
    )
    found = answer(fixtures, GET_ENGINE_VERSIONS, {"location": "us-central1"}, "p")
    assert found["validMasterVersions"] == [
        "1.36.2-gke.1000",
        "1.35.10-gke.5",
        "1.35.8-gke.1036000",
    ]
    assert found["releaseChannelLatestVersion"] == {"REGULAR": "1.36.2-gke.1000"}
    assert found["latestMasterVersion"] == "1.36.2-gke.1000"
    assert found["project"] == "p"
    narrowed = answer(fixtures, GET_ENGINE_VERSIONS, {"versionPrefix": "1.35."}, "p")
    assert narrowed["validMasterVersions"] == ["1.35.10-gke.5", "1.35.8-gke.1036000"]
    # Every field of the SDK's result type is there, as a real answer has it.
    assert set(found) == set(fields(result_type(GET_ENGINE_VERSIONS)))


def test_without_a_description_only_the_pinned_version_is_offered() -> None:
    found = answer(CloudFixtures(), GET_ENGINE_VERSIONS, {"location": "r"}, "p")
    assert found["validMasterVersions"] == list(PINNED_VERSIONS.valid_master)


def test_preflight_assumes_what_the_stack_asks_for() -> None:
    assumed = assumed_versions("REGULAR", "1.36", ("1.36.2-gke.1000", None))
    assert isinstance(assumed, EngineVersions)
    assert "1.36.0-gke.0" in assumed.valid_master
    assert "1.36.2-gke.1000" in assumed.valid_node
    assert assumed_versions("REGULAR", "1.36.2-gke.7", ()).valid_master[-1] == "1.36.2-gke.7"


def test_reading_a_result_type_first_leaves_the_sdk_function_callable() -> None:
    """pulumi_gcp loads its modules lazily: a fake that reads an invoke's result type before
    the program touched `gcp.container` must not leave `gcp.container.get_cluster` bound to
    its module (the program's read then failed with "'module' object is not callable")."""
    import subprocess
    import sys

    script = (
        "from pulumi_offline.gcp_types import result_type\n"
        "result_type('gcp:container/getCluster:getCluster')\n"
        "result_type('gcp:container/getEngineVersions:getEngineVersions')\n"
        "import pulumi_gcp as gcp\n"
        "print(callable(gcp.container.get_cluster), callable(gcp.container.get_engine_versions))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.split() == ["True", "True"]
