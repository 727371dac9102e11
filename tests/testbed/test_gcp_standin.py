"""The engine test bed's stand-in GCP provider: what it refuses, and what it answers.

It checks inputs against pulumi-gcp 10.2.0's own generated types (not a list of ours), so
these tests use real resource tokens and the exact wire names the SDK declares.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from pulumi.provider.experimental import provider as p
from pulumi.provider.experimental.property_value import Computed, PropertyValue
from pulumi.runtime import proto

from planning.resource_types import (
    CLUSTER,
    GET_CLUSTER,
    GET_PROJECT,
    GET_RESERVATION,
    GET_RESERVATION_BLOCK,
    LUSTRE,
    NETWORK,
    NODE_POOL,
    PSA_CONNECTION,
    SUBNETWORK,
)
from pulumi_offline import gcp_types as types_model
from testbed.gcp_standin import replace_facts
from testbed.gcp_standin.provider import UNKNOWN, GcpStandIn, _Servicer, plain, wrap

REPO = Path(__file__).resolve().parents[2]


def urn(token: str, name: str) -> str:
    return f"urn:pulumi:test::nemo-rl-gke::{token}::{name}"


def props(value: Mapping[str, Any]) -> dict[str, PropertyValue]:
    return {k: wrap(v) for k, v in value.items()}


def check(token: str, inputs: Mapping[str, Any]) -> list[tuple[str, str]]:
    response = asyncio.run(
        GcpStandIn().check(p.CheckRequest(urn(token, "x"), {}, props(inputs), b""))
    )
    return [(f.property, f.reason) for f in response.failures or []]


def test_every_program_resource_type_is_known_to_the_sdk() -> None:
    tokens = types_model.known_tokens()
    assert len(tokens) > 1000  # the SDK's own registry, not a hand-made list
    for token in (NETWORK, SUBNETWORK, CLUSTER, NODE_POOL, LUSTRE):
        assert token in tokens


def test_valid_inputs_pass() -> None:
    assert check(SUBNETWORK, {"network": "net", "ipCidrRange": "10.0.0.0/24", "region": "r"}) == []
    assert (
        check(
            NODE_POOL,
            {
                "cluster": "c",
                "nodeCount": 2.0,
                "nodeConfig": {
                    "machineType": "a4-highgpu-8g",
                    "guestAccelerators": [{"type": "nvidia-b200", "count": 8.0}],
                    "labels": {"a": "b"},
                },
            },
        )
        == []
    )


@pytest.mark.parametrize(
    ("token", "inputs", "where", "reason"),
    [
        (SUBNETWORK, {"ipCidrRange": "10.0.0.0/24"}, "network", "missing required property"),
        (
            SUBNETWORK,
            {"network": "n", "ipCidrRnage": "10.0.0.0/24"},
            "ipCidrRnage",
            "unknown property",
        ),
        (SUBNETWORK, {"network": "n", "ipCidrRange": 10.0}, "ipCidrRange", "expected a string"),
        (NETWORK, {"mtu": "8896"}, "mtu", "expected an integer"),
        (NETWORK, {"mtu": 88.5}, "mtu", "expected an integer"),
        (
            NETWORK,
            {"autoCreateSubnetworks": "false"},
            "autoCreateSubnetworks",
            "expected a boolean",
        ),
        (
            CLUSTER,
            {"privateClusterConfig": {"enablePrivateNodes": True, "enablePrivateNode": True}},
            "privateClusterConfig.enablePrivateNode",
            "unknown property",
        ),
        (CLUSTER, {"nodeLocations": "us-central1-b"}, "nodeLocations", "expected a list"),
        (CLUSTER, {"resourceLabels": ["a"]}, "resourceLabels", "expected a map"),
        (
            NODE_POOL,
            {"cluster": "c", "nodeConfig": {"guestAccelerators": [{"count": 8.0}]}},
            "nodeConfig.guestAccelerators[0].type",
            "missing required property",
        ),
        ("gcp:compute/noSuch:Thing", {}, "", "defines no resource type"),
    ],
)
def test_inputs_a_provider_refuses_are_refused(
    token: str, inputs: dict[str, Any], where: str, reason: str
) -> None:
    failures = check(token, inputs)
    assert any(f == where and reason in r for f, r in failures), failures


def test_unknown_values_are_not_judged_until_known() -> None:
    inputs = {"network": PropertyValue(Computed()), "ipCidrRange": PropertyValue(Computed())}
    response = asyncio.run(
        GcpStandIn().check(p.CheckRequest(urn(SUBNETWORK, "x"), {}, inputs, b""))
    )
    assert not response.failures


def configured() -> GcpStandIn:
    standin = GcpStandIn()
    variables = {"gcp:config:project": "proj-123456", "gcp:config:region": "us-central1"}
    asyncio.run(standin.configure(p.ConfigureRequest(variables, {}, True, True)))
    return standin


def test_create_returns_what_the_cloud_computes_and_keeps_secrets() -> None:
    standin = configured()
    inputs = props({"name": "net-a", "mtu": 8896.0})
    inputs["description"] = PropertyValue("hidden", is_secret=True)
    created = asyncio.run(standin.create(p.CreateRequest(urn(NETWORK, "net"), inputs, 60, False)))
    assert created.resource_id == "projects/proj-123456/global/networks/net-a"
    assert plain(created.properties["selfLink"]).endswith(
        "/projects/proj-123456/global/networks/net-a"
    )
    assert created.properties["description"].is_secret
    for key in created.properties:
        assert key in types_model.output_names(NETWORK)


def test_a_cluster_gets_the_endpoint_and_ca_of_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ca = tmp_path / "ca.crt"
    ca.write_bytes(b"-----BEGIN CERTIFICATE-----\nlocal\n-----END CERTIFICATE-----\n")
    monkeypatch.setenv("NEMO_RL_GKE_STANDIN_ENDPOINT", "127.0.0.1:6443")
    monkeypatch.setenv("NEMO_RL_GKE_STANDIN_CA_FILE", str(ca))
    standin = configured()
    inputs = props(
        {
            "name": "c",
            "location": "us-central1",
            "masterAuth": {"clientCertificateConfig": {"issueClientCertificate": False}},
        }
    )
    created = asyncio.run(standin.create(p.CreateRequest(urn(CLUSTER, "c"), inputs, 60, False)))
    out = plain(created.properties["masterAuth"])
    assert plain(created.properties["endpoint"]) == "127.0.0.1:6443"
    assert out["clientCertificateConfig"] == {"issueClientCertificate": False}
    import base64

    assert base64.b64decode(out["clusterCaCertificate"]) == ca.read_bytes()


def test_during_preview_computed_outputs_are_unknown_and_inputs_known() -> None:
    standin = configured()
    created = asyncio.run(
        standin.create(p.CreateRequest(urn(NETWORK, "net"), props({"name": "n"}), 60, True))
    )
    assert created.resource_id is None
    assert plain(created.properties["selfLink"]) == UNKNOWN
    assert plain(created.properties["name"]) == "n"


def test_invokes_answer_every_field_of_the_sdk_result_and_check_arguments() -> None:
    standin = configured()
    token = GET_PROJECT
    answer = asyncio.run(
        standin.invoke(p.InvokeRequest(token, props({"projectId": "proj-123456"})))
    )
    result = {k: plain(v) for k, v in (answer.return_value or {}).items()}
    assert set(result) == types_model.result_names(types_model.function_signature(token).result)
    assert result["projectId"] == "proj-123456"
    assert result["number"].isdigit()
    bad = asyncio.run(standin.invoke(p.InvokeRequest(token, props({"projectID": "x"}))))
    assert [f.property for f in bad.failures] == ["projectID"]


def test_the_plugin_announces_itself_as_a_stand_in_and_serves_a_port(tmp_path: Path) -> None:
    log = tmp_path / "standin.log"
    env = {**os.environ, "PYTHONPATH": str(REPO), "NEMO_RL_GKE_STANDIN_LOG": str(log)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "testbed.gcp_standin", "127.0.0.1:1"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        port = proc.stdout.readline().strip()
        assert port.isdigit()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert "gcp stand-in: serving on 127.0.0.1:" in log.read_text()


# --- planning like the real provider (the shared table of what it replaces on) -------------

FACTS_TABLE = replace_facts.table_path()
needs_facts = pytest.mark.skipif(
    not FACTS_TABLE.is_file(),
    reason=f"the shared replacement facts are not at {FACTS_TABLE} (set NEMO_RL_GKE_SHARED)",
)


def diff(token: str, olds: Mapping[str, Any], news: Mapping[str, Any]) -> Any:
    """The stand-in's Diff over the wire types, as the engine calls it."""
    servicer = _Servicer(["127.0.0.1:1"], "10.2.0", GcpStandIn(), "127.0.0.1:1")
    request = proto.DiffRequest(
        urn=urn(token, "x"),
        id="some-id",
        old_inputs=PropertyValue.marshal_map(props(olds)),
        olds=PropertyValue.marshal_map(props(olds)),
        news=PropertyValue.marshal_map(props(news)),
    )
    return asyncio.run(servicer.Diff(request, None))


GPU_POOL: dict[str, Any] = {
    "name": "gpu-b200",
    "cluster": "projects/p/locations/us-central1/clusters/c",
    "nodeCount": 2.0,
    "nodeConfig": {
        "machineType": "a4-highgpu-8g",
        "guestAccelerators": [
            {
                "type": "nvidia-b200",
                "count": 8.0,
                "gpuDriverInstallationConfig": {"gpuDriverVersion": "LATEST"},
            }
        ],
        "reservationAffinity": {
            "consumeReservationType": "SPECIFIC_RESERVATION",
            "key": "compute.googleapis.com/reservation-name",
            "values": ["res-a"],
        },
    },
    "networkConfig": {"additionalNodeNetworkConfigs": [{"network": "n", "subnetwork": "s"}]},
}


def with_pool(edit: Any) -> dict[str, Any]:
    import copy

    pool = copy.deepcopy(GPU_POOL)
    edit(pool)
    return pool


@needs_facts
def test_a_driver_change_replaces_the_pool_reported_as_the_bridge_does() -> None:
    accel = "nodeConfig.guestAccelerators[0].gpuDriverInstallationConfig.gpuDriverVersion"
    news = with_pool(
        lambda p: p["nodeConfig"]["guestAccelerators"][0]["gpuDriverInstallationConfig"].update(
            gpuDriverVersion="DEFAULT"
        )
    )
    response = diff(NODE_POOL, GPU_POOL, news)
    assert response.changes == proto.DiffResponse.DIFF_SOME
    assert list(response.replaces) == ["nodeConfig"]  # top-level, as the bridge cuts it
    assert list(response.detailedDiff) == [accel]
    assert response.detailedDiff[accel].kind == proto.PropertyDiff.UPDATE_REPLACE
    # The program names the pool, so the bridge deletes the old one first.
    assert response.deleteBeforeReplace


@needs_facts
def test_a_pool_size_change_is_in_place() -> None:
    response = diff(NODE_POOL, GPU_POOL, with_pool(lambda p: p.update(nodeCount=3.0)))
    assert list(response.replaces) == []
    assert response.detailedDiff["nodeCount"].kind == proto.PropertyDiff.UPDATE
    assert not response.deleteBeforeReplace


@needs_facts
def test_an_unknown_network_name_replaces_the_pool() -> None:
    """What the engine sends when the RDMA network is being recreated delete-first."""
    unknown = with_pool(
        lambda p: p["networkConfig"]["additionalNodeNetworkConfigs"][0].update(network=UNKNOWN)
    )
    response = diff(NODE_POOL, GPU_POOL, unknown)
    assert list(response.replaces) == ["networkConfig"]


@needs_facts
def test_lustre_throughput_replaces_create_first_and_capacity_is_in_place() -> None:
    old = {"instanceId": "i", "location": "z", "capacityGib": "18000"}
    old["perUnitStorageThroughput"] = "500"
    faster = diff(LUSTRE, old, {**old, "perUnitStorageThroughput": "1000"})
    assert list(faster.replaces) == ["perUnitStorageThroughput"]
    assert not faster.deleteBeforeReplace
    bigger = diff(LUSTRE, old, {**old, "capacityGib": "36000"})
    assert list(bigger.replaces) == []
    assert bigger.changes == proto.DiffResponse.DIFF_SOME


@needs_facts
def test_a_subnet_that_moves_is_replaced_through_meta_and_one_that_grows_is_not() -> None:
    old = {"name": "s", "network": "n", "ipCidrRange": "10.0.0.0/24"}
    moved = diff(SUBNETWORK, old, {**old, "ipCidrRange": "10.0.8.0/24"})
    assert list(moved.replaces) == ["__meta"]
    assert moved.deleteBeforeReplace
    grown = diff(SUBNETWORK, old, {**old, "ipCidrRange": "10.0.0.0/22"})
    assert list(grown.replaces) == []


@needs_facts
def test_check_adds_the_provider_defaults_policies_rely_on() -> None:
    inputs = props({"name": "c", "location": "us-central1", "ipAllocationPolicy": {}})
    inputs["description"] = PropertyValue("hidden", is_secret=True)
    response = asyncio.run(GcpStandIn().check(p.CheckRequest(urn(CLUSTER, "c"), {}, inputs, b"")))
    assert not response.failures
    checked = response.inputs or {}
    assert plain(checked["deletionProtection"]) is True
    assert plain(checked["enableShieldedNodes"]) is True
    assert plain(checked["ipAllocationPolicy"]) == {"stackType": "IPV4"}
    assert sorted(plain(checked["__defaults"])) == [
        "deletionProtection",
        "enableShieldedNodes",
        "network",
    ]
    assert checked["description"].is_secret
    # Falsy defaults are not added (bridge #3398); values the program set stay.
    given = props({"name": "c", "deletionProtection": False})
    kept = asyncio.run(GcpStandIn().check(p.CheckRequest(urn(CLUSTER, "c"), {}, given, b"")))
    assert plain((kept.inputs or {})["deletionProtection"]) is False
    assert "enableLegacyAbac" not in (kept.inputs or {})


def test_a_preview_leaves_every_output_the_cloud_fills_unknown() -> None:
    standin = configured()
    inputs = props({"name": "gpu", "cluster": "c", "nodeCount": 2.0})
    created = asyncio.run(standin.create(p.CreateRequest(urn(NODE_POOL, "p"), inputs, 60, True)))
    outputs = {k: plain(v) for k, v in created.properties.items()}
    assert outputs["nodeCount"] == 2.0
    assert outputs["project"] == "proj-123456"  # the plan knows the provider's project
    assert outputs["deletionPolicy"] == "DELETE"
    for key in ("initialNodeCount", "networkConfig", "nodeConfig", "version", "instanceGroupUrls"):
        assert outputs[key] == UNKNOWN, key
    assert set(outputs) == set(types_model.always_set_outputs(NODE_POOL))


def test_a_create_fills_every_output_the_cloud_fills_with_a_stand_in_value() -> None:
    standin = configured()
    inputs = props({"name": "gpu", "cluster": "c", "nodeCount": 2.0})
    created = asyncio.run(standin.create(p.CreateRequest(urn(NODE_POOL, "p"), inputs, 60, False)))
    outputs = {k: plain(v) for k, v in created.properties.items()}
    assert UNKNOWN not in outputs.values()
    assert outputs["version"] == "stand-in"
    assert set(outputs) >= set(types_model.always_set_outputs(NODE_POOL))


def test_without_the_shared_table_the_stand_in_refuses_to_plan(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("NEMO_RL_GKE_SHARED", str(tmp_path))
    replace_facts.load.cache_clear()
    try:
        with pytest.raises(replace_facts.FactsMissingError, match="NEMO_RL_GKE_SHARED"):
            replace_facts.load()
    finally:
        replace_facts.load.cache_clear()


@pytest.mark.parametrize("stack", ["dev", "b200", "h200"])
def test_every_gcp_resource_of_the_committed_stacks_passes_the_stand_in_s_check(
    stack: str,
) -> None:
    """The inputs the program sends, checked against pulumi-gcp 10.2.0's own types without the
    engine: a misspelt input (say `dnsEndpointConfig.allowExternalTrafic`) fails here first."""
    from tests.conftest import committed

    records = [r for r in committed(stack).run.records if r.custom and r.type.startswith("gcp:")]
    assert len(records) > 20
    for record in records:
        inputs = PropertyValue.unmarshal_map(record.object)
        response = asyncio.run(
            GcpStandIn().check(p.CheckRequest(urn(record.type, record.name), {}, inputs, b""))
        )
        assert response.failures in (None, []), (record.name, response.failures)


DNS_CLUSTER = {
    "name": "c",
    "location": "us-central1",
    "controlPlaneEndpointsConfig": {"dnsEndpointConfig": {"allowExternalTraffic": True}},
}
"""A cluster's inputs with GKE's DNS-based endpoint, as the program sets them."""


def test_a_cluster_s_dns_endpoint_is_the_local_api_server_by_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """In the test bed the DNS name is `localhost` (in the API server's certificate); a
    refresh reads it as it is now, like the IP endpoint."""
    monkeypatch.setenv("NEMO_RL_GKE_STANDIN_ENDPOINT", "127.0.0.1:6443")
    standin = configured()
    inputs = props(DNS_CLUSTER)
    created = asyncio.run(standin.create(p.CreateRequest(urn(CLUSTER, "c"), inputs, 60, False)))
    assert plain(created.properties["controlPlaneEndpointsConfig"]) == {
        "dnsEndpointConfig": {"allowExternalTraffic": True, "endpoint": "localhost:6443"}
    }
    monkeypatch.setenv("NEMO_RL_GKE_STANDIN_ENDPOINT", "127.0.0.1:7443")
    read = asyncio.run(
        standin.read(p.ReadRequest(urn(CLUSTER, "c"), "id", created.properties, inputs))
    )
    assert plain(read.properties["controlPlaneEndpointsConfig"])["dnsEndpointConfig"] == {
        "allowExternalTraffic": True,
        "endpoint": "localhost:7443",
    }


def test_a_preview_leaves_the_dns_endpoint_name_unknown_on_create_and_as_it_was_on_update(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The DNS name is computed inside a block the program sets: a create's preview must not
    show it known and empty (the Kubernetes provider then fails on the server `https://`), and
    an update's preview keeps the name the cluster has."""
    monkeypatch.setenv("NEMO_RL_GKE_STANDIN_ENDPOINT", "127.0.0.1:6443")
    standin = configured()
    inputs = props(DNS_CLUSTER)
    planned = asyncio.run(standin.create(p.CreateRequest(urn(CLUSTER, "c"), inputs, 60, True)))
    assert plain(planned.properties["controlPlaneEndpointsConfig"]) == {
        "dnsEndpointConfig": {"allowExternalTraffic": True, "endpoint": UNKNOWN}
    }
    created = asyncio.run(standin.create(p.CreateRequest(urn(CLUSTER, "c"), inputs, 60, False)))
    update = p.UpdateRequest(urn(CLUSTER, "c"), "id", created.properties, inputs, 60, [], True)
    updated = asyncio.run(standin.update(update))
    assert plain(updated.properties["controlPlaneEndpointsConfig"]) == {
        "dnsEndpointConfig": {"allowExternalTraffic": True, "endpoint": "localhost:6443"}
    }


def test_reservation_reads_answer_from_the_description_or_fail_as_a_404(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    description = tmp_path / "r.json"
    description.write_text(
        '{"reservations": [{"name": "res-a", "zone": "us-central1-b",'
        ' "machineType": "a4-highgpu-8g", "accelerators": [{"type": "nvidia-b200", "count": 8}],'
        ' "count": 4, "inUse": 1, "blocks": [{"name": "b1", "count": 4, "inUse": 1}]}]}'
    )
    monkeypatch.setenv("NEMO_RL_GKE_STANDIN_RESERVATIONS", str(description))
    standin = configured()
    for token, args, checks in (
        (
            GET_RESERVATION,
            {"name": "res-a", "zone": "us-central1-b"},
            {"name": "res-a"},
        ),
        (
            GET_RESERVATION_BLOCK,
            {"name": "b1", "reservation": "res-a", "zone": "us-central1-b"},
            {"blockCount": 4, "inUseCount": 1},
        ),
    ):
        answer = asyncio.run(standin.invoke(p.InvokeRequest(token, props(args))))
        result = {k: plain(v) for k, v in (answer.return_value or {}).items()}
        assert set(result) == types_model.result_names(types_model.function_signature(token).result)
        for key, value in checks.items():
            assert result[key] == value
    missing = asyncio.run(
        standin.invoke(
            p.InvokeRequest(
                GET_RESERVATION,
                props({"name": "res-a", "zone": "us-central1-c"}),
            )
        )
    )
    assert missing.return_value is None
    assert [f.reason for f in missing.failures] == [
        "googleapi: Error 404: The resource 'projects/proj-123456/zones/us-central1-c/"
        "reservations/res-a' was not found, notFound"
    ]
    cluster = asyncio.run(
        standin.invoke(
            p.InvokeRequest(
                GET_CLUSTER,
                props({"name": "c", "location": "us-central1"}),
            )
        )
    )
    assert "was not found" in cluster.failures[0].reason


@pytest.mark.parametrize("stack", ["b200", "h200"])
def test_the_default_description_holds_each_committed_stack_s_reservation(stack: str) -> None:
    """The stand-in's default answers describe the committed placeholders at the size their
    policy configs record, so the committed stacks plan as they are."""
    import json

    import yaml

    from pulumi_offline.fake_reservations import load_fixtures
    from testbed.gcp_standin.invokes import DEFAULT_FIXTURES

    config = yaml.safe_load((REPO / f"Pulumi.{stack}.yaml").read_text())["config"]
    gpu = config["nemo-rl-gke:gpu"]
    sizes = json.loads((REPO / "policies" / "config" / f"{stack}.json").read_text())
    (described,) = [
        r for r in load_fixtures(DEFAULT_FIXTURES).reservations if r.name == gpu["reservation"]
    ]
    assert described.zone == config["nemo-rl-gke:zone"]
    assert described.project == config["gcp:project"]
    assert described.count == sizes["gpu-reservation-size"]["reservations"][gpu["reservation"]]
    assert described.count >= gpu["nodes"]


def test_a_connection_a_lustre_instance_still_uses_is_not_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Google refuses it ("Producer services ... are still using this connection"): the
    stand-in remembers its Lustre instances across processes and refuses the same way, so the
    engine tests prove the destroy order (the instance first), whatever REMOVE_PEERING does."""
    from testbed.gcp_standin import producers

    monkeypatch.setenv("NEMO_RL_GKE_STANDIN_CLOUD", str(tmp_path))
    network = "projects/p/global/networks/n"
    standin = GcpStandIn()
    created = asyncio.run(
        standin.create(
            p.CreateRequest(urn(LUSTRE, "lustre"), props({"network": network}), 60, False)
        )
    )
    connection = p.DeleteRequest(
        urn(PSA_CONNECTION, "psa"), "n:servicenetworking", props({"network": network}), 60
    )
    with pytest.raises(RuntimeError, match="still using this connection"):
        asyncio.run(GcpStandIn().delete(connection))
    assert producers.users(network) == [created.resource_id]
    asyncio.run(
        GcpStandIn().delete(
            p.DeleteRequest(urn(LUSTRE, "lustre"), str(created.resource_id), {}, 60)
        )
    )
    asyncio.run(GcpStandIn().delete(connection))
    assert producers.users(network) == []
