"""A stand-in for a RayCluster's job REST API (the dashboard on 8265), where no Ray runs.

It answers the calls the GRPO smoke gate makes - GET /api/version, POST /api/jobs/,
GET /api/jobs/<id>, GET /api/jobs/<id>/logs, POST /api/jobs/<id>/stop - in Ray's JSON
shapes, and checks what it receives the way the run needs it: the entrypoint runs NeMo RL's
GRPO example on the smoke config with `grpo.max_num_steps`, the submission id is new, the
entrypoint resources are the ones expected. A job goes PENDING -> RUNNING -> the scenario's
final status after `seconds`. Everything it returns says it is a stand-in.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

STANDIN = "test bed stand-in Ray dashboard: no Ray runs here"
RAY_VERSION = "2.55.1"
"""The Ray of the NeMo RL v0.7.0 image (its uv.lock)."""


@dataclass
class SmokeScenario:
    """How the stand-in's jobs end."""

    status: str = "SUCCEEDED"
    message: str = "Job finished successfully."
    seconds: float = 1.0
    """Time from submission to the final status (None-like 1e9: never ends)."""


@dataclass
class _Job:
    body: dict[str, Any]
    submitted: float
    stopped: bool = False


@dataclass
class DashboardStandin:
    """The server; `url` once started. `problems` lists every request it refused."""

    scenario: SmokeScenario = field(default_factory=SmokeScenario)
    expected_resources: Mapping[str, int] | None = None
    """None: accept any entrypoint resources."""
    jobs: dict[str, _Job] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    stops: list[str] = field(default_factory=list)
    url: str = ""
    _server: ThreadingHTTPServer | None = None

    def check(self, body: Mapping[str, Any]) -> str:
        """Why a submission would not run the smoke (empty when it would)."""
        entrypoint = str(body.get("entrypoint", ""))
        if not re.search(
            r"examples/run_grpo(_math)?\.py --config examples/configs/grpo_smoke\.yaml", entrypoint
        ):
            return "the entrypoint does not run NeMo RL's GRPO example on grpo_smoke.yaml"
        if not re.search(r"grpo\.max_num_steps=\d+", entrypoint):
            return "the entrypoint sets no grpo.max_num_steps"
        if not body.get("submission_id"):
            return "no submission_id"
        if body["submission_id"] in self.jobs:
            return f"Job with submission_id {body['submission_id']} already exists"
        if self.expected_resources is not None and dict(
            body.get("entrypoint_resources") or {}
        ) != dict(self.expected_resources):
            got, want = body.get("entrypoint_resources"), dict(self.expected_resources)
            return f"entrypoint_resources {got} (expected {want})"
        return ""

    def status(self, job: _Job) -> tuple[str, str]:
        """(status, message) of a job now."""
        if job.stopped:
            return "STOPPED", "Job was intentionally stopped."
        age = time.monotonic() - job.submitted
        if age < min(0.2, self.scenario.seconds):
            return "PENDING", "Job has not started yet."
        if age < self.scenario.seconds:
            return "RUNNING", "Job is currently running."
        return self.scenario.status, self.scenario.message

    def start(self) -> DashboardStandin:
        """Serve on a free port of 127.0.0.1, in a thread."""
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def _send(self, code: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("X-Test-Bed", STANDIN)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path == "/api/version":
                    self._send(
                        200, {"version": "4", "ray_version": RAY_VERSION, "standin": STANDIN}
                    )
                    return
                match = re.fullmatch(r"/api/jobs/([^/]+)(/logs)?", self.path)
                job = standin.jobs.get(match.group(1)) if match else None
                if match is None or job is None:
                    self._send(404, {"error": "not found"})
                    return
                status, message = standin.status(job)
                if match.group(2):
                    steps = re.search(r"grpo\.max_num_steps=(\d+)", job.body["entrypoint"])
                    lines = [f"({STANDIN})"] + [
                        f"stand-in step {i + 1}/{steps.group(1) if steps else '?'}"
                        for i in range(int(steps.group(1)) if steps else 0)
                    ]
                    self._send(200, {"logs": "\n".join(lines) + "\n"})
                    return
                self._send(
                    200,
                    {
                        "submission_id": match.group(1),
                        "status": status,
                        "message": message,
                        "entrypoint": job.body["entrypoint"],
                    },
                )

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                if self.path == "/api/jobs/":
                    body = json.loads(raw or b"{}")
                    problem = standin.check(body)
                    if problem:
                        standin.problems.append(problem)
                        self._send(400, {"error": f"{problem} ({STANDIN})"})
                        return
                    standin.jobs[body["submission_id"]] = _Job(body, time.monotonic())
                    self._send(
                        200,
                        {
                            "job_id": f"raysubmit_{len(standin.jobs)}",
                            "submission_id": body["submission_id"],
                        },
                    )
                    return
                match = re.fullmatch(r"/api/jobs/([^/]+)/stop", self.path)
                job = standin.jobs.get(match.group(1)) if match else None
                if match is None or job is None:
                    self._send(404, {"error": "not found"})
                    return
                job.stopped = True
                standin.stops.append(match.group(1))
                self._send(200, {"stopped": True})

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        """Shut the server down."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
