"""The one table of pinned versions: GKE minimums, channel, chart, images, driver, CLI.

Every pin carries the source it was read from, so a reviewer can re-check it and so
preflight can print where a number came from. Nothing else in the repository spells a
version string; components and the GPU catalog read them from here. The test bed's own
builds (the engine, the local control plane) are pinned apart, in testbed/versions.py.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal


@dataclass(frozen=True)
class Pin:
    """One pinned version and where it was read."""

    value: str
    source: str


@dataclass(frozen=True)
class VersionTable:
    """All pins the program uses. Attributes are grouped by what they constrain."""

    # --- GKE minimum versions (checked against the cluster's minimum version) ---
    gke_min_a4_rdma: Pin
    gke_min_a3_ultra_rdma: Pin
    gke_min_l4_driver: Pin
    gke_min_flex_start: Pin
    gke_min_dranet: Pin
    gke_min_lustre_port_988: Pin
    gke_min_kubelet_cadvisor_metrics: Pin
    # --- GKE control plane ---
    gke_release_channel: Pin
    gke_cluster_version: Pin
    gke_channel_version: Pin
    # --- GPU driver installed by GKE on the GPU pool ---
    gpu_driver_version: Pin
    # --- In-cluster software ---
    kuberay_chart: Pin
    kuberay_helm_repo: Pin
    kubectl_image: Pin
    gib_installer_image: Pin
    pause_image: Pin
    nemo_rl_image: Pin
    ray_version: Pin
    kueue_chart: Pin
    kueue_chart_repo: Pin
    kueue_image: Pin
    # --- Acceptance gates (planning.verify) ---
    nccl_diagnostic_image: Pin
    fio_image: Pin
    smoke_gate_image: Pin
    # --- Deploy tooling ---
    pulumi_cli: Pin
    uv_minimum: Pin


VERSIONS: Final = VersionTable(
    gke_min_a4_rdma=Pin(
        "1.32.2-gke.1475000",
        "https://docs.cloud.google.com/ai-hypercomputer/docs/create/gke-ai-hypercompute"
        " (Requirements: GPUDirect RDMA on A4)",
    ),
    gke_min_a3_ultra_rdma=Pin(
        "1.31.4-gke.1183000",
        "https://docs.cloud.google.com/ai-hypercomputer/docs/create/gke-ai-hypercompute"
        " (Requirements: GPUDirect RDMA on A3 Ultra)",
    ),
    gke_min_l4_driver=Pin(
        "1.27.2-gke.1200",
        "https://cloud.google.com/kubernetes-engine/docs/how-to/gpus"
        " (automatic driver installation via gpu-driver-version; verify)",
    ),
    gke_min_flex_start=Pin(
        "1.32.2-gke.1652000",
        "https://cloud.google.com/kubernetes-engine/docs/concepts/dws (flex-start for GPUs)",
    ),
    gke_min_dranet=Pin(
        "1.34.1-gke.1829001",
        "https://docs.cloud.google.com/kubernetes-engine/docs/how-to/allocate-network-resources-dra"
        " (GKE installs the mrdma.google.com DeviceClass from this version; Cluster Toolkit's"
        " gke-node-pool dranet_min_version, read 2026-07-01)",
    ),
    gke_min_lustre_port_988=Pin(
        "1.33.2-gke.4780000",
        "the later of two sources: the Lustre CSI driver docs give 1.33.2-gke.4780000 for new"
        " clusters without the legacy port (https://docs.cloud.google.com/kubernetes-engine/docs/"
        "how-to/persistent-volumes/lustre-csi-driver-new-volume), the API field's description"
        " 1.33.2-gke.4655000 for nodes (https://docs.cloud.google.com/python/docs/reference/"
        "container/latest/google.cloud.container_v1.types.LustreCsiDriverConfig)",
    ),
    gke_min_kubelet_cadvisor_metrics=Pin(
        "1.29.3-gke.1093000",
        "pulumi-gcp 10.2.0 ClusterMonitoringConfigArgs.enable_components (the google-beta"
        " provider's docs): KUBELET and CADVISOR are only supported from 1.29.3-gke.1093000",
    ),
    gke_release_channel=Pin(
        "REGULAR",
        "GoogleCloudPlatform/cluster-toolkit:examples/gke-a4/gke-a4.yaml@v1.95.0 (REGULAR)",
    ),
    gke_cluster_version=Pin(
        "1.35",
        "GoogleCloudPlatform/cluster-toolkit:examples/gke-a4/gke-a4.yaml@v1.95.0"
        " (version_prefix 1.35.); covers A4, A3 Ultra, flex-start and Lustre on port 988",
    ),
    gke_channel_version=Pin(
        "1.35.8-gke.1036000",
        "https://docs.cloud.google.com/feeds/gke-regular-channel-release-notes.xml (REGULAR's"
        " default creation version on 2026-09-17); what offline runs assume GKE offers when no"
        " description of the channel's versions is given",
    ),
    gpu_driver_version=Pin(
        "LATEST",
        "NeMo RL v0.7.0 image is CUDA 13.2 (NVIDIA-NeMo/RL:docker/Dockerfile@v0.7.0), needing an"
        " R580-class driver; GKE's DEFAULT driver on 1.35 may be older (verify), LATEST is not",
    ),
    kuberay_chart=Pin(
        "1.7.0",
        "ray-project/kuberay tag v1.7.0, helm-chart/kuberay-operator/Chart.yaml; CRDs in"
        " ../shared/schemas/kuberay-1.7.0",
    ),
    kuberay_helm_repo=Pin(
        "https://ray-project.github.io/kuberay-helm/",
        "ray-project/kuberay:helm-chart/kuberay-operator/README.md@v1.7.0 (helm repo add kuberay)",
    ),
    kubectl_image=Pin(
        "registry.k8s.io/kubectl:v1.35.6"
        "@sha256:4d8c68e8c2bf360b1808927c4d39fb13998c106cac903622d127a2275c844126",
        "Kubernetes' official kubectl image, tag v1.35.6 (the 1.35 control plane's minor) pinned"
        " by the digest public manifests reference for that tag (no registry is reachable from"
        " here: verify with `crane digest registry.k8s.io/kubectl:v1.35.6`); used only to"
        " server-side apply KubeRay's CRDs",
    ),
    gib_installer_image=Pin(
        "us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib:v1.1.1",
        "GoogleCloudPlatform/container-engine-accelerators:gpudirect-rdma/nccl-rdma-installer.yaml"
        " (v1.1.1 since commit 155bfa4, 2026-03-09)",
    ),
    pause_image=Pin(
        "gke.gcr.io/pause:3.8"
        "@sha256:880e63f94b145e46f1b1082bb71b85e21f16b99b180b9996407d61240ceb9830",
        "GoogleCloudPlatform/container-engine-accelerators:gpudirect-rdma/nccl-rdma-installer.yaml",
    ),
    nemo_rl_image=Pin(
        "nvcr.io/nvidia/nemo-rl:v0.7.0",
        "NVIDIA-NeMo/RL README.md@v0.7.0 (released 2026-07-25; CUDA 13.2, ray>=2.55.1)",
    ),
    ray_version=Pin(
        "2.55.1",
        "NVIDIA-NeMo/RL uv.lock@v0.7.0 (commit 81aa43dd): ray 2.55.1 is what the image installs"
        " (its pyproject.toml asks ray[default]>=2.55.1); the RayCluster's rayVersion must equal"
        " it. The engine test bed runs this Ray from PyPI (ray[default]==2.55.1, pyproject.toml's"
        " dev group)",
    ),
    kueue_chart=Pin(
        "0.19.2",
        "kubernetes-sigs/kueue tag v0.19.2 (commit 8eab6877, 2026-08-20), charts/kueue/Chart.yaml;"
        " the newest release the Go module proxy serves (v0.18.x is refused), so the test bed runs"
        " the same controller. Fixes over Cluster Toolkit's 0.17.1: RayJobs on tainted GPU nodes"
        " are no longer evicted in a loop (kueue #11152), RayJob submitter placement (#12644)",
    ),
    kueue_chart_repo=Pin(
        "oci://registry.k8s.io/kueue/charts/kueue",
        "kubernetes-sigs/kueue:charts/kueue/README.md@v0.19.2 (helm install kueue"
        " oci://registry.k8s.io/kueue/charts/kueue --version=0.19.2)",
    ),
    kueue_image=Pin(
        "registry.k8s.io/kueue/kueue:v0.19.2",
        "kubernetes-sigs/kueue:hack/helm-chart-package.sh@v0.19.2: the published chart's"
        " controllerManager.manager.image (the chart folder at the tag names a staging image)."
        " Pinned by tag only: its digest cannot be read here - pin it with `crane digest`",
    ),
    nccl_diagnostic_image=Pin(
        "us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib-diagnostic:v1.1.1",
        "GoogleCloudPlatform/container-engine-accelerators:gpudirect-rdma/nccl-test-a4.yaml and"
        " nccl-test.yaml (commit 155bfa49): the diagnostic image of the gIB release the installer"
        " puts on the nodes (v1.1.1, gib_installer_image); Cluster Toolkit v1.95.0's example uses"
        " v1.1.2. Pinned by tag only: its digest cannot be read here (no registry access) - pin"
        " it with `crane digest` before production use",
    ),
    fio_image=Pin(
        "docker.io/ljishen/fio:3.36",
        "Docker Hub ljishen/fio (Alpine with fio 3.36 and busybox sh/awk), the fio image public"
        " GKE storage benchmarks use; no Google-published fio image exists. Pinned by tag only:"
        " its digest cannot be read here - pin it, or mirror it into your registry",
    ),
    smoke_gate_image=Pin(
        "docker.io/library/python:3.13-slim",
        "Docker Hub's official Python image: the GRPO smoke gate's script needs Python 3's"
        " standard library only (it calls Ray's job API; the run itself uses the NeMo RL image"
        " on the RayCluster). Pinned by tag only: its digest cannot be read here - pin it, or"
        " mirror it into your registry",
    ),
    pulumi_cli=Pin(
        "3.276.0",
        "the release every engine test runs (testbed/versions.py engine_pulumi_cli, built from"
        " github.com/pulumi/pulumi/pkg/v3@v3.276.0): the CLI the workflows install"
        " (pulumi/actions' pulumi-version, which otherwise installs the newest release)",
    ),
    uv_minimum=Pin(
        "0.6.15",
        "github.com/pulumi/pulumi/sdk/v3@v3.276.0 python/toolchain/uv.go (minUvVersion: the"
        " uv toolchain refuses older uv); uv 0.6.15 reads this project's uv.lock (revision 5)"
        " unchanged. pyproject.toml's [tool.uv] required-version",
    ),
)


@dataclass(frozen=True)
class Bulletin:
    """One GKE security bulletin, as recorded when the table was read."""

    cve: str
    name: str
    images: tuple[str, ...]
    status: Literal["PATCHED", "PENDING"]
    patched: Mapping[str, str]
    """Minor (`1.35`) -> the first GKE version of that minor with the fix."""
    bulletin: str


BULLETINS_READ: Final = Pin(
    "2026-06-26",
    "GoogleCloudPlatform/cluster-toolkit:pkg/validators/security-advisories.json@c765092f4d"
    " (CT #5718); https://cloud.google.com/kubernetes-engine/security-bulletins",
)
"""When the table below was read, and where."""
BULLETINS: Final[tuple[Bulletin, ...]] = (
    Bulletin(
        "CVE-2026-31431",
        "Copy Fail",
        ("COS_CONTAINERD",),
        "PATCHED",
        {
            "1.36": "1.36.0-gke.1555000",
            "1.35": "1.35.3-gke.1943000",
            "1.34": "1.34.7-gke.1292000",
            "1.33": "1.33.11-gke.1132000",
            "1.32": "1.32.13-gke.1446000",
            "1.31": "1.31.14-gke.1846000",
            "1.30": "1.30.14-gke.2439000",
        },
        "gcp-2026-026",
    ),
    Bulletin("CVE-2026-43284", "Dirty Frag", ("COS_CONTAINERD",), "PENDING", {}, "gcp-2026-030"),
    Bulletin("CVE-2026-46300", "Fragnesia", ("UBUNTU_CONTAINERD",), "PENDING", {}, "gcp-2026-033"),
)


_GKE_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?(?:-gke\.(\d+))?")


GKE_END_OF_SUPPORT: Final[dict[str, Pin]] = {
    "1.35": Pin(
        "2027-04-11",
        "end of maintenance support of 1.35 (standard support ends 2027-02-28):"
        " https://endoflife.date/google-kubernetes-engine, read 2026-12-05; a third-party"
        " estimate, not confirmed against https://cloud.google.com/kubernetes-engine/docs/release-schedule",
    ),
}
"""When GKE stops supporting a minor (and upgrades what is left on it): a minor-upgrade
maintenance exclusion may last until then and no later. Minors not listed are not judged."""


def parse_gke_version(version: str) -> tuple[int, int, int, int]:
    """Turn `1.32.2-gke.1475000` (or a prefix such as `1.35`) into a sortable tuple.

    A prefix sorts as its lowest member (`1.35` == `1.35.0-gke.0`), which is what a
    minimum-version comparison needs.
    """
    # fullmatch: a `$` would let "1.35\n" through.
    match = _GKE_VERSION.fullmatch(version)
    if match is None:
        raise ValueError(
            f"not a GKE version: {version!r} (expected e.g. 1.35 or 1.32.2-gke.1475000)"
        )
    major, minor, patch, gke = match.groups()
    return (int(major), int(minor), int(patch or 0), int(gke or 0))


def gke_at_least(version: str, minimum: str) -> bool:
    """True when `version` is the same as or newer than `minimum`."""
    return parse_gke_version(version) >= parse_gke_version(minimum)
