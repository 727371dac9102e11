"""The local control plane's binaries: etcd, Kubernetes, kwok, the KubeRay operator, Kueue, and
Kubernetes' own CronJob validation as a program of its own (testbed/go/kube-validation).

Built from the Go module proxy through our wrapper modules (testbed/go/*), at the versions of
planning/versions.py, and cached like the engine (testbed.gobuild).
"""

from __future__ import annotations

import re
from pathlib import Path

from testbed.gobuild import Piece, build, check_pins, module_dir
from testbed.versions import TESTBED_VERSIONS as VERSIONS

KUBERNETES = VERSIONS.engine_kubernetes.value
_MAJOR, _MINOR = re.match(r"v(\d+)\.(\d+)\.", KUBERNETES).groups()  # type: ignore[union-attr]
_K8S_VERSION = "k8s.io/component-base/version"
# Without these the servers report v0.0.0, and clients that check the server version (the
# pulumi-kubernetes provider among them) refuse to talk to it.
_K8S_LDFLAGS = " ".join(
    [
        f"-X {_K8S_VERSION}.gitVersion={KUBERNETES}",
        f"-X {_K8S_VERSION}.gitMajor={_MAJOR}",
        f"-X {_K8S_VERSION}.gitMinor={_MINOR}",
        f"-X {_K8S_VERSION}.gitTreeState=clean",
    ]
)
KWOK_STAGES = (
    "node/fast/node-initialize.yaml",
    "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
    "pod/fast/pod-ready.yaml",
    "pod/fast/pod-complete.yaml",
    "pod/fast/pod-delete.yaml",
)
"""kwok's own stages, read from its module: nodes become Ready and keep a lease, pods start,
pods owned by a Job complete, deleted pods go away."""


def _kwok_stages(module: Path, out: Path) -> None:  # noqa: ARG001 - a post-build step's signature
    """One kwok config file made of the stages its release ships (nothing copied into git)."""
    source = module_dir(PIECES["kwok"], "sigs.k8s.io/kwok") / "kustomize" / "stage"
    documents = [(source / stage).read_text(encoding="utf-8").strip() for stage in KWOK_STAGES]
    (out / "kwok-stages.yaml").write_text("\n---\n".join(documents) + "\n", encoding="utf-8")


KUEUE = VERSIONS.engine_kueue.value
_KUEUE_LDFLAGS = " ".join(
    [
        # What Kueue's release build sets (Makefile@v0.19.2): the controller logs its version.
        f"-X sigs.k8s.io/kueue/pkg/version.GitVersion={KUEUE}",
        "-X sigs.k8s.io/kueue/pkg/version.GitCommit=8eab68778fc1b52affe165fdf5af29d1e9b4f3cb",
    ]
)
PROVISIONING_REQUEST_MODULE = "k8s.io/autoscaler/cluster-autoscaler/apis"
PROVISIONING_REQUEST_CRD = "autoscaling.x-k8s.io_provisioningrequests.yaml"


def _provisioning_request_crd(module: Path, out: Path) -> None:  # noqa: ARG001 - post-build step
    """The ProvisioningRequest CRD from the cluster autoscaler's API module (the version Kueue
    requires), beside the binary: GKE serves it; the local control plane needs it installed
    before Kueue starts. Nothing copied into git."""
    source = module_dir(PIECES["kueue"], PROVISIONING_REQUEST_MODULE) / "config" / "crd"
    (out / "crds").mkdir(exist_ok=True)
    crd = (source / PROVISIONING_REQUEST_CRD).read_text(encoding="utf-8")
    (out / "crds" / PROVISIONING_REQUEST_CRD).write_text(crd, encoding="utf-8")


PIECES: dict[str, Piece] = {
    "etcd": Piece(name="etcd", binaries={"etcd": "."}),
    "kube-control-plane": Piece(
        name="kube-control-plane",
        binaries={
            name: f"k8s.io/kubernetes/cmd/{name}"
            for name in ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl")
        },
        ldflags=_K8S_LDFLAGS,
    ),
    "kube-validation": Piece(name="kube-validation", binaries={"kube-validation": "."}),
    "kwok": Piece(
        name="kwok",
        binaries={"kwok": "sigs.k8s.io/kwok/cmd/kwok"},
        companions=_kwok_stages,
    ),
    "kuberay": Piece(
        name="kuberay",
        binaries={"ray-operator": "github.com/ray-project/kuberay/ray-operator"},
    ),
    "kueue": Piece(
        name="kueue",
        binaries={"kueue": "sigs.k8s.io/kueue/cmd/kueue"},
        ldflags=_KUEUE_LDFLAGS,
        companions=_provisioning_request_crd,
    ),
}

WRAPPER_PINS: dict[str, dict[str, str]] = {
    "etcd": {"go.etcd.io/etcd/server/v3": VERSIONS.engine_etcd.value},
    "kube-control-plane": {"k8s.io/kubernetes": KUBERNETES},
    "kube-validation": {"k8s.io/kubernetes": KUBERNETES},
    "kwok": {"sigs.k8s.io/kwok": VERSIONS.engine_kwok.value},
    "kuberay": {
        "github.com/ray-project/kuberay/ray-operator": VERSIONS.engine_kuberay_operator.value
    },
    "kueue": {
        "sigs.k8s.io/kueue": KUEUE,
        PROVISIONING_REQUEST_MODULE: VERSIONS.engine_provisioning_request_crd.value,
    },
}
"""What each wrapper's go.mod must require: the version table's pins."""


def build_all(force: bool = False) -> dict[str, Path]:
    """Build (or find cached) every control-plane piece; name -> folder with its binaries."""
    check_pins(WRAPPER_PINS)
    return {name: build(piece, force=force) for name, piece in PIECES.items()}


def main() -> int:
    """`python -m testbed.cluster_pieces`: build the local control plane's binaries."""
    for name, folder in build_all().items():
        print(f"{name}: {folder}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
