"""The NCCL gIB plugin installer: a DaemonSet that puts Google's gIB plugin and the NVIDIA
libraries it needs on every GPU node of the accelerator, for either RDMA path."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from planning.kube import ACCELERATOR_LABEL

INSTALLER = "nccl-rdma-installer"
HOST_NVIDIA_LIB = "/home/kubernetes/bin/nvidia/lib64"
HOST_GIB = "/home/kubernetes/bin/gib"
# The installer image expects the host directories under /usr/local/home/... and copies the
# plugin there; workloads mount the same host paths at /usr/local/nvidia and /usr/local/gib.
INSTALL_SCRIPT = """set -ex
/scripts/container_entry.sh install
cp -r /var/lib/gib/lib64/. /usr/local/home/kubernetes/bin/nvidia/lib64
cp -r /var/lib/gib/. /usr/local/home/kubernetes/bin/gib
echo "gIB NCCL plugin installed"
"""


def gib_installer(
    name: str,
    accelerator_type: str,
    installer_image: str,
    pause_image: str,
    parent: pulumi.Resource,
) -> k8s.apps.v1.DaemonSet:
    """The NCCL gIB plugin DaemonSet on the accelerator's nodes (both RDMA paths use gIB)."""
    labels = {"k8s-app": INSTALLER}
    return k8s.apps.v1.DaemonSet(
        f"{name}-gib-installer",
        metadata={"name": INSTALLER, "namespace": "kube-system", "labels": labels},
        spec={
            "selector": {"match_labels": labels},
            "update_strategy": {"type": "RollingUpdate"},
            "template": {
                "metadata": {"labels": {**labels, "name": INSTALLER}},
                "spec": {
                    "priority_class_name": "system-node-critical",
                    "affinity": {
                        "node_affinity": {
                            "required_during_scheduling_ignored_during_execution": {
                                "node_selector_terms": [
                                    {
                                        "match_expressions": [
                                            {
                                                "key": ACCELERATOR_LABEL,
                                                "operator": "In",
                                                "values": [accelerator_type],
                                            }
                                        ]
                                    }
                                ]
                            }
                        }
                    },
                    "tolerations": [{"operator": "Exists"}],
                    # It never talks to the API server.
                    "automount_service_account_token": False,
                    "security_context": {"seccomp_profile": {"type": "RuntimeDefault"}},
                    "host_network": True,
                    "host_pid": True,
                    "volumes": [
                        {
                            "name": "library-dir-host",
                            "host_path": {"path": HOST_NVIDIA_LIB, "type": "DirectoryOrCreate"},
                        },
                        {"name": "gib", "host_path": {"path": HOST_GIB}},
                    ],
                    "init_containers": [
                        {
                            "name": INSTALLER,
                            "image": installer_image,
                            "resources": {
                                "requests": {"cpu": "150m", "memory": "128Mi"},
                                "limits": {"cpu": "1", "memory": "512Mi"},
                            },
                            # Writes into host paths read by the GPU driver's loader.
                            "security_context": {"privileged": True},
                            "volume_mounts": [
                                {
                                    "name": "library-dir-host",
                                    "mount_path": "/usr/local" + HOST_NVIDIA_LIB,
                                },
                                {"name": "gib", "mount_path": "/usr/local" + HOST_GIB},
                            ],
                            "command": ["/bin/sh", "-c"],
                            "args": [INSTALL_SCRIPT],
                        }
                    ],
                    "containers": [
                        {
                            "name": "pause",
                            "image": pause_image,
                            "resources": {
                                "requests": {"cpu": "10m", "memory": "16Mi"},
                                "limits": {"cpu": "50m", "memory": "32Mi"},
                            },
                            "security_context": {
                                "allow_privilege_escalation": False,
                                "read_only_root_filesystem": True,
                                "run_as_non_root": True,
                                "run_as_user": 65535,
                                "capabilities": {"drop": ["ALL"]},
                                "seccomp_profile": {"type": "RuntimeDefault"},
                            },
                        }
                    ],
                },
            },
        },
        opts=pulumi.ResourceOptions(parent=parent),
    )
