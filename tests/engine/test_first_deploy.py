"""The README's "First deploy", run as written on a clean copy with only the README's tools.

Nothing of this checkout's environment is lent to it: no `.venv` (the copy makes its own), no
`UV_FROZEN` and no uv from the test bed - uv is installed where the README's prerequisites put
it and the commands find it on PATH as a user's would. KubeRay comes from its public Helm
repository (the default; `ray.chartPath` unset): a preview plans the release without fetching
the chart, so that path runs here too.

What the test bed adapts, and only that: the state backend is a local folder instead of a
bucket (the README's `gs://` URL is replaced), the Pulumi CLI and its plugins are the ones
`make engine` built (the GCP provider is the stand-in, which answers the reservation read from
a description of `fake-reservation`), HOME is a scratch folder (so `~/.uv` lands in it), the
uv and pip download caches are the machine's (a cold cache would download the 300 MB SDK), and
the machine's network settings (proxy, CA bundle, pip's index) pass through as a shell's would.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from testbed.engine import BIN, HOME
from tests.engine.realcli import REPO, tracked_files

PASSPHRASE = "first-deploy-passphrase"  # noqa: S105 - a test's throw-away passphrase
PLACEHOLDERS = {
    "YOUR_PROJECT": "fake-project-123",
    "YOUR_RESERVATION": "fake-reservation",
    "YOUR_CIDR": "198.51.100.7",
    "hf_...": "hf_fake_token_not_real",
}


def _section(readme: str, title: str) -> str:
    return readme.split(f"\n## {title}", 1)[1].split("\n## ", 1)[0]


def _bash_blocks(text: str) -> list[str]:
    return [part.split("```", 1)[0] for part in text.split("```bash")[1:]]


def readme_commands() -> tuple[str, str]:
    """(the Tools prerequisite's uv block, the First deploy block up to `pulumi preview`)."""
    readme = (REPO / "docs" / "runbook.md").read_text(encoding="utf-8")
    tools = _section(readme, "Prerequisites").split("**Tools**", 1)[1]
    (uv_block, *_) = _bash_blocks(tools)
    (deploy, *_) = _bash_blocks(_section(readme, "First deploy"))
    lines = []
    for line in deploy.strip().splitlines():
        lines.append(line)
        if line.startswith("pulumi preview"):
            break
    else:
        raise AssertionError("the First deploy block has no pulumi preview")
    return "\n".join(line.strip() for line in uv_block.strip().splitlines()), "\n".join(lines)


def _clean_path() -> str:
    """The system's PATH without any folder that holds a uv (the user has none yet)."""
    kept = [
        folder
        for folder in os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep)
        if folder and not (Path(folder) / "uv").exists() and ".tools" not in folder
    ]
    return os.pathsep.join(kept)


NETWORK = re.compile(
    r"^(https?_proxy|no_proxy|all_proxy|ssl_cert_file|ssl_cert_dir|requests_ca_bundle"
    r"|curl_ca_bundle|pip_(index_url|extra_index_url|find_links|cert|trusted_host|default_timeout))$",
    re.IGNORECASE,
)
"""The machine's network settings a user's shell has too (proxy, CA bundle, pip's index)."""


def _cache(env_var: str, default: Path) -> str:
    return os.environ.get(env_var) or str(default)


@pytest.fixture
def clean_copy(engine: None, tmp_path: Path) -> Path:
    """The tracked files, copied; nothing else."""
    root = tmp_path / "nemo-rl-gke"
    for name in tracked_files():
        source = REPO / name
        if source.is_file():
            target = root / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    assert not (root / ".venv").exists()
    return root


def test_the_readme_first_deploy_runs_as_written_on_a_clean_copy(
    clean_copy: Path, tmp_path: Path
) -> None:
    uv_block, deploy = readme_commands()
    state = tmp_path / "state"
    state.mkdir()
    assert "gs://YOUR_STATE_BUCKET" in deploy
    deploy = deploy.replace("gs://YOUR_STATE_BUCKET", state.as_uri())
    for placeholder, value in PLACEHOLDERS.items():
        assert placeholder in deploy, f"the README no longer mentions {placeholder}"
        deploy = deploy.replace(placeholder, value)

    # The Pulumi CLI (and its language host) the user installed: on PATH, without uv.
    cli = tmp_path / "pulumi-cli"
    cli.mkdir()
    for name in ("pulumi", "pulumi-language-python", "pulumi-language-python-exec"):
        (cli / name).symlink_to((BIN / name).resolve())
    pulumi_home = tmp_path / "pulumi-home"
    pulumi_home.mkdir()
    (pulumi_home / "plugins").symlink_to(HOME / "plugins")
    home = tmp_path / "home"
    home.mkdir()
    description = tmp_path / "reservations.json"
    description.write_text(
        json.dumps(
            {
                "reservations": [
                    {
                        "name": "fake-reservation",
                        "zone": "us-central1-b",
                        "machineType": "a4-highgpu-8g",
                        "accelerators": [{"type": "nvidia-b200", "count": 8}],
                        "count": 2,
                        "inUse": 0,
                    }
                ]
            }
        ),
        encoding="utf-8",
    )
    env = {
        **{k: v for k, v in os.environ.items() if NETWORK.match(k)},
        "PATH": f"{cli}{os.pathsep}{_clean_path()}",
        "HOME": str(home),
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        # The machine's python3 (a pyenv shim finds its interpreters through PYENV_ROOT).
        **{k: os.environ[k] for k in ("PYENV_ROOT", "PYENV_VERSION") if k in os.environ},
        "PULUMI_HOME": str(pulumi_home),
        "PULUMI_SKIP_UPDATE_CHECK": "true",
        "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
        # `pulumi stack init` would ask for it at a terminal.
        "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
        "UV_CACHE_DIR": _cache("UV_CACHE_DIR", Path.home() / ".cache" / "uv"),
        "PIP_CACHE_DIR": _cache("PIP_CACHE_DIR", Path.home() / ".cache" / "pip"),
        "NEMO_RL_GKE_STANDIN_RESERVATIONS": str(description),
    }
    probe = subprocess.run(
        ["bash", "-c", "command -v uv || echo none"], env=env, capture_output=True, text=True
    )
    assert probe.stdout.strip() == "none", "uv must come from the README's instructions"
    lock = (clean_copy / "uv.lock").read_bytes()
    script = f"{uv_block}\ncommand -v uv\n{deploy}"
    proc = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=clean_copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=1500,
    )
    assert proc.returncode == 0, f"{script}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
    out = proc.stdout + proc.stderr
    # uv is the README's, on PATH; the copy's environment is its own, made from uv.lock.
    assert f"{home}/.uv/bin/uv" in proc.stdout
    assert (clean_copy / ".venv" / "bin" / "python").exists()
    assert not (clean_copy / ".venv").is_symlink()
    assert (clean_copy / "uv.lock").read_bytes() == lock  # UV_FROZEN=1 from the README
    assert "preflight b200: PASS" in proc.stdout
    # The preview ran the program and the policy pack, and planned the KubeRay release from
    # the public Helm repository (no ray.chartPath).
    assert "kubernetes:helm.sh/v3:Release" in out, out
    assert "-m pulumi.policy" in out  # the language host started the pack for the preview
    assert f"{clean_copy}/policies" in out
    assert "Resources:" in out
    assert "chartPath" not in (clean_copy / "Pulumi.b200.yaml").read_text()
    print(out[-6000:])  # the end of the preview as the user saw it (shown with -s)
    stack_file = (clean_copy / "Pulumi.b200.yaml").read_text()
    assert "fake-project-123" in stack_file
    assert "fake-reservation" in stack_file
    assert "hf_fake_token_not_real" not in stack_file  # written encrypted
    assert "hf_fake_token_not_real" not in out
