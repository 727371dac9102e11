"""testbed.cluster_network's API client: the agent's every-second listings."""

from __future__ import annotations

import base64
import socket
from pathlib import Path

import yaml

from testbed.cluster_network import KubeApi
from testbed.pki import ensure_pki


def test_a_listing_the_api_server_does_not_answer_is_none_not_an_error(tmp_path: Path) -> None:
    """The agent's loop polls with GETs (a kubectl run costs about 50 ms of CPU): an API server
    that is not (yet, or any longer) listening gives None, and the loop tries again next round,
    as it did when kubectl failed."""
    pki = ensure_pki(tmp_path / "pki")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again before the GET: nothing listens there
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "clusters": [
                    {
                        "cluster": {
                            "server": f"https://127.0.0.1:{port}",
                            "certificate-authority-data": base64.b64encode(
                                pki.ca.read_bytes()
                            ).decode(),
                        }
                    }
                ],
                "users": [{"user": {"token": "t"}}],
            }
        )
    )
    assert KubeApi(kubeconfig).labelled("/api/v1/pods", "nemo-rl-gke/gate") is None
