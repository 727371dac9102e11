"""Certificates, keys and tokens of the local control plane (openssl, loopback only)."""

from __future__ import annotations

import secrets
import subprocess
from dataclasses import dataclass
from pathlib import Path

SERVICE_IP = "10.96.0.1"
"""First address of the service range: the `kubernetes` Service's ClusterIP."""


@dataclass(frozen=True)
class Pki:
    """Paths of the files kube-apiserver and its clients need."""

    root: Path

    @property
    def ca(self) -> Path:
        """CA that signed the API server's serving certificate."""
        return self.root / "ca.crt"

    @property
    def trust_bundle(self) -> Path:
        """The machine's public roots plus this CA (see `write_trust_bundle`)."""
        return self.root / "trust.pem"

    @property
    def serving_cert(self) -> Path:
        """The API server's certificate (127.0.0.1, localhost, kubernetes.default...)."""
        return self.root / "apiserver.crt"

    @property
    def serving_key(self) -> Path:
        """Its key."""
        return self.root / "apiserver.key"

    @property
    def sa_key(self) -> Path:
        """Service-account token signing key."""
        return self.root / "sa.key"

    @property
    def sa_pub(self) -> Path:
        """Its public half, for verification."""
        return self.root / "sa.pub"

    @property
    def tokens(self) -> Path:
        """Static token file: one token per client of the control plane."""
        return self.root / "tokens.csv"

    def token(self, user: str) -> str:
        """The bearer token of one user of the token file."""
        for line in self.tokens.read_text(encoding="utf-8").splitlines():
            token, name, *_ = line.split(",")
            if name == user:
                return token
        raise KeyError(user)


USERS = {
    # user -> groups. The admin is also who `pulumi up` authenticates as through the stand-in
    # gke-gcloud-auth-plugin: a cluster admin, like the deploy account on GKE.
    "admin": "system:masters",
    "system:kube-controller-manager": "",
    "system:kube-scheduler": "",
    "kwok": "system:masters",
    "kuberay-operator": "system:masters",
}


def write_trust_bundle(pki: Pki) -> Path:
    """The machine's public roots with the local CA appended, for SSL_CERT_FILE.

    GKE serves a cluster's DNS-based endpoint with a publicly trusted certificate, so a
    kubeconfig for it names no CA and its clients check the system's roots. In the test bed
    the stand-in's DNS endpoint is this API server (`localhost`, in its certificate); the
    bundle lets the real Kubernetes provider trust it that way, while every other TLS client
    started with it keeps the public roots it had.
    """
    import os
    import ssl

    # The roots this machine's TLS clients use: its SSL_CERT_FILE when set (a proxy's CA may be
    # in it), else OpenSSL's default bundle.
    system = Path(
        os.environ.get("SSL_CERT_FILE")
        or ssl.get_default_verify_paths().cafile
        or "/etc/ssl/certs/ca-certificates.crt"
    )
    if system == pki.trust_bundle and system.is_file():
        return system  # already ours (the env file was sourced): it holds both
    roots = system.read_text(encoding="utf-8") if system.is_file() else ""
    bundle = roots.rstrip("\n") + "\n" + pki.ca.read_text(encoding="utf-8")
    if not pki.trust_bundle.exists() or pki.trust_bundle.read_text(encoding="utf-8") != bundle:
        pki.trust_bundle.write_text(bundle.lstrip("\n"), encoding="utf-8")
    return pki.trust_bundle


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def ensure_pki(root: Path) -> Pki:
    """Create the CA, serving certificate, signing key and tokens once; reuse them after."""
    pki = Pki(root)
    if all(p.exists() for p in (pki.ca, pki.serving_cert, pki.sa_key, pki.sa_pub, pki.tokens)):
        return pki
    root.mkdir(parents=True, exist_ok=True)
    _openssl("genrsa", "-out", "ca.key", "2048", cwd=root)
    _openssl(
        "req", "-x509", "-new", "-key", "ca.key", "-days", "30", "-out", "ca.crt",
        "-subj", "/CN=nemo-rl-gke-test-bed-ca", cwd=root,
    )  # fmt: skip
    _openssl("genrsa", "-out", "apiserver.key", "2048", cwd=root)
    (root / "apiserver.ext").write_text(
        "subjectAltName=IP:127.0.0.1,IP:" + SERVICE_IP + ",DNS:localhost,DNS:kubernetes,"
        "DNS:kubernetes.default,DNS:kubernetes.default.svc,"
        "DNS:kubernetes.default.svc.cluster.local\n"
        "extendedKeyUsage=serverAuth\n",
        encoding="utf-8",
    )
    _openssl(
        "req", "-new", "-key", "apiserver.key", "-subj", "/CN=kube-apiserver",
        "-out", "apiserver.csr", cwd=root,
    )  # fmt: skip
    _openssl(
        "x509", "-req", "-in", "apiserver.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
        "-CAcreateserial", "-days", "30", "-extfile", "apiserver.ext", "-out", "apiserver.crt",
        cwd=root,
    )  # fmt: skip
    _openssl("genrsa", "-out", "sa.key", "2048", cwd=root)
    _openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=root)
    lines = [
        f'{secrets.token_hex(16)},{user},{user},"{groups}"' if groups else
        f"{secrets.token_hex(16)},{user},{user}"
        for user, groups in USERS.items()
    ]  # fmt: skip
    pki.tokens.write_text("\n".join(lines) + "\n", encoding="utf-8")
    for path in root.iterdir():
        path.chmod(0o600)
    return pki


@dataclass(frozen=True)
class WebhookCerts:
    """A webhook server's certificates, from a CA of the test bed (PEM, keys in PKCS#1)."""

    ca_cert: str
    ca_key: str
    cert: str
    key: str


def ensure_webhook_certs(root: Path, ca_name: str, dns_names: list[str]) -> WebhookCerts:
    """A webhook CA of the test bed and a serving certificate it signed for 127.0.0.1 and
    `dns_names`, made once in `root` and reused after.

    Shaped for controllers that manage their own webhook certificates with cert-controller
    (Kueue): it verifies the CA under the name `ca_name` and renews anything valid for less
    than 90 more days, so the CA carries that name and both live ten years; its keys must be
    PKCS#1 (`-traditional`). Loopback only: the API server calls https://127.0.0.1:PORT.
    """
    files = [root / n for n in ("ca.crt", "ca.key", "tls.crt", "tls.key")]
    if not all(p.exists() for p in files):
        root.mkdir(parents=True, exist_ok=True)
        _openssl("genrsa", "-traditional", "-out", "ca.key", "2048", cwd=root)
        _openssl(
            "req", "-x509", "-new", "-key", "ca.key", "-days", "3650", "-out", "ca.crt",
            "-subj", f"/CN={ca_name}", "-addext", f"subjectAltName=DNS:{ca_name}",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature", cwd=root,
        )  # fmt: skip
        _openssl("genrsa", "-traditional", "-out", "tls.key", "2048", cwd=root)
        sans = ",".join(["IP:127.0.0.1", *(f"DNS:{name}" for name in dns_names)])
        (root / "tls.ext").write_text(
            f"subjectAltName={sans}\nextendedKeyUsage=serverAuth\n", encoding="utf-8"
        )
        _openssl(
            "req", "-new", "-key", "tls.key", "-subj", f"/CN={dns_names[0]}", "-out", "tls.csr",
            cwd=root,
        )  # fmt: skip
        _openssl(
            "x509", "-req", "-in", "tls.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", "3650", "-extfile", "tls.ext", "-out", "tls.crt",
            cwd=root,
        )  # fmt: skip
        for path in root.iterdir():
            path.chmod(0o600)
    ca_cert, ca_key, cert, key = (p.read_text(encoding="utf-8") for p in files)
    return WebhookCerts(ca_cert=ca_cert, ca_key=ca_key, cert=cert, key=key)
