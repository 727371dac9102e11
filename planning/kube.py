"""Pure builders for Kubernetes-facing values: kubeconfig, multi-NIC annotation, gIB env."""

from __future__ import annotations

import json
from collections.abc import Sequence

GKE_AUTH_PLUGIN = "gke-gcloud-auth-plugin"
INTERFACES_ANNOTATION = "networking.gke.io/interfaces"
DEFAULT_INTERFACE_ANNOTATION = "networking.gke.io/default-interface"
POD_NETWORK = "default"
"""Name of GKE's built-in pod network (eth0)."""
GPU_TAINT_KEY = "nvidia.com/gpu"
SCHEDULED_MAINTENANCE_LABEL = "cloud.google.com/scheduled-maintenance-time"
"""GKE's label on GPU nodes (from 1.31.1-gke.2008000) with the start of a scheduled host
maintenance, Unix seconds; absent when none is scheduled. GPUs do not live-migrate: the node
and its pods end when it starts."""


def avoid_maintenance_affinity(clear_until: int | None = None) -> dict[str, object]:
    """Required node affinity of a GPU worker: no node with host maintenance scheduled, or, given
    `clear_until` (Unix seconds: when a run submitted now is expected to end), also a node whose
    maintenance starts after then. Node affinity compares a label with fixed numbers only, so
    the time comes with a submission (planning.queue_submit); what the stack creates itself asks
    for nodes without any. Evaluated at scheduling only: a running worker stays where it is."""
    terms: list[dict[str, object]] = [
        {"matchExpressions": [{"key": SCHEDULED_MAINTENANCE_LABEL, "operator": "DoesNotExist"}]}
    ]
    if clear_until is not None:
        # Terms are ORed: no maintenance, or maintenance that starts after the run.
        terms.append(
            {
                "matchExpressions": [
                    {
                        "key": SCHEDULED_MAINTENANCE_LABEL,
                        "operator": "Gt",
                        "values": [str(clear_until)],
                    }
                ]
            }
        )
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
        }
    }


ACCELERATOR_LABEL = "cloud.google.com/gke-accelerator"


def exec_kubeconfig(cluster: str, endpoint: str, ca_certificate: str | None) -> str:
    """A kubeconfig that authenticates through `gke-gcloud-auth-plugin` at call time.

    No token or client certificate is embedded, so the kubeconfig (and Pulumi state) holds
    nothing that grants access by itself; whoever runs Pulumi needs their own gcloud login.
    `ca_certificate` None: the endpoint is GKE's DNS-based one, served with a publicly trusted
    certificate (`gcloud container clusters get-credentials --dns-endpoint` writes no CA
    either); the cluster CA signs only the IP endpoints' certificate.
    """
    server: dict[str, str] = {"server": f"https://{endpoint}"}
    if ca_certificate is not None:
        server["certificate-authority-data"] = ca_certificate
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster, "cluster": server}],
        "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": cluster}}],
        "current-context": cluster,
        "users": [
            {
                "name": cluster,
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1beta1",
                        "command": GKE_AUTH_PLUGIN,
                        "installHint": "Install gke-gcloud-auth-plugin:"
                        " gcloud components install gke-gcloud-auth-plugin",
                        "provideClusterInfo": True,
                        "interactiveMode": "Never",
                    }
                },
            }
        ],
    }
    return json.dumps(config, indent=2)


def interfaces_annotation(networks: Sequence[str]) -> str:
    """`networking.gke.io/interfaces` value: eth0 on the pod network, then one per Network.

    The order is the NIC order: eth1 = the gVNIC Network, eth2.. = rdma-0.. (tutorial §7).
    """
    entries = [{"interfaceName": "eth0", "network": POD_NETWORK}]
    entries += [
        {"interfaceName": f"eth{i + 1}", "network": name} for i, name in enumerate(networks)
    ]
    return json.dumps(entries, separators=(",", ":"))


def get_credentials_command(
    cluster: str, location: str, project: str, dns_endpoint: bool = False
) -> str:
    """The gcloud command that writes a kubeconfig entry for the cluster (on its DNS name when
    the stack reaches the control plane there)."""
    command = (
        f"gcloud container clusters get-credentials {cluster} --location {location}"
        f" --project {project}"
    )
    return f"{command} --dns-endpoint" if dns_endpoint else command
