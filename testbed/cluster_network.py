"""The test bed's cluster network: cluster DNS names and Services for clients on this host.

There is no cluster DNS and no kube-proxy here, and pods run as processes of this host
(testbed.ray_pods). Two kinds of clients use a Service by its cluster DNS name:

- HTTP clients: the KubeRay operator's dashboard client (Go's `http.Client` with the default
  transport, which honours HTTP_PROXY for every host that is not loopback; ray-operator v1.6.2
  `controllers/ray/utils/util.go`) and the GRPO smoke gate's urllib (which honours HTTP_PROXY too).
  They get this module's forward proxy as HTTP_PROXY: a stand-in for cluster DNS + the Service.
- Ray's own `--address=<service>...:6379` in a worker's command: Ray opens gRPC to it with proxies
  off, so testbed.ray_pods writes the address this module resolves into the command (logged).

A name `<service>.<namespace>.svc.cluster.local:<port>` resolves as DNS and kube-proxy would: the
Service's port, its target port, a Ready pod its selector matches, then that pod's host port in the
test bed. (The real endpoint slice controller cannot do that part here: the API server refuses
loopback addresses in EndpointSlices, and the test bed's pods have nothing else.)
Every name is logged with what it resolved to, saying it is a stand-in; every answer carries an
`X-Test-Bed` header naming it.
"""

from __future__ import annotations

import base64
import http.client
import json
import re
import ssl
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

STANDIN = "test bed stand-in for cluster DNS and Services"
SERVICE_NAME = re.compile(
    r"([a-z0-9]([-a-z0-9]*[a-z0-9])?)\.([a-z0-9-]+)\.svc(?:\.cluster\.local)?"
)
HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailers",
    "transfer-encoding",
    "upgrade",
}
CACHE_SECONDS = 2.0


class KubeApi:
    """GETs against the local API server as the admin (faster than kubectl: KubeRay's dashboard
    client gives every request 2 s, resolution included)."""

    def __init__(self, kubeconfig: Path) -> None:
        config = yaml.safe_load(kubeconfig.read_text(encoding="utf-8"))
        cluster = config["clusters"][0]["cluster"]
        self.server = str(cluster["server"]).rstrip("/")
        ca = base64.b64decode(cluster["certificate-authority-data"])
        with tempfile.NamedTemporaryFile("wb", suffix=".crt", delete=False) as handle:
            handle.write(ca)
        self.context = ssl.create_default_context(cafile=handle.name)
        Path(handle.name).unlink()
        self.token = str(config["users"][0]["user"]["token"])

    def get(self, path: str) -> dict[str, Any] | None:
        """A JSON object, or None when it does not exist."""
        request = urllib.request.Request(  # noqa: S310 - the local API server, from kubeconfig
            self.server + path, headers={"Authorization": f"Bearer {self.token}"}
        )
        try:
            with urllib.request.urlopen(request, timeout=5, context=self.context) as answer:  # noqa: S310
                found: dict[str, Any] = json.loads(answer.read())
                return found
        except urllib.error.HTTPError as missing:
            if missing.code == 404:
                return None
            raise

    def items(self, path: str) -> list[dict[str, Any]]:
        """The items of a list."""
        found = self.get(path)
        return list(found.get("items", [])) if found else []

    def labelled(self, path: str, selector: str) -> list[dict[str, Any]] | None:
        """The items of a list under `path` (all namespaces) with the label selector, or None
        when the API server did not answer (a poll tries again next round). The test bed's
        loops poll every second: a GET here costs a few milliseconds, a kubectl run about 50."""
        query = urllib.parse.urlencode({"labelSelector": selector})
        try:
            return self.items(f"{path}?{query}")
        except (OSError, ValueError):
            return None


class ClusterNetwork:
    """Resolves Service names to the pods' host addresses; serves the forward proxy."""

    def __init__(
        self,
        api: KubeApi,
        say: Callable[[str], None],
        host_port: Callable[[str, int], int | None],
    ) -> None:
        self.api = api
        self.say = say
        self.host_port = host_port
        """(pod IP, container port) -> the host port the test bed gave it (None: nobody there)."""
        self.url = ""
        self._server: ThreadingHTTPServer | None = None
        self._cache: dict[tuple[str, int], tuple[float, tuple[str, int] | None]] = {}
        self._logged: set[tuple[str, int, str]] = set()
        self._lock = threading.Lock()

    def resolve(self, host: str, port: int) -> tuple[str, int] | None:
        """(IP, host port) behind `<service>.<namespace>.svc...:<port>`; None while the Service has
        no ready endpoint (or when `host` is not a Service name)."""
        match = SERVICE_NAME.fullmatch(host)
        if match is None:
            return None
        key = (host, port)
        with self._lock:
            cached = self._cache.get(key)
        if cached and time.monotonic() - cached[0] < CACHE_SECONDS:
            return cached[1]
        found = self._resolve(match.group(1), match.group(3), port)
        with self._lock:
            self._cache[key] = (time.monotonic(), found)
        if found is not None and (host, port, found[0]) not in self._logged:
            self._logged.add((host, port, found[0]))
            self.say(
                f"cluster network ({STANDIN}): {host}:{port} -> {found[0]}:{found[1]}"
                " (the Service's ready endpoint, at the port the test bed gave that pod)"
            )
        return found

    def _resolve(self, service: str, namespace: str, port: int) -> tuple[str, int] | None:
        spec = self.api.get(f"/api/v1/namespaces/{namespace}/services/{service}")
        if spec is None:
            return None
        ports = [p for p in spec["spec"].get("ports", []) if int(p["port"]) == port]
        selector = spec["spec"].get("selector") or {}
        if not ports or not selector:
            return None
        target = ports[0].get("targetPort", port)
        labels = urllib.parse.quote(",".join(f"{k}={v}" for k, v in sorted(selector.items())))
        for pod in self.api.items(f"/api/v1/namespaces/{namespace}/pods?labelSelector={labels}"):
            ip = pod.get("status", {}).get("podIP")
            conditions = pod.get("status", {}).get("conditions", [])
            if not ip or not any(
                c["type"] == "Ready" and c["status"] == "True" for c in conditions
            ):
                continue
            number = target
            if not isinstance(number, int):
                named = [
                    c["containerPort"]
                    for container in pod["spec"]["containers"]
                    for c in container.get("ports", [])
                    if c.get("name") == number
                ]
                if not named:
                    continue
                number = named[0]
            host_port = self.host_port(ip, int(number))
            if host_port is not None:
                return ip, host_port
        return None

    def start(self, port: int = 0) -> ClusterNetwork:
        """Serve the forward proxy on 127.0.0.1 in a thread: at `port` when it is free (a
        restarted agent keeps the address the operator was given), else a free port."""
        network = self

        class Proxy(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: ARG002 - silenced
                return

            def _refuse(self, code: int, why: str) -> None:
                data = f"{why} ({STANDIN})\n".encode()
                self.send_response(code)
                self.send_header("X-Test-Bed", STANDIN)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _forward(self) -> None:
                url = urllib.parse.urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                if url.scheme != "http" or not url.hostname:
                    self._refuse(400, f"only absolute http:// requests, got {self.path}")
                    return
                target = network.resolve(url.hostname, url.port or 80)
                if target is None:
                    self._refuse(502, f"no ready endpoint behind {url.hostname}:{url.port or 80}")
                    return
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
                path = urllib.parse.urlunsplit(("", "", url.path or "/", url.query, ""))
                upstream = http.client.HTTPConnection(target[0], target[1], timeout=120)
                try:
                    upstream.request(self.command, path, body=body, headers=headers)
                    answer = upstream.getresponse()
                    data = answer.read()
                except OSError as problem:
                    self._refuse(502, f"{target[0]}:{target[1]} did not answer: {problem}")
                    return
                finally:
                    upstream.close()
                self.send_response(answer.status, answer.reason)
                for key, value in answer.getheaders():
                    if key.lower() not in HOP_BY_HOP | {"content-length"}:
                        self.send_header(key, value)
                self.send_header("X-Test-Bed", STANDIN)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _forward  # noqa: N815

            def do_CONNECT(self) -> None:
                self._refuse(405, "no CONNECT: the cluster's services here speak plain HTTP")

        try:
            self._server = ThreadingHTTPServer(("127.0.0.1", port), Proxy)
        except OSError:
            self._server = ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self.say(
            f"cluster network ({STANDIN}): HTTP proxy at {self.url} for the KubeRay operator and"
            " the gate pods (cluster DNS does not reach this host)"
        )
        return self

    def proxy_env(self) -> dict[str, str]:
        """What a client on this host needs to reach Services by name (the API server, on
        loopback, is reached directly)."""
        return {
            "HTTP_PROXY": self.url,
            "http_proxy": self.url,
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
        }

    def stop(self) -> None:
        """Shut the proxy down."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
