"""A scheduled health check's verdict, written on the nodes it measured.

The check container (a gate script, verify/gates/common.sh) leaves its RESULT lines and its
exit status in REPORT_DIR; this script labels every node the check measured with the result,
the metric and the measured value, and taints a failed node `NoSchedule` so that no new run
lands on it. A passing check never clears a taint: a node that failed stays out of service
until a person has looked (the README says how). Standard library only: it runs in a plain
Python image with the pod's service-account token, which the API server lets change nothing
of a node but these labels and taints.
"""

from __future__ import annotations

import json
import os
import re
import ssl
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

PREFIX = "health.nemo-rl-gke"
TOKEN_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"  # noqa: S105 - a folder
CONFLICT_RETRIES = 5


@dataclass(frozen=True)
class Result:
    """One RESULT line of a gate: `RESULT gate metric value op threshold unit verdict scope`."""

    metric: str
    value: str
    op: str
    threshold: str
    unit: str
    verdict: str


@dataclass(frozen=True)
class Verdict:
    """What the nodes are labelled with."""

    passed: bool
    metric: str
    value: str
    message: str


def parse_results(text: str) -> list[Result]:
    """Every RESULT line (others are ignored)."""
    results = []
    for line in text.splitlines():
        words = line.split()
        if len(words) >= 8 and words[0] == "RESULT":
            results.append(Result(*words[2:8]))
    return results


def verdict_of(results: list[Result], status: int, headline: str) -> Verdict | None:
    """The check's verdict; None when this pod measured nothing (an NCCL peer)."""
    if not results and status == 0:
        return None
    failed = [r for r in results if r.verdict != "PASS"]
    if failed:
        first = failed[0]
        text = "; ".join(
            f"{r.metric} {r.value} {r.unit} (needs {r.op} {r.threshold})" for r in failed
        )
        return Verdict(False, first.metric, first.value, f"failed: {text}")
    if status != 0:
        return Verdict(False, "exit_status", str(status), f"failed: the check exited {status}")
    shown = next((r for r in results if r.metric == headline), results[0])
    return Verdict(
        True, shown.metric, shown.value, f"passed: {shown.metric} {shown.value} {shown.unit}"
    )


def label_value(text: str) -> str:
    """A label value: at most 63 of A-Z a-z 0-9 . _ -, starting and ending alphanumeric."""
    kept = re.sub(r"[^A-Za-z0-9._-]", "_", text)[:63]
    kept = re.sub(r"^[^A-Za-z0-9]+|[^A-Za-z0-9]+$", "", kept)
    return kept or "none"


def node_patch(node: dict[str, Any], check: str, verdict: Verdict, now: int) -> dict[str, Any]:
    """A merge patch of `node`: the check's labels and, on failure, its taint (other taints
    kept as they are; the resourceVersion makes a concurrent change a conflict, not a loss)."""
    key = f"{PREFIX}/{check}"
    labels = {
        key: "pass" if verdict.passed else "fail",
        f"{key}-metric": label_value(verdict.metric),
        f"{key}-value": label_value(verdict.value),
        f"{key}-at": str(now),
    }
    patch: dict[str, Any] = {
        "metadata": {"resourceVersion": node["metadata"]["resourceVersion"], "labels": labels}
    }
    if not verdict.passed:
        taints = [t for t in node.get("spec", {}).get("taints") or [] if t.get("key") != key]
        taints.append({"key": key, "value": "failed", "effect": "NoSchedule"})
        patch["spec"] = {"taints": taints}
    return patch


class Api:
    """The Kubernetes API with the pod's token (or the ones KUBE_API and friends name)."""

    def __init__(self) -> None:
        host = os.environ.get("KUBERNETES_SERVICE_HOST", "kubernetes.default.svc")
        port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
        self.base = os.environ.get("KUBE_API", f"https://{host}:{port}")
        token_file = os.environ.get("KUBE_TOKEN_FILE", f"{TOKEN_DIR}/token")
        with open(token_file, encoding="utf-8") as f:
            self.token = f.read().strip()
        self.context = ssl.create_default_context(
            cafile=os.environ.get("KUBE_CA_FILE", f"{TOKEN_DIR}/ca.crt")
        )

    def call(self, method: str, path: str, body: Any = None) -> Any:
        """One request; JSON in and out."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"{self.base}{path}", data=data, method=method)  # noqa: S310 - the API server
        request.add_header("Authorization", f"Bearer {self.token}")
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", "application/merge-patch+json")
        with urllib.request.urlopen(request, context=self.context, timeout=30) as response:  # noqa: S310
            return json.load(response)


def measured_nodes(api: Api, own: str) -> list[str]:
    """The check's nodes: its own, or with CHECK_PEERS every node of the Job's pods (a
    two-node NCCL result is about both)."""
    if os.environ.get("CHECK_PEERS") != "1":
        return [own]
    namespace = os.environ["POD_NAMESPACE"]
    selector = urllib.parse.quote(f"batch.kubernetes.io/job-name={os.environ['CHECK_JOB']}")
    pods = api.call("GET", f"/api/v1/namespaces/{namespace}/pods?labelSelector={selector}")
    nodes = {p["spec"].get("nodeName") for p in pods.get("items", [])} - {None, ""}
    return sorted(nodes | {own})


def report(api: Api, node_name: str, check: str, verdict: Verdict) -> None:
    """Label (and on failure taint) one node, retrying when it changed meanwhile."""
    for attempt in range(CONFLICT_RETRIES):
        node = api.call("GET", f"/api/v1/nodes/{node_name}")
        try:
            api.call(
                "PATCH",
                f"/api/v1/nodes/{node_name}",
                node_patch(node, check, verdict, int(time.time())),
            )
            return
        except urllib.error.HTTPError as error:
            if error.code != 409 or attempt == CONFLICT_RETRIES - 1:
                raise


def main() -> int:
    """Report the check's verdict; exit with the check's status (1 when it failed)."""
    check = os.environ["CHECK_NAME"]
    report_dir = os.environ.get("REPORT_DIR", "/report")
    own = os.environ["NODE_NAME"]
    try:
        with open(f"{report_dir}/status", encoding="utf-8") as f:
            status = int(f.read().strip() or "1")
    except (OSError, ValueError):
        status = 1
    try:
        with open(f"{report_dir}/gate-results", encoding="utf-8") as f:
            results = parse_results(f.read())
    except OSError:
        results = []
    verdict = verdict_of(results, status, os.environ.get("CHECK_HEADLINE", ""))
    if verdict is None:
        print(f"{check}: this pod measured nothing itself (it served its peers' ranks)")
        return 0
    api = Api()
    nodes = measured_nodes(api, own)
    for name in nodes:
        report(api, name, check, verdict)
    line = f"{check} check {verdict.message} on {', '.join(nodes)}"
    if not verdict.passed:
        line += f"; tainted {PREFIX}/{check}=failed:NoSchedule"
    print(line)
    try:
        with open(
            os.environ.get("TERMINATION_LOG", "/dev/termination-log"), "w", encoding="utf-8"
        ) as f:
            f.write(line[:4000])
    except OSError:
        pass
    return 0 if verdict.passed else 1


if __name__ == "__main__":
    sys.exit(main())
