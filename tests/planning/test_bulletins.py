"""GKE security bulletins against the stack's versions, as Cluster Toolkit's validator judges
them, plus the node image and the table's age."""

from __future__ import annotations

from datetime import date

from planning.bulletins import bulletin_warnings
from planning.versions import BULLETINS_READ, Bulletin, Pin

READ = date.fromisoformat(BULLETINS_READ.value)
TABLE = (
    Bulletin(
        "CVE-1", "Patched", ("COS_CONTAINERD",), "PATCHED", {"1.35": "1.35.3-gke.1943000"}, "b-1"
    ),
    Bulletin("CVE-2", "Ubuntu only", ("UBUNTU_CONTAINERD",), "PENDING", {}, "b-2"),
)


def test_a_version_below_the_fix_of_its_minor_warns_naming_the_key_and_the_fix() -> None:
    (line,) = bulletin_warnings({"gpu.version": "1.35.2-gke.100"}, READ, table=TABLE)
    assert line.startswith("gpu.version 1.35.2-gke.100 is affected by CVE-1 (Patched, b-1)")
    assert "the fix is in 1.35.3-gke.1943000" in line
    assert bulletin_warnings({"gpu.version": "1.35.3-gke.1943000"}, READ, table=TABLE) == []


def test_a_minor_without_a_fix_and_a_prefix_resolved_as_gke_would() -> None:
    (line,) = bulletin_warnings({"cluster.minVersion": "1.34.9-gke.1"}, READ, table=TABLE)
    assert "lists no fix for GKE 1.34" in line
    (line,) = bulletin_warnings(
        {"cluster.minVersion": "1.35"}, READ, {"1.35": "1.35.2-gke.5"}, table=TABLE
    )
    assert line.startswith("cluster.minVersion 1.35 (1.35.2-gke.5 today) is affected")
    assert bulletin_warnings({"cluster.minVersion": "1.35"}, READ, table=TABLE) == []
    assert bulletin_warnings({"gpu.version": None}, READ, table=TABLE) == []


def test_a_pending_bulletin_of_another_node_image_does_not_apply() -> None:
    cos = (Bulletin("CVE-3", "COS", ("COS_CONTAINERD",), "PENDING", {}, "b-3"),)
    (line,) = bulletin_warnings({"gpu.version": "1.35.9-gke.1"}, READ, table=cos)
    assert "no fixed GKE version was published" in line
    assert bulletin_warnings({"gpu.version": "1.35.9-gke.1"}, READ, table=TABLE[1:]) == []


def test_a_stale_table_says_so() -> None:
    read = Pin("2026-01-01", "somewhere")
    assert bulletin_warnings({}, date(2026, 3, 1), table=TABLE, read=read) == []
    (line,) = bulletin_warnings({}, date(2026, 12, 6), table=TABLE, read=read)
    assert "read 339 days ago (2026-01-01)" in line
