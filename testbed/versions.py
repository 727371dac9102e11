"""The test bed's pinned versions: what `make engine` and `make local-cluster-build` build.

Nothing here is deployed: these are the Pulumi engine, the providers and the control-plane
pieces the engine tests run, built from Go modules. They live apart from the platform's table
(planning/versions.py) so that a product pin and a test-bed pin are never confused; the one
link between them (the CLI the workflows install is the engine the tests build) is checked
by tests/test_workflows.py. Each pin carries the source it was read from.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from planning.versions import Pin


@dataclass(frozen=True)
class TestBedVersions:
    """The test bed's pins, by what they build."""

    __test__ = False  # not a pytest test class, whatever its name says

    engine_pulumi_cli: Pin
    engine_kubernetes_provider: Pin
    engine_kubernetes_provider_module: Pin
    engine_gcp_provider: Pin
    engine_kubernetes: Pin
    engine_etcd: Pin
    engine_kwok: Pin
    engine_kuberay_operator: Pin
    engine_kueue: Pin
    engine_provisioning_request_crd: Pin


TESTBED_VERSIONS: Final = TestBedVersions(
    engine_pulumi_cli=Pin(
        "v3.276.0",
        "github.com/pulumi/pulumi/pkg/v3@v3.276.0 on the Go module proxy (v3.270.0 is not"
        " served); the test bed's language host front end builds on sdk/v3 of the same release",
    ),
    engine_kubernetes_provider=Pin(
        "4.25.0",
        "pulumi/pulumi-kubernetes tag v4.25.0 (commit f47bc2d6f199): the only release commit whose"
        " provider/v4 module the proxy serves (v4.26.0-v4.32.0 answer 403); the Python SDK is"
        " pinned to the same release because the engine loads a provider only at that version",
    ),
    engine_kubernetes_provider_module=Pin(
        "v4.0.0-20260115033456-f47bc2d6f199",
        "pseudo-version of tag v4.25.0 for github.com/pulumi/pulumi-kubernetes/provider/v4",
    ),
    engine_gcp_provider=Pin(
        "10.2.0",
        "pulumi-gcp in uv.lock; the test bed installs a stand-in plugin at this version because the"
        " bridged provider cannot be built from the proxy (testbed/gcp_standin)",
    ),
    engine_kubernetes=Pin(
        "v1.36.3",
        "k8s.io/kubernetes@v1.36.3 on the Go module proxy (staging modules at v0.36.3)",
    ),
    engine_etcd=Pin(
        "v3.6.8",
        "go.etcd.io/etcd/server/v3, the release k8s.io/kubernetes@v1.36.3 pins in its go.mod",
    ),
    engine_kwok=Pin("v0.8.0", "sigs.k8s.io/kwok@v0.8.0 on the Go module proxy"),
    engine_kuberay_operator=Pin(
        "v1.6.2",
        "github.com/ray-project/kuberay/ray-operator: v1.7.0 (tag ray-operator/v1.7.0, commit"
        " 59d663ae) answers 403 on the proxy; v1.6.2 is the newest release it serves. The chart"
        " and CRDs stay 1.7.0",
    ),
    engine_kueue=Pin(
        "v0.19.2",
        "sigs.k8s.io/kueue@v0.19.2 on the Go module proxy (main package cmd/kueue; v0.18.x answers"
        " 403), the release of kueue_chart",
    ),
    engine_provisioning_request_crd=Pin(
        "v0.0.0-20240830133931-adfbe7e45277",
        "k8s.io/autoscaler/cluster-autoscaler/apis, the version sigs.k8s.io/kueue@v0.19.2 requires:"
        " its config/crd ProvisioningRequest CRD, which GKE serves itself, for the test bed only",
    ),
)
