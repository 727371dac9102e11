"""GPU catalog and version table, cross-checked against tutorial-facts.md and platform-facts.md."""

from __future__ import annotations

import pytest

from planning.catalog import GPU_CATALOG, profile_for_accelerator
from planning.versions import VERSIONS, gke_at_least, parse_gke_version
from policies.quota import metric_for


def test_b200_row_matches_the_tutorial() -> None:
    row = GPU_CATALOG["b200"]
    # tutorial-facts §1 (S1 table) and §5: a4-highgpu-8g / nvidia-b200, count=8
    assert (row.machine_type, row.accelerator_type, row.gpus_per_node) == (
        "a4-highgpu-8g",
        "nvidia-b200",
        8,
    )
    # §3.2: eight RDMA subnets, one per NIC; platform-facts §d: tuner_config_a4.txtpb
    assert row.rdma_nics == 8
    assert row.nccl_tuner_config == "tuner_config_a4.txtpb"
    assert row.quota_metric == "NVIDIA_B200_GPUS"
    assert "on-demand" not in row.capacity_types


def test_h200_row_matches_the_tutorial() -> None:
    row = GPU_CATALOG["h200"]
    assert (row.machine_type, row.accelerator_type) == ("a3-ultragpu-8g", "nvidia-h200-141gb")
    assert row.nccl_tuner_config == "tuner_config_a3u.txtpb"
    # platform-facts §c: A3 Ultra node pools must use hyperdisk-balanced
    assert row.boot_disk_type == "hyperdisk-balanced"
    assert row.min_gke_version == "1.31.4-gke.1183000"


def test_l4_row_is_a_single_nic_dev_shape() -> None:
    row = GPU_CATALOG["l4"]
    assert row.machine_type.startswith("g2-standard-")
    assert row.accelerator_type == "nvidia-l4"
    assert (row.rdma_nics, row.host_nics, row.nccl_tuner_config) == (0, 1, None)


@pytest.mark.parametrize(
    ("preemptible", "metric"),
    [(False, "NVIDIA_B200_GPUS"), (True, "PREEMPTIBLE_NVIDIA_B200_GPUS")],
)
def test_quota_metric_from_the_catalog(preemptible: bool, metric: str) -> None:
    # reservations use the on-demand metric; Spot and flex-start the PREEMPTIBLE_ one
    assert metric_for("nvidia-b200", preemptible) == metric


def test_reverse_lookup() -> None:
    assert profile_for_accelerator("nvidia-h200-141gb") is GPU_CATALOG["h200"]
    assert profile_for_accelerator("nvidia-tesla-t4") is None


def test_every_pin_has_a_source() -> None:
    for name, pin in vars(VERSIONS).items():
        assert pin.value, name
        assert len(pin.source) > 10, f"{name} needs a source"


def test_gke_versions_compare_numerically() -> None:
    assert parse_gke_version("1.32.2-gke.1475000") == (1, 32, 2, 1475000)
    assert gke_at_least("1.33.2-gke.4655000", "1.32.2-gke.1475000")
    assert gke_at_least("1.35", VERSIONS.gke_min_lustre_port_988.value)
    assert not gke_at_least("1.31.9-gke.999", "1.32.2-gke.1475000")
    # numeric, not lexical: gke.900 < gke.1000
    assert gke_at_least("1.32.2-gke.1000", "1.32.2-gke.900")
    with pytest.raises(ValueError, match="not a GKE version"):
        parse_gke_version("latest")
    # Matched whole: a `$` anchor would let a trailing newline through.
    with pytest.raises(ValueError, match="not a GKE version"):
        parse_gke_version("1.35\n")


def test_cluster_version_covers_every_catalog_minimum() -> None:
    for row in GPU_CATALOG.values():
        assert gke_at_least(VERSIONS.gke_cluster_version.value, row.min_gke_version), row.key
    assert gke_at_least(VERSIONS.gke_cluster_version.value, VERSIONS.gke_min_flex_start.value)
