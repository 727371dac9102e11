"""GPU workers keep off nodes with host maintenance scheduled (GKE's label)."""

from __future__ import annotations

import json
from pathlib import Path

from preflight.cli import Result
from tests.harness import run_stack, stack_data, variant
from tests.program.test_verify import worker_template


def test_workers_avoid_nodes_with_host_maintenance_scheduled(b200: Result, tmp_path: Path) -> None:
    """Every GPU worker (the RayCluster's, and the queued run's own cluster) requires nodes
    without GKE's scheduled-maintenance label; ray.avoidMaintenance false drops it."""
    expected = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {
                                "key": "cloud.google.com/scheduled-maintenance-time",
                                "operator": "DoesNotExist",
                            }
                        ]
                    }
                ]
            }
        }
    }
    assert worker_template(b200)["spec"]["affinity"] == expected
    manifest = json.loads(b200.run.exports["grpoQueuedRunManifest"].value)
    queued = manifest["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"]["spec"]
    assert queued["affinity"] == expected
    ray = {**stack_data("b200")["config"].get("nemo-rl-gke:ray", {}), "avoidMaintenance": False}
    off = run_stack("b200", tmp_path, variant("b200", {"nemo-rl-gke:ray": ray}))
    assert "affinity" not in worker_template(off)["spec"]
