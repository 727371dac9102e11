"""`python -m testbed.engine`: build the real Pulumi engine here and install it for this checkout.

Builds (cached by version, see `testbed.gobuild`) the Pulumi CLI, the test bed's Python
language host front end and the pulumi-kubernetes provider; installs the providers as plugins
into `.tools/engine/home` (the kubernetes plugin at exactly the Python SDK's release, the GCP
stand-in at pulumi-gcp's), and writes `.tools/engine/env`, which, sourced by bash, puts the
binaries first on PATH and points PULUMI_HOME at that home. After that, `pulumi preview` in
this repository works with nothing downloaded; PULUMI_BACKEND_URL and
PULUMI_CONFIG_PASSPHRASE stay the caller's.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from testbed.gobuild import Piece, build, check_pins, module_dir
from testbed.versions import TESTBED_VERSIONS as VERSIONS

REPO = Path(__file__).resolve().parent.parent
ENGINE = REPO / ".tools" / "engine"
BIN = ENGINE / "bin"
HOME = ENGINE / "home"
ENV_FILE = ENGINE / "env"
STATE = ENGINE / "state"
LOCAL_CLUSTER_ENV = REPO / ".tools" / "local-cluster" / "env"

CLI = VERSIONS.engine_pulumi_cli.value
K8S_PROVIDER = VERSIONS.engine_kubernetes_provider.value
GCP_PROVIDER = VERSIONS.engine_gcp_provider.value
_VERSION_FLAG = "-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version="
_K8S_VERSION_FLAG = "-X github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version="
_K8S_MODULE = "github.com/pulumi/pulumi-kubernetes/provider/v4"


def _provider_schema(module: Path) -> list[Path]:
    """Copy the schema the provider module ships beside our main.go, with its version set."""
    piece = PIECES["kubernetes-provider"]
    source = module_dir(piece, _K8S_MODULE) / "cmd" / "pulumi-resource-kubernetes"
    schema = json.loads((source / "schema.json").read_text(encoding="utf-8"))
    schema["version"] = K8S_PROVIDER
    written = [module / "schema-embed.json", module / "terraform-mapping-embed.json"]
    text = json.dumps(schema, separators=(",", ":"))
    if not written[0].exists() or written[0].read_text(encoding="utf-8") != text:
        written[0].write_text(text, encoding="utf-8")
    mapping = (source / "terraform-mapping.json").read_bytes()
    if not written[1].exists() or written[1].read_bytes() != mapping:
        written[1].write_bytes(mapping)
    return written


def _exec_script(module: Path, out: Path) -> None:  # noqa: ARG001 - a post-build step's signature
    """The language host runs programs through the exec script shipped in sdk/v3."""
    sdk = module_dir(PIECES["language-python"], "github.com/pulumi/pulumi/sdk/v3")
    target = out / "pulumi-language-python-exec"
    shutil.copyfile(sdk / "python" / "cmd" / "pulumi-language-python-exec", target)
    target.chmod(0o755)


PIECES: dict[str, Piece] = {
    "pulumi-cli": Piece(
        name="pulumi-cli",
        binaries={"pulumi": "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi"},
        # The release build's flags (pulumi/pulumi .goreleaser): without the version the CLI
        # reports v0.0.0 and plugins that require a minimum CLI refuse it.
        tags="osusergo,grpcnotrace",
        ldflags=_VERSION_FLAG + CLI,
    ),
    "language-python": Piece(
        name="language-python",
        binaries={"pulumi-language-python": "."},
        ldflags=_VERSION_FLAG + CLI,
        companions=_exec_script,
    ),
    "kubernetes-provider": Piece(
        name="kubernetes-provider",
        binaries={"pulumi-resource-kubernetes": "."},
        ldflags=_K8S_VERSION_FLAG + K8S_PROVIDER,
        prepare=_provider_schema,
    ),
}


WRAPPER_PINS: dict[str, dict[str, str]] = {
    "pulumi-cli": {
        "github.com/pulumi/pulumi/pkg/v3": CLI,
        "github.com/pulumi/pulumi/sdk/v3": CLI,
    },
    "language-python": {"github.com/pulumi/pulumi/sdk/v3": CLI},
    "kubernetes-provider": {_K8S_MODULE: VERSIONS.engine_kubernetes_provider_module.value},
}
"""What each wrapper's go.mod must require: the version table's pins."""


def _uv() -> Path:
    found = shutil.which("uv") or str(REPO / ".tools" / "bin" / "uv")
    if not Path(found).exists():
        raise SystemExit("uv is missing: run `make .venv/.synced` first")
    return Path(found).resolve()


def gcp_standin_script() -> str:
    """The plugin executable the engine starts for `gcp`: our stand-in, in this checkout's venv."""
    python = REPO / ".venv" / "bin" / "python"
    return (
        "#!/bin/sh\n"
        f"# nemo-rl-gke engine test bed: STAND-IN for the gcp provider {GCP_PROVIDER} (not the real"
        " provider; no Google API is called). See testbed/gcp_standin.\n"
        f'PYTHONPATH="{REPO}${{PYTHONPATH:+:$PYTHONPATH}}"'
        f' exec "{python}" -m testbed.gcp_standin "$@"\n'
    )


def engine_environ(base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment `.tools/engine/env` sets, applied to `base` (default: os.environ)."""
    env = dict(os.environ if base is None else base)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env["PULUMI_HOME"] = str(HOME)
    env["PULUMI_SKIP_UPDATE_CHECK"] = "true"
    env["PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION"] = "true"
    env["UV_FROZEN"] = "1"
    return env


def _install_plugin(kind: str, name: str, version: str, file: Path) -> None:
    """`pulumi plugin install` from a local file, unless that exact file is installed."""
    folder = HOME / "plugins" / f"{kind}-{name}-v{version}"
    installed = folder / f"pulumi-{kind}-{name}"
    if installed.exists() and installed.read_bytes() == file.read_bytes():
        print(f"plugin {kind} {name} {version}: installed", flush=True)
        return
    subprocess.run(
        [str(BIN / "pulumi"), "plugin", "install", kind, name, version, "--file", str(file)],
        check=True,
        env=engine_environ(),
    )


def install(force: bool = False) -> None:
    """Build what is missing, link the binaries, install the plugins, write the env file."""
    check_pins(WRAPPER_PINS)
    built = {name: build(piece, force=force) for name, piece in PIECES.items()}
    BIN.mkdir(parents=True, exist_ok=True)
    links = {
        "pulumi": built["pulumi-cli"] / "pulumi",
        "pulumi-language-python": built["language-python"] / "pulumi-language-python",
        "pulumi-language-python-exec": built["language-python"] / "pulumi-language-python-exec",
        "uv": _uv(),
    }
    for name, target in links.items():
        link = BIN / name
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(target)
    HOME.mkdir(parents=True, exist_ok=True)
    _install_plugin(
        "resource",
        "kubernetes",
        K8S_PROVIDER,
        built["kubernetes-provider"] / "pulumi-resource-kubernetes",
    )
    script = ENGINE / "pulumi-resource-gcp"
    script.write_text(gcp_standin_script(), encoding="utf-8")
    script.chmod(0o755)
    _install_plugin("resource", "gcp", GCP_PROVIDER, script)
    ENV_FILE.write_text(
        "# Written by `make engine`: source it in bash to use this checkout's real Pulumi engine.\n"
        "# PULUMI_BACKEND_URL and PULUMI_CONFIG_PASSPHRASE stay yours to set.\n"
        f'export PATH="{BIN}:$PATH"\n'
        f'export PULUMI_HOME="{HOME}"\n'
        "export PULUMI_SKIP_UPDATE_CHECK=true\n"
        "export PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true\n"
        "# The uv toolchain syncs before every run; frozen, it never rewrites uv.lock.\n"
        "export UV_FROZEN=1\n"
        "# When the local control plane runs (make local-cluster): its endpoint, CA and the\n"
        "# stand-in gke-gcloud-auth-plugin.\n"
        f'if [ -f "{LOCAL_CLUSTER_ENV}" ]; then . "{LOCAL_CLUSTER_ENV}"; fi\n',
        encoding="utf-8",
    )
    version = subprocess.run(
        [str(BIN / "pulumi"), "version"], check=True, capture_output=True, text=True
    ).stdout.strip()
    print(f"engine ready: pulumi {version}; source {ENV_FILE.relative_to(REPO)}", flush=True)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(prog="python -m testbed.engine", description=__doc__)
    parser.add_argument("--force", action="store_true", help="rebuild even when cached")
    args = parser.parse_args(argv)
    install(force=args.force)
    return 0


if __name__ == "__main__":
    sys.exit(main())
