"""The kubelet's part for Kueue's controller pod under kwok, done by the test bed agent.

The program installs Kueue from its Helm chart. Under kwok no container runs, so once the
chart's controller Deployment exists the agent runs the real Kueue controller (built from Go
modules, testbed.cluster_pieces) on this host, with the chart's own configuration (its
ConfigMap) and the chart's own permissions (a token of the chart's ServiceAccount), and
reports the pod Ready only once the controller's readiness probe (/readyz) passes, as a
kubelet would: the provider's wait for the Deployment, and so `pulumi up`, wait for the real
controller. Its liveness probe is kept too: a controller whose probe fails the container's
`failureThreshold` times in a row is restarted, as a kubelet restarts the container (Kueue
started before its CRDs are served gives up its manager but keeps running).

What a Service would have done cannot happen here (no kube-proxy; the API server cannot reach
a host process through a Service, and v1.36 refuses loopback endpoints), so the agent does,
and logs, these test-bed actions:

- every webhook of the chart's two webhook configurations and the conversion webhook of its
  CRDs point at https://127.0.0.1:PORT instead of the chart's webhook Service;
- the chart's (empty) certificate Secret is seeded with a serving certificate from the test
  bed's webhook CA (testbed.pki) valid for 127.0.0.1 and the Service's name; Kueue's own
  certificate rotation checks and keeps it, and injects its CA into those webhooks itself;
- the on-demand visibility API is off and its APIServices are removed: the visibility server
  writes its certificate into the pod's /visibility, and an APIService the API server cannot
  reach blocks the deletion of every namespace;
- listeners bind 127.0.0.1 on free ports; leader election keeps the chart's lease name, in
  Kueue's namespace.

When the Deployment goes, the controller is stopped, as its pod would be.
"""

from __future__ import annotations

import base64
import json
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from testbed.host_ports import free_port
from testbed.pki import ensure_webhook_certs
from testbed.processes import Processes

if TYPE_CHECKING:
    from testbed.cluster_network import KubeApi

PROCESS = "kueue"
CONTROLLER_SELECTOR = "app.kubernetes.io/name=kueue,control-plane=controller-manager"
NAME_LABEL = "app.kubernetes.io/name"
CA_NAME = "kueue-ca"
"""The name cert-controller verifies Kueue's CA under (pkg/util/cert/cert.go@v0.19.2)."""
VISIBILITY_APISERVICES = ("v1beta1.visibility.kueue.x-k8s.io", "v1beta2.visibility.kueue.x-k8s.io")
REWIRE_EVERY = 5.0
"""Seconds between checks that the webhooks still point at the controller (a Helm upgrade
writes the chart's Service back)."""

Kubectl = Callable[..., Any]


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def exclude_controller_from_kwok(stages: list[dict[str, Any]]) -> None:
    """Leave Kueue's controller pod out of kwok's pod-ready stage: the agent reports it Ready
    only when the real controller is (see the module docstring)."""
    for stage in stages:
        if stage["metadata"]["name"] == "pod-ready":
            stage["spec"]["selector"].setdefault("matchExpressions", []).append(
                {
                    "key": f'.metadata.labels["{NAME_LABEL}"]',
                    "operator": "NotIn",
                    "values": ["kueue"],
                }
            )


def webhook_url(port: int, path: str) -> str:
    """Where the API server reaches the controller's webhook server."""
    return f"https://127.0.0.1:{port}{path}"


def _repointed(client: dict[str, Any], base: str, port: int) -> list[dict[str, Any]]:
    """JSON patch ops that point one clientConfig at the host's webhook server on `port`: a
    Service (path kept) or an earlier controller's host address (a restarted controller
    listens on new ports)."""
    service = client.get("service")
    if service is not None:
        url = webhook_url(port, service.get("path") or "/")
        return [
            {"op": "remove", "path": f"{base}/service"},
            {"op": "add", "path": f"{base}/url", "value": url},
        ]
    current = str(client.get("url") or "")
    host = "https://127.0.0.1:"
    if not current.startswith(host):
        return []
    rest = current[len(host) :]
    path = rest[rest.index("/") :] if "/" in rest else "/"
    url = webhook_url(port, path)
    return [] if url == current else [{"op": "replace", "path": f"{base}/url", "value": url}]


def rewired_webhooks(configuration: dict[str, Any], port: int) -> list[dict[str, Any]]:
    """JSON patch that points every webhook of a webhook configuration at the host's webhook
    server (paths kept, caBundle kept); empty when nothing is left to change."""
    patch: list[dict[str, Any]] = []
    for index, hook in enumerate(configuration.get("webhooks") or []):
        patch += _repointed(hook.get("clientConfig", {}), f"/webhooks/{index}/clientConfig", port)
    return patch


def rewired_conversion(crd: dict[str, Any], port: int) -> list[dict[str, Any]]:
    """JSON patch that points a CRD's conversion webhook at the host."""
    config = crd.get("spec", {}).get("conversion", {}).get("webhook", {}).get("clientConfig", {})
    if not config:
        return []
    return _repointed(config, "/spec/conversion/webhook/clientConfig", port)


@dataclass(frozen=True)
class Listeners:
    """The controller's loopback ports."""

    health: int
    metrics: int
    webhook: int


def host_configuration(
    chart_config: str, namespace: str, listeners: Listeners, cert_dir: Path
) -> tuple[dict[str, Any], list[str]]:
    """The chart's Configuration with the test bed's changes, and a line per change."""
    config = yaml.safe_load(chart_config)
    changes = []
    config["namespace"] = namespace
    config["health"] = {
        **(config.get("health") or {}),
        "healthProbeBindAddress": f"127.0.0.1:{listeners.health}",
    }
    config["metrics"] = {
        **(config.get("metrics") or {}),
        "bindAddress": f"127.0.0.1:{listeners.metrics}",
    }
    config["webhook"] = {
        **(config.get("webhook") or {}),
        "host": "127.0.0.1",
        "port": listeners.webhook,
        "certDir": str(cert_dir),
    }
    changes.append(
        f"listeners on 127.0.0.1 (health {listeners.health}, metrics {listeners.metrics},"
        f" webhooks {listeners.webhook}) instead of the pod's ports; namespace {namespace}"
        " given explicitly (no service-account file outside a pod)"
    )
    election = config.get("leaderElection") or {}
    if election.get("leaderElect", True):
        config["leaderElection"] = {**election, "resourceNamespace": namespace}
    gates = dict(config.get("featureGates") or {})
    gates["VisibilityOnDemand"] = False
    config["featureGates"] = gates
    changes.append(
        "feature gate VisibilityOnDemand off: the visibility server writes its certificate to"
        " the pod's /visibility, and its APIService cannot be reached from the API server here"
    )
    return config, changes


@dataclass
class Liveness:
    """The controller container's liveness probe, kept as the kubelet keeps it."""

    path: str = "/healthz"
    delay: float = 0.0
    period: float = 10.0
    threshold: int = 3
    started: float = 0.0
    last: float = 0.0
    failures: int = 0
    on: bool = False

    @classmethod
    def of(cls, deployment: dict[str, Any], now: float) -> Liveness:
        """The probe of the Deployment's first container (off when it has none)."""
        containers = deployment["spec"]["template"]["spec"].get("containers") or [{}]
        probe = containers[0].get("livenessProbe") or {}
        if "httpGet" not in probe:
            return cls(started=now)
        return cls(
            path=str(probe["httpGet"].get("path", "/")),
            delay=float(probe.get("initialDelaySeconds", 0)),
            period=float(probe.get("periodSeconds", 10)),
            threshold=int(probe.get("failureThreshold", 3)),
            started=now,
            last=now,
            on=True,
        )

    def failed(self, now: float, probe: Callable[[], bool]) -> bool:
        """Probe when a period has passed (after the initial delay); True once the failures in
        a row reach the threshold."""
        if not self.on or now - self.started < self.delay or now - self.last < self.period:
            return False
        self.last = now
        self.failures = 0 if probe() else self.failures + 1
        return self.failures >= self.threshold


class KueueHost:
    """Runs the real Kueue controller for the chart's Deployment, and plays its pod."""

    def __init__(
        self,
        root: Path,
        binary: str,
        server: str,
        api_ca: Path,
        kubectl: Kubectl,
        say: Callable[[str], None],
        api: KubeApi | None = None,
    ) -> None:
        self.root = root / "kueue"
        self.api = api
        """Where the agent's API client is given, each round's listings are GETs, not kubectl."""
        self.binary = binary
        self.server = server
        self.api_ca = api_ca
        self.kubectl = kubectl
        self.say = say
        self.processes = Processes(root)
        self.deployment: tuple[str, str, str] | None = None
        """(namespace, name, config checksum) of the Deployment the running controller serves."""
        self.listeners: Listeners | None = None
        self.ready = False
        self.last_rewire = 0.0
        self.liveness = Liveness()

    # --- the loop ----------------------------------------------------------------------------

    def step(self, now: float) -> None:
        """One pass of the agent's loop."""
        deployment = self._deployment()
        if deployment is None:
            if self.deployment is not None or self.processes.alive(PROCESS):
                # Said once the controller is down: the teardown test reads this line as
                # "the controller went with its Deployment" (stopping may take seconds).
                self.stop()
                self.say("Kueue's controller Deployment is gone: its controller is stopped")
            return
        key = (
            deployment["metadata"]["namespace"],
            deployment["metadata"]["name"],
            deployment["spec"]["template"]["metadata"]
            .get("annotations", {})
            .get("charts.kueue.x-k8s.io/config-checksum", ""),
        )
        if self.deployment is not None and self.liveness.failed(now, self.alive_probe):
            self.say(
                f"Kueue's controller failed its liveness probe ({self.liveness.path})"
                f" {self.liveness.threshold} times: restarting its container, as the kubelet does"
            )
            self.stop()
        if self.deployment != key or not self.processes.alive(PROCESS):
            if self.deployment is not None:
                self.say("Kueue's Deployment changed (or its controller ended): restarting it")
                self.stop()
            if not self.start(deployment):
                return  # the chart's ConfigMap is not there yet: next pass
            self.deployment = key
            self.last_rewire = now
            self.liveness = Liveness.of(deployment, now)
        elif now - self.last_rewire > REWIRE_EVERY:
            self.rewire(key[0], key[1].removesuffix("-controller-manager"))
            self.last_rewire = now
        self.report_pods(key[0], deployment)

    def stop(self) -> None:
        """Stop the controller (by pid) and forget the Deployment."""
        if self.processes.alive(PROCESS) or (self.processes.pids / f"{PROCESS}.pid").exists():
            self.say(self.processes.stop(PROCESS, timeout=10))
        self.deployment = None
        self.listeners = None
        self.ready = False

    # --- starting the controller ---------------------------------------------------------------

    def _listed(
        self, kind: str, path: str, selector: str, *where: str
    ) -> list[dict[str, Any]] | None:
        """Objects with the label selector (None when the API server did not answer)."""
        if self.api is not None:
            return self.api.labelled(path, selector)
        proc = self.kubectl("get", kind, *where, "-l", selector, "-o", "json")
        if proc.returncode != 0:
            return None
        return list(json.loads(proc.stdout).get("items", []))

    def _deployment(self) -> dict[str, Any] | None:
        found = self._listed("deployments", "/apis/apps/v1/deployments", CONTROLLER_SELECTOR, "-A")
        if found is None:
            return None
        return found[0] if found else None

    def start(self, deployment: dict[str, Any]) -> bool:
        """Configure, seed and wire everything the pod's environment would give, then start;
        False when the chart's ConfigMap is not there yet."""
        namespace = deployment["metadata"]["namespace"]
        fullname = deployment["metadata"]["name"].removesuffix("-controller-manager")
        pod = deployment["spec"]["template"]["spec"]
        volumes = {v["name"]: v for v in pod.get("volumes", [])}
        config_map = volumes["manager-config"]["configMap"]["name"]
        proc = self.kubectl("get", "configmap", config_map, "-n", namespace, "-o", "json")
        if proc.returncode != 0:
            return False
        chart_config = json.loads(proc.stdout)["data"]["controller_manager_config.yaml"]
        self.root.mkdir(parents=True, exist_ok=True)
        cert_dir = self.root / "serving-certs"
        self.listeners = Listeners(free_port(), free_port(), free_port())
        config, changes = host_configuration(chart_config, namespace, self.listeners, cert_dir)
        internal = config.get("internalCertManagement") or {}
        service = internal.get("webhookServiceName", f"{fullname}-webhook-service")
        secret = internal.get("webhookSecretName", f"{fullname}-webhook-server-cert")
        self.seed_certificates(namespace, service, secret, cert_dir)
        self.rewire(namespace, fullname)
        kubeconfig = self.service_account_kubeconfig(namespace, pod["serviceAccountName"])
        config_file = self.root / "controller_manager_config.yaml"
        config_file.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
        args = [
            a for a in deployment["spec"]["template"]["spec"]["containers"][0].get("args", [])
            if not a.startswith("--config=")
        ]  # fmt: skip
        pid = self.processes.start(
            PROCESS,
            [self.binary, f"--config={config_file}", f"--kubeconfig={kubeconfig}", *args],
            env={"PATH": "/usr/bin:/bin", "HOME": str(self.root)},
        )
        self.ready = False
        for change in changes:
            self.say(f"Kueue (test-bed action): {change}")
        self.say(
            f"started the real Kueue controller on this host (pid {pid}) for Deployment"
            f" {namespace}/{deployment['metadata']['name']}, with the chart's ConfigMap"
            f" {config_map} and the permissions of ServiceAccount {pod['serviceAccountName']}"
        )
        return True

    def seed_certificates(self, namespace: str, service: str, secret: str, cert_dir: Path) -> None:
        """Put the test bed's webhook certificate into the chart's Secret and where the pod
        would have it mounted."""
        certs = ensure_webhook_certs(
            self.root / "pki",
            CA_NAME,
            [f"{service}.{namespace}.svc", f"{service}.{namespace}.svc.cluster.local"],
        )
        data = {
            "ca.crt": certs.ca_cert,
            "ca.key": certs.ca_key,
            "tls.crt": certs.cert,
            "tls.key": certs.key,
        }
        encoded = {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}
        patched = self.kubectl(
            "patch",
            "secret",
            secret,
            "-n",
            namespace,
            "--type=merge",
            "-p",
            json.dumps({"data": encoded}),
        )
        if patched.returncode != 0:
            self.say(f"could not seed Secret {namespace}/{secret}: {patched.stderr.strip()}")
            return
        cert_dir.mkdir(parents=True, exist_ok=True)
        for name in ("tls.crt", "tls.key"):
            path = cert_dir / name
            path.write_text(data[name], encoding="utf-8")
            path.chmod(0o600)
        self.say(
            f"seeded Secret {namespace}/{secret} with a serving certificate for 127.0.0.1 and"
            f" {service}.{namespace}.svc from the test bed's webhook CA (test-bed action; in a"
            " pod Kueue would make its own, for the Service name only)"
        )

    def service_account_kubeconfig(self, namespace: str, account: str) -> Path:
        """A kubeconfig with a token of the chart's ServiceAccount (what the pod would mount)."""
        token = self.kubectl("create", "token", account, "-n", namespace, "--duration=48h")
        ca = base64.b64encode(self.api_ca.read_bytes()).decode()
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "local",
                    "cluster": {"server": self.server, "certificate-authority-data": ca},
                }
            ],
            "users": [{"name": account, "user": {"token": token.stdout.strip()}}],
            "contexts": [{"name": "local", "context": {"cluster": "local", "user": account}}],
            "current-context": "local",
        }
        path = self.root / "kubeconfig"
        path.write_text(yaml.safe_dump(config), encoding="utf-8")
        path.chmod(0o600)
        return path

    def rewire(self, namespace: str, fullname: str) -> None:
        """Point the chart's webhooks and CRD conversion at the host (when they are not yet),
        and remove the visibility APIServices (a Helm upgrade brings all of them back)."""
        if self.listeners is None:
            return
        for apiservice in VISIBILITY_APISERVICES:
            removed = self.kubectl("delete", "apiservice", apiservice, "--ignore-not-found")
            if removed.stdout.strip():
                self.say(
                    f"removed APIService {apiservice} (test-bed action): nothing here can serve"
                    " it, and an unavailable APIService blocks every namespace's deletion"
                )
        port = self.listeners.webhook
        for kind in ("mutatingwebhookconfiguration", "validatingwebhookconfiguration"):
            name = f"{fullname}-{kind.removesuffix('webhookconfiguration')}-webhook-configuration"
            found = self.kubectl("get", kind, name, "-o", "json")
            if found.returncode != 0:
                continue
            patch = rewired_webhooks(json.loads(found.stdout), port)
            if patch:
                done = self.kubectl("patch", kind, name, "--type=json", "-p", json.dumps(patch))
                self.say(
                    f"pointed the {len(patch) // 2} webhooks of {name} at"
                    f" {webhook_url(port, '/...')} instead of Service {namespace}/"
                    f"{fullname}-webhook-service (test-bed action)"
                    + ("" if done.returncode == 0 else f": FAILED {done.stderr.strip()}")
                )
        # Only the conversion paths, not the CRDs (the Workload CRD alone is 1.4 MB).
        listing = self.kubectl(
            "get", "crd", "-l", f"{NAME_LABEL}=kueue", "-o",
            "jsonpath={range .items[*]}{.metadata.name} "
            '{.spec.conversion.webhook.clientConfig.service.path}{"\\n"}{end}',
        )  # fmt: skip
        if listing.returncode != 0:
            return
        for line in listing.stdout.splitlines():
            name, _, path = line.strip().partition(" ")
            if not path:
                continue
            crd = {
                "spec": {"conversion": {"webhook": {"clientConfig": {"service": {"path": path}}}}}
            }
            patch = rewired_conversion(crd, port)
            done = self.kubectl("patch", "crd", name, "--type=json", "-p", json.dumps(patch))
            self.say(
                f"pointed CRD {name}'s conversion webhook at {webhook_url(port, path)}"
                " (test-bed action)"
                + ("" if done.returncode == 0 else f": FAILED {done.stderr.strip()}")
            )

    # --- the pod's status --------------------------------------------------------------------

    def alive_probe(self) -> bool:
        """The controller's liveness probe, as the kubelet would call it."""
        return self.probe(self.liveness.path)

    def probe(self, path: str = "/readyz") -> bool:
        """The controller's readiness probe (/readyz), as the kubelet would call it."""
        if self.listeners is None:
            return False
        url = f"http://127.0.0.1:{self.listeners.health}{path}"
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                return bool(response.status == 200)
        except OSError:
            return False

    def report_pods(self, namespace: str, deployment: dict[str, Any]) -> None:
        """Write the controller pods' status: Running, Ready once /readyz passes."""
        ready = self.probe()
        if ready and not self.ready:
            self.say("Kueue's controller is ready (/readyz): reporting its pod Ready")
        self.ready = ready
        selector = ",".join(
            f"{k}={v}" for k, v in deployment["spec"]["selector"]["matchLabels"].items()
        )
        pods = self._listed(
            "pods", f"/api/v1/namespaces/{namespace}/pods", selector, "-n", namespace
        )
        for pod in pods or []:
            if not pod["spec"].get("nodeName") or pod["metadata"].get("deletionTimestamp"):
                continue
            status = pod.get("status", {})
            shown = {c["type"]: c["status"] for c in status.get("conditions", [])}
            want = "True" if ready else "False"
            if status.get("phase") == "Running" and shown.get("Ready") == want:
                continue
            self._write_status(pod, ready)

    def _write_status(self, pod: dict[str, Any], ready: bool) -> None:
        started = pod.get("status", {}).get("startTime") or _now()
        flag = "True" if ready else "False"
        containers = [
            {
                "name": c["name"],
                "image": c["image"],
                "imageID": "",
                "ready": ready,
                "started": True,
                "restartCount": 0,
                "state": {"running": {"startedAt": started}},
            }
            for c in pod["spec"]["containers"]
        ]
        conditions = [
            {"type": kind, "status": value, "lastTransitionTime": _now()}
            for kind, value in (
                ("PodReadyToStartContainers", "True"),
                ("Initialized", "True"),
                ("Ready", flag),
                ("ContainersReady", flag),
                ("PodScheduled", "True"),
            )
        ]
        status = {
            "status": {
                "phase": "Running",
                "conditions": conditions,
                "containerStatuses": containers,
                "hostIP": "127.0.0.1",
                # The controller listens on this host's loopback; kwok's pod range is loopback too.
                "podIP": "127.0.0.1",
                "startTime": started,
            }
        }
        name, namespace = pod["metadata"]["name"], pod["metadata"]["namespace"]
        proc = self.kubectl(
            "patch", "pod", name, "-n", namespace, "--subresource=status", "--type=merge",
            "-p", json.dumps(status),
        )  # fmt: skip
        if proc.returncode != 0:
            self.say(f"could not set the status of pod {namespace}/{name}: {proc.stderr.strip()}")
