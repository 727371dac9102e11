"""One real Ray 2.55.1 node shaped like a b200 worker pod, and the smoke gate run against it.

The node is started by the worker container's own setup as the rendered stack has it (the
stand-in gIB folder, the driver folder, the claim on /data; testbed.node_fs) followed by the
`ray start` KubeRay would append, on its own loopback address and ports. The smoke gate's script
(verify/gates/grpo_smoke.py) runs with the environment of the rendered smoke Job and submits to that
head's real job API, exactly as the gate does in a cluster. Used by the fast check in `make test`
(tests/program/test_ray_driver_under_ray.py) and by the engine suite's failure cases
(tests/engine/test_driver_under_ray.py).
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from planning.ray import GATED_MODEL_ORGS, TOKENS_DIR
from testbed.hub_server import serving, write_gsm8k
from testbed.node_fs import (
    NodeFolders,
    container_environment,
    install_node_folders,
    nemo_rl_configs,
    pod_fs,
    register_node,
)
from testbed.ray_node import (
    NodeAddress,
    allocate,
    kuberay_ray_start,
    localize_ray_start,
    start_process,
)
from tests.harness import by_name, run_stack, variant
from tests.verify.harness import run_smoke_script

needs_nemo_rl_configs = pytest.mark.skipif(
    not nemo_rl_configs().exists() and os.environ.get("NEMO_RL_GKE_REQUIRE_SHARED") != "1",
    reason=f"NeMo RL v0.7.0 configs not found at {nemo_rl_configs()} (set NEMO_RL_GKE_SHARED)",
)
"""The NeMo RL stand-in loads the shared v0.7.0 configs: without them there is nothing to run."""

FAKE_HF_TOKEN = "hf_fake_not_real"  # noqa: S105 - a test's value, found nowhere it should not be
CLEAN_ENV = "unset CUDA_VISIBLE_DEVICES RAY_worker_niceness && "
"""How the rendered driver script starts: the environment Ray gives a placed driver, removed."""


def render_b200_smoke(tmp: Path) -> Any:
    """The b200 stack rendered under mocks with the RayJob and the GRPO smoke gate on."""
    config = variant(
        "b200",
        {
            "nemo-rl-gke:ray": {"job": {"enabled": True}},
            "nemo-rl-gke:verify": {"grpoSmoke": {"enabled": True}},
            "nemo-rl-gke:hfToken": {"secure": "v1:x"},
        },
    )
    return run_stack("b200", tmp, config)


class RayNode(NamedTuple):
    """A running one-node Ray head."""

    url: str
    """Its dashboard."""
    data: Path
    """The claim's folder (/data in the pod)."""
    token: str
    """The dashboard's token (RAY_AUTH_TOKEN, as KubeRay gives a pod in token mode)."""
    ray_tmp: Path
    """The pod's Ray folder (/tmp/ray: the sessions' logs the log sidecar ships)."""

    def headers(self) -> dict[str, str]:
        """What a client of the dashboard sends."""
        return {"Authorization": f"Bearer {self.token}"}


@contextmanager
def one_ray_node(b200_smoke: Any, ip: str) -> Iterator[RayNode]:
    """A Ray head shaped like a b200 worker pod on loopback `ip`, with the token environment
    KubeRay 1.7 adds to a pod of a RayCluster in token mode (`authOptions`). Its processes are
    one process group, ended by id."""
    records = by_name(b200_smoke)
    group = records["ray-cluster"].inputs["spec"]["workerGroupSpecs"][0]
    template = group["template"]
    (container,) = template["spec"]["containers"]
    pod = {"metadata": {"name": "b200-worker", "namespace": "nemo-rl"}, "spec": template["spec"]}
    # Short: Ray's socket paths live under the pod's /tmp (at most 107 characters).
    root = Path(tempfile.mkdtemp(prefix="nrg-", dir="/tmp"))
    folders = NodeFolders(root / "n")
    install_node_folders(folders, GATED_MODEL_ORGS)
    fs = pod_fs(root / "p", pod, container, folders)
    address: NodeAddress = allocate(ip, head=True, index=0)
    (args,) = container["args"]
    script, _ = localize_ray_start(
        f"{args} && {kuberay_ray_start(group, container, head=True)}",
        address,
        fs.map_text("/tmp/ray"),
    )
    # The Hub the pod reaches: GSM8K for the driver's online preparation by the real datasets.
    write_gsm8k(root / "hub")
    served = ExitStack()
    hub, _ = served.enter_context(serving(root / "hub"))
    env = container_environment(
        pod, container, fs, folders, secret=lambda *_: FAKE_HF_TOKEN, hub=hub
    )
    # The run's token Secret as the kubelet projects it (the smoke's model needs none: the
    # file shows where the token goes, not that the run needed it).
    tokens = fs.mounts[TOKENS_DIR]
    tokens.mkdir(parents=True, exist_ok=True)
    (tokens / "HF_TOKEN").write_text(FAKE_HF_TOKEN, encoding="utf-8")
    # What KubeRay adds in token mode (from the Secret it generates for the cluster).
    token = secrets.token_hex(16)
    env.update({"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token})
    register_node(folders.root / "nodes", address.ip, {"pod": "b200-worker", "rdma": True,
                                                        "tmp": str(fs.mounts["/tmp"])})  # fmt: skip
    log = fs.root / "container.log"
    proc = start_process(["/bin/bash", "-c", "--", fs.map_text(script)], env, folders.nemo_rl, log)
    url = f"http://127.0.0.1:{address.host_port(8265)}"
    try:
        from ray.job_submission import JobSubmissionClient  # imports Ray: only where it runs

        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, "the Ray node never answered"
            try:
                JobSubmissionClient(url, headers={"Authorization": f"Bearer {token}"})
                break
            except Exception:  # noqa: BLE001 - whatever Ray's client raises while it starts
                time.sleep(1)
        yield RayNode(url, fs.mounts["/data"], token, Path(fs.map_text("/tmp/ray")))
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        served.close()
        shutil.rmtree(root, ignore_errors=True)


def b200_smoke_fixture() -> Any:
    """A module's `b200_smoke` fixture: the rendered b200 stack of render_b200_smoke."""

    @pytest.fixture(scope="module")
    def b200_smoke(tmp_path_factory: pytest.TempPathFactory) -> Any:
        return render_b200_smoke(tmp_path_factory.mktemp("b200-smoke"))

    return b200_smoke


def ray_node_fixture(ip: str) -> Any:
    """A module's `ray_node` fixture: one_ray_node of its `b200_smoke` on loopback `ip` (each
    module its own address: `make ray-test` runs two such modules in one session)."""

    @pytest.fixture(scope="module")
    def ray_node(b200_smoke: Any) -> Iterator[RayNode]:
        with one_ray_node(b200_smoke, ip) as node:
            yield node

    return ray_node


def smoke_env_of(result: Any, job: str = "ray-smoke-job") -> dict[str, str]:
    """A Ray job gate's container environment (its plain values) in the rendered Job: the
    smoke's, or `ray-job-nccl-job`'s."""
    (container,) = by_name(result)[job].inputs["spec"]["template"]["spec"]["containers"]
    return {e["name"]: e["value"] for e in container["env"] if "value" in e}


def run_gate(
    node: RayNode, result: Any, tmp: Path, job: str = "ray-smoke-job", **overrides: str
) -> tuple[subprocess.CompletedProcess[str], str]:
    """verify/gates/grpo_smoke.py with the environment of the rendered gate Job `job` against
    the Ray head of `node`, with its token in the file the Job mounts from KubeRay's Secret:
    its end and termination message."""
    tmp.mkdir(parents=True, exist_ok=True)
    token_file = tmp / "dashboard-token"
    token_file.write_text(node.token, encoding="utf-8")
    env = {
        **smoke_env_of(result, job),
        "POD_NAMESPACE": "nemo-rl",
        "GATE_RUN_ID": "6f1d2c3b-4a5e-uid",
        "RAY_DASHBOARD": node.url,
        "DASHBOARD_TOKEN_FILE": str(token_file),
        "POLL_SECONDS": "0.5",
        **overrides,
    }
    return run_smoke_script(env, tmp, timeout=240)
