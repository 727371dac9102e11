"""The policy pack's contents, importable without starting the analyzer."""

from __future__ import annotations

from pathlib import Path
from typing import Final

import yaml
from pulumi_policy import EnforcementLevel, Policy

from policies.data_protection import (
    bucket_no_force_destroy,
    lustre_pv_retain,
    protect_stateful_resources,
)
from policies.firewall import (
    firewall_gvnic_internal,
    firewall_lustre_psa_only,
    firewall_none_on_roce,
    gke_authorized_networks,
    no_world_ingress,
)
from policies.gpu_pool import (
    compact_placement_single_zone,
    gpu_capacity_sold,
    gpu_machine_accelerator,
    gpu_pool_dranet,
    gpu_pool_nics,
    rdma_network_profile,
)
from policies.job_queue import gpu_workloads_queued, queue_gpu_quota
from policies.quota import gpu_quota, gpu_reservation_size, lustre_capacity_quota
from policies.security import (
    gke_cluster_hardening,
    gke_no_legacy_auth,
    gke_node_hardening,
    gke_node_service_account,
    gke_private_nodes,
    gke_shielded_nodes,
    gke_workload_identity,
    k8s_secrets_by_reference,
    subnet_flow_logs,
)

PACK_NAME: Final = "nemo-rl-gke-guardrails"
PACK_VERSION: Final[str] = str(
    yaml.safe_load((Path(__file__).with_name("PulumiPolicy.yaml")).read_text(encoding="utf-8"))[
        "version"
    ]
)
"""The version the CLI reports for the pack: PulumiPolicy.yaml's (the Python analyzer itself
always answers 0.0.1 and the CLI ignores that)."""
PACK_ENFORCEMENT_LEVEL: Final = EnforcementLevel.ADVISORY
"""Level for a policy that sets none; every policy here sets its own."""

POLICIES: Final[list[Policy]] = [
    # quota
    gpu_quota,
    gpu_reservation_size,
    lustre_capacity_quota,
    # job queue
    gpu_workloads_queued,
    queue_gpu_quota,
    # firewall and exposure
    no_world_ingress,
    firewall_none_on_roce,
    firewall_gvnic_internal,
    firewall_lustre_psa_only,
    gke_authorized_networks,
    # GPU topology
    rdma_network_profile,
    gpu_pool_dranet,
    gpu_pool_nics,
    gpu_machine_accelerator,
    gpu_capacity_sold,
    compact_placement_single_zone,
    # security baseline
    gke_workload_identity,
    gke_private_nodes,
    gke_shielded_nodes,
    gke_no_legacy_auth,
    gke_node_service_account,
    gke_node_hardening,
    gke_cluster_hardening,
    subnet_flow_logs,
    k8s_secrets_by_reference,
    # data protection
    protect_stateful_resources,
    lustre_pv_retain,
    bucket_no_force_destroy,
]
