"""Every enum value the program sends to GKE and Compute is one Google's APIs define.

The reference is Google's own discovery documents for container/v1 and compute/v1, as shipped
in the google-api-python-client package (a test dependency). pulumi-gcp passes these values
through as plain strings, so a typo or a value from another API version would only fail at
`pulumi up`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import googleapiclient
import pytest

from tests.harness import STACKS, run_stack, variant

DOCUMENTS = Path(googleapiclient.__file__).parent / "discovery_cache" / "documents"

# (resource type, path of the value in the program's inputs ("[]" = each item), API, schema,
# field). Paths are the wire names pulumi-gcp sends; schemas and fields are the API's.
ENUM_FIELDS: list[tuple[str, str, str, str, str]] = [
    (
        "gcp:container/cluster:Cluster",
        "datapathProvider",
        "container",
        "NetworkConfig",
        "datapathProvider",
    ),
    (
        "gcp:container/cluster:Cluster",
        "releaseChannel.channel",
        "container",
        "ReleaseChannel",
        "channel",
    ),
    (
        "gcp:container/cluster:Cluster",
        "nodeConfig.workloadMetadataConfig.mode",
        "container",
        "WorkloadMetadataConfig",
        "mode",
    ),
    (
        "gcp:container/cluster:Cluster",
        "maintenancePolicy.maintenanceExclusions[].exclusionOptions.scope",
        "container",
        "MaintenanceExclusionOptions",
        "scope",
    ),
    (
        "gcp:container/cluster:Cluster",
        "maintenancePolicy.maintenanceExclusions[].exclusionOptions.endTimeBehavior",
        "container",
        "MaintenanceExclusionOptions",
        "endTimeBehavior",
    ),
    (
        "gcp:container/cluster:Cluster",
        "monitoringConfig.enableComponents[]",
        "container",
        "MonitoringComponentConfig",
        "enableComponents",
    ),
    (
        "gcp:container/cluster:Cluster",
        "loggingConfig.enableComponents[]",
        "container",
        "LoggingComponentConfig",
        "enableComponents",
    ),
    (
        "gcp:container/nodePool:NodePool",
        "nodeConfig.workloadMetadataConfig.mode",
        "container",
        "WorkloadMetadataConfig",
        "mode",
    ),
    (
        "gcp:container/nodePool:NodePool",
        "nodeConfig.reservationAffinity.consumeReservationType",
        "container",
        "ReservationAffinity",
        "consumeReservationType",
    ),
    (
        "gcp:container/nodePool:NodePool",
        "nodeConfig.taints[].effect",
        "container",
        "NodeTaint",
        "effect",
    ),
    (
        "gcp:container/nodePool:NodePool",
        "nodeConfig.guestAccelerators[].gpuDriverInstallationConfig.gpuDriverVersion",
        "container",
        "GPUDriverInstallationConfig",
        "gpuDriverVersion",
    ),
    (
        "gcp:container/nodePool:NodePool",
        "upgradeSettings.strategy",
        "container",
        "UpgradeSettings",
        "strategy",
    ),
    (
        "gcp:container/nodePool:NodePool",
        "placementPolicy.type",
        "container",
        "PlacementPolicy",
        "type",
    ),
    (
        "gcp:container/nodePool:NodePool",
        "autoscaling.locationPolicy",
        "container",
        "NodePoolAutoscaling",
        "locationPolicy",
    ),
    (
        "gcp:compute/network:Network",
        "routingMode",
        "compute",
        "NetworkRoutingConfig",
        "routingMode",
    ),
    (
        "gcp:compute/subnetwork:Subnetwork",
        "logConfig.aggregationInterval",
        "compute",
        "SubnetworkLogConfig",
        "aggregationInterval",
    ),
    (
        "gcp:compute/subnetwork:Subnetwork",
        "logConfig.metadata",
        "compute",
        "SubnetworkLogConfig",
        "metadata",
    ),
    ("gcp:compute/firewall:Firewall", "direction", "compute", "Firewall", "direction"),
    ("gcp:compute/globalAddress:GlobalAddress", "purpose", "compute", "Address", "purpose"),
    ("gcp:compute/globalAddress:GlobalAddress", "addressType", "compute", "Address", "addressType"),
    (
        "gcp:compute/routerNat:RouterNat",
        "natIpAllocateOption",
        "compute",
        "RouterNat",
        "natIpAllocateOption",
    ),
    (
        "gcp:compute/routerNat:RouterNat",
        "sourceSubnetworkIpRangesToNat",
        "compute",
        "RouterNat",
        "sourceSubnetworkIpRangesToNat",
    ),
    (
        "gcp:compute/routerNat:RouterNat",
        "subnetworks[].sourceIpRangesToNats[]",
        "compute",
        "RouterNatSubnetworkToNat",
        "sourceIpRangesToNat",
    ),
    (
        "gcp:compute/routerNat:RouterNat",
        "logConfig.filter",
        "compute",
        "RouterNatLogConfig",
        "filter",
    ),
]


@cache
def enum_of(api: str, schema: str, field: str) -> frozenset[str]:
    """The values Google's discovery document allows for `schema.field` (list items too)."""
    document = json.loads((DOCUMENTS / f"{api}.v1.json").read_text(encoding="utf-8"))
    prop = document["schemas"][schema]["properties"][field]
    values = prop.get("enum") or prop.get("items", {}).get("enum")
    assert values, f"{api} {schema}.{field} is not an enum in the discovery document"
    return frozenset(values)


def values_at(inputs: Any, path: str) -> Iterator[Any]:
    """Every value at `path` ("a.b[].c"): none when a part is absent."""
    if not path:
        yield inputs
        return
    head, _, rest = path.partition(".")
    each = head.endswith("[]")
    key = head.removesuffix("[]")
    if not isinstance(inputs, dict) or key not in inputs:
        return
    found = inputs[key]
    for item in found if each and isinstance(found, list) else [found]:
        yield from values_at(item, rest)


def stacks() -> Iterator[tuple[str, Any]]:
    for stack in STACKS:
        yield stack, run_stack(stack)


@pytest.fixture(scope="module")
def plans(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The committed stacks, plus capacity models that send other enum values."""
    found = dict(stacks())
    variants: dict[str, dict[str, Any]] = {
        "flex-start": {
            "type": "b200",
            "autoscaling": {"min": 0, "max": 2},
            "capacity": "flex-start",
        },
        "spot-compact": {"type": "l4", "nodes": 1, "capacity": "spot", "placement": "compact"},
    }
    for name, gpu in variants.items():
        base = "b200" if gpu["type"] == "b200" else "dev"
        tmp = tmp_path_factory.mktemp(name)
        found[name] = run_stack(base, tmp, variant(base, {"nemo-rl-gke:gpu": gpu}))
    return found


def test_every_enum_value_sent_is_defined_by_google(plans: dict[str, Any]) -> None:
    checked = 0
    for plan_name, result in plans.items():
        for record in result.run.records:
            for type_, path, api, schema, field in ENUM_FIELDS:
                if record.type != type_:
                    continue
                for value in values_at(record.inputs, path):
                    allowed = enum_of(api, schema, field)
                    assert value in allowed, (
                        f"{plan_name}: {record.name}.{path} = {value!r} is not in {api}/v1"
                        f" {schema}.{field} ({sorted(allowed)})"
                    )
                    checked += 1
    assert checked > 50  # the table really matched the program's inputs


def test_the_check_can_fail() -> None:
    assert "ADVANCED_DATAPATH" in enum_of("container", "NetworkConfig", "datapathProvider")
    assert "ADVANCED" not in enum_of("container", "NetworkConfig", "datapathProvider")
