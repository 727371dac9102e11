"""The typed config contract: every committed stack validates; every rule fails with its message."""

from __future__ import annotations

import json
from typing import Any

import pytest

from planning.naming import default_base_name
from pulumi_offline.stackfiles import read_project, read_stack
from stack_config import InvalidStackConfig, StackConfig, load_stack_config
from tests.harness import REPO, STACKS


def committed_values(stack: str) -> dict[str, str]:
    return read_stack(read_project(REPO), REPO / f"Pulumi.{stack}.yaml").values


@pytest.mark.parametrize("stack", STACKS)
def test_committed_stacks_validate(stack: str) -> None:
    cfg = load_stack_config(committed_values(stack), stack)
    assert isinstance(cfg, StackConfig)
    assert cfg.name == default_base_name(stack)


def test_production_and_dev_shapes() -> None:
    dev = load_stack_config(committed_values("dev"), "dev")
    assert (dev.gpu.type, dev.gpu.capacity, dev.protect, dev.lustre.enabled) == (
        "l4",
        "spot",
        False,
        False,
    )
    assert dev.gpu.autoscaling is not None
    assert dev.gpu.autoscaling.min == 0
    assert dev.rdma_cidrs == []
    for stack, gpu in (("b200", "b200"), ("h200", "h200")):
        cfg = load_stack_config(committed_values(stack), stack)
        assert (cfg.gpu.type, cfg.gpu.capacity, cfg.gpu.nodes) == (gpu, "reservation", 2)
        assert cfg.protect is True
        assert cfg.lustre.enabled is True
        assert "placeholder" in (cfg.gpu.reservation or "")
        assert len(cfg.rdma_cidrs) == 8


BASE: dict[str, Any] = {
    "gcp:project": "my-project-123",
    "gcp:region": "us-central1",
    "nemo-rl-gke:zone": "us-central1-b",
    "nemo-rl-gke:gpu": {"type": "b200", "nodes": 2, "capacity": "reservation", "reservation": "r1"},
    "nemo-rl-gke:bucket": {"enabled": True},
}


def values(**changes: Any) -> dict[str, str]:
    """BASE with changes; keys use __ for ':' and objects are JSON-encoded like the engine does."""
    merged = dict(BASE)
    for key, value in changes.items():
        full = (
            key.replace("__", ":").replace("_", "-")
            if key.startswith("gcp")
            else f"nemo-rl-gke:{key}"
        )
        if value is None:
            merged.pop(full, None)
        else:
            merged[full] = value
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in merged.items()}


def gpu(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = dict(BASE["nemo-rl-gke:gpu"])
    for key, value in fields.items():
        if value is None:
            base.pop(key, None)
        else:
            base[key] = value
    return base


def error_for(vals: dict[str, str]) -> InvalidStackConfig:
    with pytest.raises(InvalidStackConfig) as info:
        load_stack_config(vals, "b200")
    return info.value


def test_base_is_valid() -> None:
    cfg = load_stack_config(values(), "b200")
    # The tutorial's shape (RDMA right after gVNIC) with /21s that hold GKE's largest pool.
    assert str(cfg.network.gvnic_cidr) == "192.168.0.0/21"
    assert [str(c) for c in cfg.rdma_cidrs] == [f"192.168.{8 * i}.0/21" for i in range(1, 9)]
    # tutorial-facts §16.1: zonal profile, never the region
    assert (
        cfg.network_profile
        == "projects/my-project-123/global/networkProfiles/us-central1-b-vpc-roce"
    )


CASES: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "zone-outside-region",
        {"zone": "us-east4-b"},
        "nemo-rl-gke:zone",
        "is not in region us-central1",
    ),
    ("zone-malformed", {"zone": "central"}, "nemo-rl-gke:zone", "should match pattern"),
    ("project-missing", {"gcp__project": None}, "gcp:project", "is required"),
    ("gpu-missing", {"gpu": None}, "nemo-rl-gke:gpu", "is required"),
    (
        "gpu-type-unknown",
        {"gpu": gpu(type="b300")},
        "nemo-rl-gke:gpu.type",
        "'b200', 'h200' or 'l4'",
    ),
    (
        "reservation-missing",
        {"gpu": gpu(reservation=None)},
        "nemo-rl-gke:gpu.reservation",
        "required when capacity is 'reservation'",
    ),
    (
        "reservation-with-spot",
        {"gpu": gpu(capacity="spot")},
        "nemo-rl-gke:gpu.reservation",
        "cannot consume reservations",
    ),
    (
        "reservation-url",
        {"gpu": gpu(reservation="projects/p/reservations/r")},
        "nemo-rl-gke:gpu.reservation",
        "is not NAME, NAME/reservationBlocks/BLOCK or NAME/reservationBlocks/BLOCK/"
        "reservationSubBlocks/SUB",
    ),
    (
        "reservation-project-alone",
        {"gpu": gpu(capacity="spot", reservation=None, reservationProject="other-proj")},
        "nemo-rl-gke:gpu.reservationProject",
        "only used together with gpu.reservation",
    ),
    (
        "nodes-and-autoscaling",
        {"gpu": gpu(autoscaling={"min": 0, "max": 2})},
        "nemo-rl-gke:gpu.nodes",
        "exactly one of nodes",
    ),
    (
        "neither-nodes-nor-autoscaling",
        {"gpu": gpu(nodes=None)},
        "nemo-rl-gke:gpu.nodes",
        "exactly one of nodes",
    ),
    (
        "too-many-nodes",
        {"gpu": gpu(nodes=1001)},
        "nemo-rl-gke:gpu.nodes",
        "less than or equal to 1000",
    ),
    (
        "autoscaling-max-too-big",
        {"gpu": gpu(nodes=None, autoscaling={"min": 0, "max": 5000})},
        "nemo-rl-gke:gpu.autoscaling.max",
        "less than or equal to 1000",
    ),
    (
        "autoscaling-min-above-max",
        {"gpu": gpu(nodes=None, autoscaling={"min": 3, "max": 2})},
        "nemo-rl-gke:gpu.autoscaling.min",
        "larger than max",
    ),
    (
        "a4-on-demand",
        {"gpu": gpu(capacity="on-demand", reservation=None)},
        "nemo-rl-gke:gpu.capacity",
        "not sold as 'on-demand'",
    ),
    (
        "flex-start-fixed-size",
        {"gpu": gpu(capacity="flex-start", reservation=None)},
        "nemo-rl-gke:gpu.autoscaling",
        "must autoscale from 0",
    ),
    ("unknown-gpu-field", {"gpu": gpu(node=2)}, "nemo-rl-gke:gpu.node", "did you mean 'nodes'"),
    ("unknown-top-key", {"gpus": {"type": "b200"}}, "nemo-rl-gke:gpus", "did you mean 'gpu'"),
    (
        "rdma-count",
        {"network": {"rdmaCidrs": ["192.168.1.0/24"]}},
        "nemo-rl-gke:network.rdmaCidrs",
        "1 RDMA CIDRs given but a4-highgpu-8g has 8 RDMA NICs",
    ),
    (
        "rdma-duplicate",
        {"network": {"rdmaCidrs": ["192.168.1.0/24"] * 8}},
        "nemo-rl-gke:network.rdmaCidrs",
        "listed twice",
    ),
    (
        "rdma-overlaps-gvnic",
        {"network": {"rdmaCidrs": [f"192.168.{i}.0/24" for i in range(8)]}},
        "nemo-rl-gke:network.rdmaCidrs[0]",
        "overlaps network.gvnicCidr",
    ),
    (
        "pods-overlap-primary",
        {"network": {"podsCidr": "10.0.0.0/14"}},
        "nemo-rl-gke:network.podsCidr",
        "overlaps network.primaryCidr",
    ),
    (
        "services-overlap-pods",
        {"network": {"servicesCidr": "10.5.0.0/20"}},
        "nemo-rl-gke:network.servicesCidr",
        "overlaps network.podsCidr",
    ),
    (
        "host-bits",
        {"network": {"primaryCidr": "10.0.0.1/20"}},
        "nemo-rl-gke:network.primaryCidr",
        "host bits set",
    ),
    (
        "not-a-cidr",
        {"network": {"gvnicCidr": "banana"}},
        "nemo-rl-gke:network.gvnicCidr",
        "not an IPv4 CIDR",
    ),
    (
        "authorized-network-bad-cidr",
        {"network": {"authorizedNetworks": [{"name": "x", "cidr": "300.0.0.0/8"}]}},
        "nemo-rl-gke:network.authorizedNetworks[0].cidr",
        "not an IPv4 CIDR",
    ),
    (
        "authorized-network-dup-name",
        {
            "network": {
                "authorizedNetworks": [
                    {"name": "x", "cidr": "203.0.113.0/24"},
                    {"name": "x", "cidr": "198.51.100.0/24"},
                ]
            }
        },
        "nemo-rl-gke:network.authorizedNetworks[1].name",
        "used twice",
    ),
    (
        "mtu-too-big",
        {"network": {"mtu": 9000}},
        "nemo-rl-gke:network.mtu",
        "less than or equal to 8896",
    ),
    (
        "lustre-capacity-step",
        {"lustre": {"enabled": True, "capacityGib": 20000}},
        "nemo-rl-gke:lustre.capacityGib",
        "not a multiple of 18000",
    ),
    (
        "lustre-capacity-below-min",
        {"lustre": {"enabled": True, "capacityGib": 18000, "throughput": 250}},
        "nemo-rl-gke:lustre.capacityGib",
        "outside 36000",
    ),
    (
        "lustre-tier",
        {"lustre": {"throughput": 300}},
        "nemo-rl-gke:lustre.throughput",
        "125, 250, 500 or 1000",
    ),
    (
        "lustre-filesystem-name",
        {"lustre": {"filesystem": "lustre-fs"}},
        "nemo-rl-gke:lustre.filesystem",
        "should match pattern",
    ),
    (
        "lustre-filesystem-too-long",
        {"lustre": {"filesystem": "abcdefghi"}},
        "nemo-rl-gke:lustre.filesystem",
        "should match pattern",
    ),
    ("protect-not-bool", {"protect": "maybe"}, "nemo-rl-gke:protect", "valid boolean"),
    ("name-invalid", {"name": "Nemo_RL"}, "nemo-rl-gke:name", "should match pattern"),
    (
        "label-key",
        {"labels": {"Team": "ml"}},
        "nemo-rl-gke:labels.Team",
        "label key 'Team' is invalid",
    ),
    ("gpu-not-a-map", {"gpu": "b200"}, "nemo-rl-gke:gpu", "valid dictionary"),
    (
        "ray-operator",
        {"ray": {"operator": "both"}},
        "nemo-rl-gke:ray.operator",
        "'helm' or 'gke-addon'",
    ),
    (
        "compact-with-reservation",
        {"gpu": gpu(placement="compact")},
        "nemo-rl-gke:gpu.placement",
        "not used with a reservation",
    ),
    (
        "compact-flex-on-l4",
        {
            "gpu": {
                "type": "l4",
                "capacity": "flex-start",
                "autoscaling": {"min": 0, "max": 1},
                "placement": "compact",
            }
        },
        "nemo-rl-gke:gpu.placement",
        "only offered for A4 and A3 Ultra",
    ),
    (
        "version-too-old-for-a4",
        {"cluster": {"minVersion": "1.31"}},
        "nemo-rl-gke:cluster.minVersion",
        "minimum for a4-highgpu-8g GPUs",
    ),
    (
        "version-too-old-for-lustre-988",
        {"cluster": {"minVersion": "1.33.1"}, "lustre": {"enabled": True}},
        "nemo-rl-gke:cluster.minVersion",
        "1.33.2-gke.4780000, the minimum for Lustre on port 988",
    ),
    (
        # The Lustre CSI docs (4780000, new clusters) and the API field (4655000, nodes)
        # disagree; the later pin wins, so a version between them is refused.
        "version-between-the-two-lustre-sources",
        {"cluster": {"minVersion": "1.33.2-gke.4700000"}, "lustre": {"enabled": True}},
        "nemo-rl-gke:cluster.minVersion",
        "older than 1.33.2-gke.4780000",
    ),
    (
        # L4's own minimum (1.27.2) is older than the Ray workers' KUBELET/CADVISOR metrics.
        "version-too-old-for-kubelet-metrics",
        {
            "gpu": {"type": "l4", "capacity": "spot", "autoscaling": {"min": 0, "max": 1}},
            "cluster": {"minVersion": "1.28"},
        },
        "nemo-rl-gke:cluster.minVersion",
        "older than 1.29.3-gke.1093000, the minimum for the KUBELET and CADVISOR metrics",
    ),
    (
        "version-malformed",
        {"cluster": {"minVersion": "latest"}},
        "nemo-rl-gke:cluster.minVersion",
        "should match pattern",
    ),
    (
        "window-too-short",
        {"cluster": {"maintenance": {"windowEnd": "2026-01-03T06:00:00Z"}}},
        "nemo-rl-gke:cluster.maintenance.windowEnd",
        "at least 4 hours",
    ),
    (
        "window-not-a-time",
        {"cluster": {"maintenance": {"windowStart": "saturday"}}},
        "nemo-rl-gke:cluster.maintenance.windowStart",
        "not an RFC 3339 time",
    ),
    (
        "window-too-rare",
        {"cluster": {"maintenance": {"recurrence": "FREQ=WEEKLY;BYDAY=SU"}}},
        "nemo-rl-gke:cluster.maintenance.recurrence",
        "8-hour windows (FREQ=WEEKLY;BYDAY=SU) give 32 hours of maintenance in the 32 days",
    ),
    (
        "window-rule-ends",
        {"cluster": {"maintenance": {"recurrence": "FREQ=DAILY;COUNT=5"}}},
        "nemo-rl-gke:cluster.maintenance.recurrence",
        "GKE requires at least 48 hours in any 32 days",
    ),
    (
        "window-rule-malformed",
        {"cluster": {"maintenance": {"recurrence": "FREQ=WEEKLY;BYDAY=SATURDAY"}}},
        "nemo-rl-gke:cluster.maintenance.recurrence",
        "not an RFC 5545 recurrence rule",
    ),
    (
        "no-upgrades-until-end-of-support",
        {"cluster": {"maintenance": {"exclusionScope": "NO_UPGRADES"}}},
        "nemo-rl-gke:cluster.maintenance.exclusionScope",
        "set cluster.maintenance.exclusionEnd to 2026-01-31T00:00:00Z or earlier",
    ),
    (
        "no-upgrades-longer-than-30-days",
        {
            "cluster": {
                "maintenance": {
                    "exclusionScope": "NO_UPGRADES",
                    "exclusionEnd": "2026-03-01T00:00:00Z",
                }
            }
        },
        "nemo-rl-gke:cluster.maintenance.exclusionEnd",
        "lasts at most 30 days",
    ),
    (
        "exclusion-ends-before-it-starts",
        {"cluster": {"maintenance": {"exclusionEnd": "2025-12-01T00:00:00Z"}}},
        "nemo-rl-gke:cluster.maintenance.exclusionEnd",
        "not after exclusionStart",
    ),
    (
        "psa-range-too-small-for-lustre",
        {"network": {"psaCidr": "172.16.0.0/24"}},
        "nemo-rl-gke:network.psaCidr",
        "Managed Lustre needs a private services range of /23 or larger",
    ),
    (
        "system-pool-order",
        {"cluster": {"systemPool": {"min": 4, "max": 2}}},
        "nemo-rl-gke:cluster.systemPool.min",
        "larger than max",
    ),
    (
        "exclusion-scope",
        {"cluster": {"maintenance": {"exclusionScope": "NEVER"}}},
        "nemo-rl-gke:cluster.maintenance.exclusionScope",
        "NO_MINOR_OR_NODE_UPGRADES",
    ),
    (
        "verify-fraction",
        {"verify": {"storage": {"minFraction": 2}}},
        "nemo-rl-gke:verify.storage.minFraction",
        "less than or equal to 1",
    ),
    (
        "verify-collective",
        {"verify": {"nccl": {"collectives": ["broadcast"]}}},
        "nemo-rl-gke:verify.nccl.collectives[0]",
        "all_gather",
    ),
    (
        "verify-unknown-gate",
        {"verify": {"smoke": {"enabled": True}}},
        "nemo-rl-gke:verify.smoke",
        "",
    ),
]


@pytest.mark.parametrize(("case", "changes", "key", "fragment"), CASES, ids=[c[0] for c in CASES])
def test_invalid_config_names_key_and_fix(
    case: str, changes: dict[str, Any], key: str, fragment: str
) -> None:
    err = error_for(values(**changes))
    assert err.key == key, str(err)
    assert fragment in str(err), str(err)
    assert err.fix, "every message says how to fix it"
    assert "\n" not in str(err), "one line"


def test_valid_maintenance_and_psa_edges_pass() -> None:
    """The limits themselves are accepted: a /23, a 30-day NO_UPGRADES, daily 4-hour windows
    (exactly 128 hours in 32 days), a minor-scope exclusion with an end time."""
    maintenance = {
        "exclusionScope": "NO_UPGRADES",
        "exclusionEnd": "2026-01-31T00:00:00Z",
        "recurrence": "FREQ=DAILY",
        "windowEnd": "2026-01-03T08:00:00Z",
    }
    cfg = load_stack_config(
        values(network={"psaCidr": "172.16.0.0/23"}, cluster={"maintenance": maintenance}),
        "b200",
    )
    assert cfg.cluster.maintenance.exclusion_end == "2026-01-31T00:00:00Z"
    minor = {"exclusionEnd": "2026-09-01T00:00:00Z"}
    load_stack_config(values(cluster={"maintenance": minor}), "b200")


def test_l4_needs_no_rdma_and_rejects_rdma_cidrs() -> None:
    dev = {"gpu": {"type": "l4", "capacity": "spot", "autoscaling": {"min": 0, "max": 2}}}
    cfg = load_stack_config(values(**dev), "dev")
    assert cfg.rdma_cidrs == []
    err = error_for(values(**dev, network={"rdmaCidrs": ["192.168.1.0/24"]}))
    assert "g2-standard-16 has 0 RDMA NICs" in str(err)


def test_rdma_plan_follows_the_gvnic_range() -> None:
    cfg = load_stack_config(values(network={"gvnicCidr": "192.168.16.0/24"}), "b200")
    assert str(cfg.rdma_cidrs[0]) == "192.168.17.0/24"
    assert str(cfg.rdma_cidrs[-1]) == "192.168.24.0/24"


def test_explicit_rdma_cidrs_are_kept_in_order() -> None:
    cidrs = [f"172.16.{i}.0/24" for i in range(7, -1, -1)]
    cfg = load_stack_config(values(network={"rdmaCidrs": cidrs}), "b200")
    assert [str(c) for c in cfg.rdma_cidrs] == cidrs


def test_reservation_block_and_shared_project_accepted() -> None:
    cfg = load_stack_config(
        values(
            gpu=gpu(reservation="res-a/reservationBlocks/block-1", reservationProject="owner-proj")
        ),
        "b200",
    )
    assert cfg.gpu.reservation == "res-a/reservationBlocks/block-1"
    assert cfg.gpu.reservation_project == "owner-proj"


def test_more_problems_are_counted() -> None:
    err = error_for(values(zone="bad", gpu=gpu(type="b300")))
    assert err.more >= 1
    assert "more problem" in str(err)


def test_secrets_are_not_part_of_the_model() -> None:
    vals = values()
    vals["nemo-rl-gke:hfToken"] = "hf_not_a_real_token"
    cfg = load_stack_config(vals, "b200", secret_keys={"nemo-rl-gke:hfToken"})
    assert "hf_not_a_real_token" not in cfg.model_dump_json()


@pytest.mark.parametrize("key", ["hfToken", "wandbApiKey"])
def test_plaintext_secret_values_are_refused_without_echoing_them(key: str) -> None:
    from stack_config import SECRET_KEYS

    assert key in SECRET_KEYS
    vals = values()
    vals[f"nemo-rl-gke:{key}"] = "hf_plaintext_value_in_git"
    with pytest.raises(InvalidStackConfig) as info:
        load_stack_config(vals, "b200")  # not among the secret keys: written in plain text
    message = str(info.value)
    assert info.value.key == f"nemo-rl-gke:{key}"
    assert "plain text" in message
    assert f"pulumi config set --secret nemo-rl-gke:{key}" in message
    assert "hf_plaintext_value_in_git" not in message


def test_lustre_gke_support_allows_older_nodes_and_sets_the_legacy_port() -> None:
    cfg = load_stack_config(
        values(lustre={"enabled": True, "gkeSupport": True}, cluster={"minVersion": "1.33.1"}),
        "b200",
    )
    assert cfg.legacy_lustre_port is True
    recommended = load_stack_config(values(lustre={"enabled": True}), "b200")
    assert recommended.legacy_lustre_port is False
    assert (
        load_stack_config(values(lustre={"gkeSupport": True}), "b200").legacy_lustre_port is False
    )


def test_flex_start_needs_its_minimum_version() -> None:
    flex = gpu(
        capacity="flex-start", reservation=None, nodes=None, autoscaling={"min": 0, "max": 2}
    )
    err = error_for(values(gpu=flex, cluster={"minVersion": "1.32.2-gke.1475000"}))
    assert "minimum for flex-start" in str(err)
    assert load_stack_config(values(gpu=flex), "b200").gpu.capacity == "flex-start"


def gpu_nodes(count: int) -> dict[str, Any]:
    return {"gpu": gpu(nodes=count)}


def test_a_1000_node_b200_plans_with_ranges_that_hold_it() -> None:
    cfg = load_stack_config(values(**gpu_nodes(1000)), "b200")
    assert cfg.gpu.max_nodes == 1000
    for net in [cfg.network.gvnic_cidr, *cfg.rdma_cidrs]:
        assert net.num_addresses - 4 >= 1000


@pytest.mark.parametrize(
    ("network", "key", "needed"),
    [
        ({"gvnicCidr": "192.168.0.0/24"}, "nemo-rl-gke:network.gvnicCidr", "/22"),
        (
            {"rdmaCidrs": [f"192.168.{i}.0/24" for i in range(100, 108)]},
            "nemo-rl-gke:network.rdmaCidrs[0]",
            "/22",
        ),
        ({"primaryCidr": "10.0.0.0/23"}, "nemo-rl-gke:network.primaryCidr", "/22"),
        # 1000 GPU nodes x a /26 (32 pods) + 3 system nodes x a /24 (110 pods) = 64768
        ({"podsCidr": "10.4.0.0/17"}, "nemo-rl-gke:network.podsCidr", "/16"),
    ],
)
def test_a_range_too_small_for_the_pool_exits_naming_it_and_the_size_it_needs(
    network: dict[str, Any], key: str, needed: str
) -> None:
    err = error_for(values(network=network, **gpu_nodes(1000)))
    assert err.key == key
    assert f"use a {needed} or larger" in err.fix
    # The same ranges hold a small pool.
    load_stack_config(values(network=network, **gpu_nodes(2)), "b200")


def test_gpu_nodes_take_a_26_of_the_pods_range_at_32_pods() -> None:
    """At GKE's default 110 pods every node took a /24, and the default /14 held the 1000-node
    pool with 21 nodes to spare; at 32 pods per GPU node a /16 holds it."""
    cfg = load_stack_config(values(network={"podsCidr": "10.4.0.0/16"}, **gpu_nodes(1000)), "b200")
    assert cfg.gpu.max_pods_per_node == 32


def test_a_pool_kept_at_110_pods_is_checked_at_110() -> None:
    """A pool created before the 32 default keeps 110 pods per node (GKE cannot change it in
    place); the stack says so and the plan is checked as it really is."""
    err = error_for(
        values(gpu=gpu(nodes=1000, maxPodsPerNode=110), network={"podsCidr": "10.4.0.0/16"})
    )
    assert err.key == "nemo-rl-gke:network.podsCidr"
    assert "1000 GPU nodes x 256 (gpu.maxPodsPerNode 110)" in err.problem
    assert "use a /14 or larger" in err.fix


def test_a_pool_version_must_be_full_and_not_ahead_of_the_control_plane() -> None:
    err = error_for(values(gpu={**BASE["nemo-rl-gke:gpu"], "version": "1.35"}))
    assert err.key == "nemo-rl-gke:gpu.version"
    err = error_for(values(cluster={"systemPool": {"version": "1.36.2-gke.1000"}}))
    assert err.key == "nemo-rl-gke:cluster.systemPool.version"
    assert "raise cluster.minVersion to 1.36 first" in err.fix
    err = error_for(
        values(
            cluster={"minVersion": "1.36", "systemPool": {"version": "1.35.8-gke.1036000"}},
            gpu={**BASE["nemo-rl-gke:gpu"], "version": "1.36.2-gke.1000"},
        )
    )
    assert err.key == "nemo-rl-gke:gpu.version"
    assert "the GPU pool moves last" in err.problem
    cfg = load_stack_config(
        values(
            cluster={"minVersion": "1.36", "systemPool": {"version": "1.36.2-gke.1000"}},
            gpu={**BASE["nemo-rl-gke:gpu"], "version": "1.36.2-gke.1000"},
        ),
        "b200",
    )
    assert cfg.gpu.version == cfg.cluster.system_pool.version == "1.36.2-gke.1000"


@pytest.mark.parametrize(
    ("maintenance", "why"),
    [
        ({"blockUpgrades": False}, "blockUpgrades is false"),
        ({"exclusionScope": "NO_MINOR_UPGRADES"}, "NO_MINOR_UPGRADES lets node patches through"),
    ],
)
@pytest.mark.parametrize("pool", ["gpu", "system"])
def test_a_pool_version_is_refused_where_gke_upgrades_the_nodes(
    maintenance: dict[str, Any], why: str, pool: str
) -> None:
    """pulumi-gcp reads a pool's version back, and auto-upgrade cannot be turned off in a
    channel: a pin GKE may pass plans a downgrade of every node at the next refresh."""
    version = {"version": "1.35.8-gke.1036000"}
    err = error_for(
        values(
            cluster={
                "maintenance": maintenance,
                **({"systemPool": version} if pool == "system" else {}),
            },
            **({"gpu": {**BASE["nemo-rl-gke:gpu"], **version}} if pool == "gpu" else {}),
        )
    )
    assert err.key == f"nemo-rl-gke:{'gpu' if pool == 'gpu' else 'cluster.systemPool'}.version"
    assert why in err.problem
    assert "plans a downgrade that recreates every node" in err.problem
    assert "exclusionScope NO_MINOR_OR_NODE_UPGRADES" in err.fix


def test_a_pool_version_may_trail_the_control_plane_two_minors_and_not_below_its_floor() -> None:
    gpu = BASE["nemo-rl-gke:gpu"]
    err = error_for(
        values(cluster={"minVersion": "1.36"}, gpu={**gpu, "version": "1.33.5-gke.100"})
    )
    assert err.key == "nemo-rl-gke:gpu.version"
    assert "3 minors behind the control plane (cluster.minVersion 1.36)" in err.problem
    err = error_for(values(gpu={**gpu, "version": "1.31.1-gke.100"}))
    assert err.key == "nemo-rl-gke:gpu.version"
    assert "the minimum for" in err.problem


def test_authorized_networks_that_cover_every_address_are_refused() -> None:
    halves = [{"name": "a", "cidr": "0.0.0.0/1"}, {"name": "b", "cidr": "128.0.0.0/1"}]
    err = error_for(values(network={"authorizedNetworks": halves}))
    assert err.key == "nemo-rl-gke:network.authorizedNetworks", str(err)
    assert "together cover 0.0.0.0/0" in str(err)
    err = error_for(values(network={"authorizedNetworks": [{"name": "w", "cidr": "0.0.0.0/0"}]}))
    assert "together cover 0.0.0.0/0" in str(err)
    # Half the space is wide, but not the world.
    load_stack_config(values(network={"authorizedNetworks": halves[:1]}), "b200")


def test_an_ip_endpoint_nobody_may_reach_is_refused() -> None:
    err = error_for(values(network={"controlPlaneEndpoint": "ip"}))
    assert err.key == "nemo-rl-gke:network.controlPlaneEndpoint", str(err)
    assert "none is listed" in str(err)
    office = [{"name": "office", "cidr": "203.0.113.0/24"}]
    load_stack_config(
        values(network={"controlPlaneEndpoint": "ip", "authorizedNetworks": office}), "b200"
    )


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("goog-data", "goog prefix"),
        ("my-google-data", "google or a close misspelling"),
        ("my-g00gle-data", "google or a close misspelling"),
        ("team-go-ogle-runs", "google or a close misspelling"),
        ("192.168.5.4", None),  # dots: already refused by the character rule
    ],
)
def test_bucket_names_follow_every_naming_rule(name: str, text: str | None) -> None:
    err = error_for(values(bucket={"enabled": True, "name": name}))
    assert err.key == "nemo-rl-gke:bucket.name", str(err)
    if text:
        assert text in str(err)


def test_a_default_bucket_name_that_google_refuses_names_the_key() -> None:
    err = error_for(values(gcp__project="my-google-proj"))
    assert err.key == "nemo-rl-gke:bucket.name", str(err)
    assert "(the default, <project>-<name>-data)" in str(err)
    cfg = load_stack_config(values(bucket={"enabled": True, "name": "team-goggles-data"}), "b200")
    assert cfg.bucket_name == "team-goggles-data"


def test_a_quota_that_cannot_admit_the_stacks_own_workloads_is_refused() -> None:
    err = error_for(values(kueue={"gpuQuota": 8}))
    assert err.key == "nemo-rl-gke:kueue.gpuQuota", str(err)
    assert "cannot admit the RayCluster's workers, which needs 16 at once" in str(err)
    # With an autoscaled pool from one node, the RayCluster needs 8, the job 2 x 8.
    autoscaled = gpu(nodes=None, autoscaling={"min": 1, "max": 2})
    load_stack_config(values(gpu=autoscaled, kueue={"gpuQuota": 8}), "b200")
    err = error_for(values(gpu=autoscaled, kueue={"gpuQuota": 8}, ray={"job": {"enabled": True}}))
    assert "cannot admit the GRPO RayJob, which needs 16 at once" in str(err)


@pytest.mark.parametrize(
    ("head", "key", "text"),
    [
        ({"cpu": 16}, "cpu", "16 vCPU does not fit a n2-highmem-16 node"),
        ({"memoryGib": 120}, "memoryGib", "120 GiB does not fit a n2-highmem-16 node"),
    ],
)
def test_a_ray_head_larger_than_a_system_node_is_refused(
    head: dict[str, int], key: str, text: str
) -> None:
    err = error_for(values(ray={"head": head}))
    assert err.key == f"nemo-rl-gke:ray.head.{key}", str(err)
    assert text in str(err)
    # The same head on a larger system node is fine.
    load_stack_config(
        values(ray={"head": head}, cluster={"systemPool": {"machineType": "n2-highmem-32"}}),
        "b200",
    )


def test_a_protection_lift_needs_protect_false() -> None:
    err = error_for(values(protectionLift="lustre-throughput"))
    assert err.key == "nemo-rl-gke:protectionLift"
    assert "does nothing while protect is true" in err.problem
    err = error_for(values(protect=False, protectionLift="Lustre Throughput"))
    assert err.key == "nemo-rl-gke:protectionLift"


def test_a_ray_head_that_fits_a_system_node_counted_in_mib_is_accepted() -> None:
    """n2-highmem-16 has 131072 MiB (Compute Engine's memoryMb): a 110 GiB head fits beside
    the system pods and the log sidecar. Counted as 128 decimal GB it did not."""
    cfg = load_stack_config(values(ray={"head": {"memoryGib": 110}}), "b200")
    assert cfg.ray.head.memory_gib == 110
