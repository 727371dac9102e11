"""Where a secret may sit in a stack, and which values must be secrets.

The CLI decrypts a `secure:` value only when it is a string (`{secure: "v1:..."}`), and marks
the whole top-level key secret when one sits anywhere inside it; the program learns which keys
are secret from the engine (PULUMI_CONFIG_SECRET_KEYS), never from the value.

Two rules follow, both checked before any value reaches the models, so no validation message
can ever quote a secret:

- A secret is accepted only where the program keeps it secret: the tokens it reads with
  `Config.get_secret` (SECRET_KEYS) and the provider's own credentials. Anywhere else - a label,
  a model name, a reservation, a nested object - the program would put the value into names,
  labels, paths and commands in plain text, so the key is refused, naming it and never the
  value.
- A token or a provider credential written in plain text sits in git: refused the same way.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, Final

from planning.naming import PROJECT
from stack_config.errors import InvalidStackConfig

SECRET_KEYS: Final[tuple[str, ...]] = ("hfToken", "wandbApiKey")
"""Keys read only as Pulumi secrets, never through StackConfig."""
PROVIDER_CREDENTIALS: Final[tuple[str, ...]] = ("gcp:credentials", "gcp:accessToken")
"""The gcp provider's credentials (pulumi_gcp/config/vars.py): a service-account key or an
OAuth token."""
PROVIDER_KEYS: Final[tuple[str, ...]] = ("gcp:project", "gcp:region")
"""Provider keys the program itself reads (into names and locations, in plain text)."""


def _must_be_secret() -> list[str]:
    return [f"{PROJECT}:{key}" for key in SECRET_KEYS] + list(PROVIDER_CREDENTIALS)


def secret_problems(
    values: Mapping[str, Any],
    secret_keys: Collection[str],
    stack: str,
    secret_paths: Mapping[str, str],
) -> None:
    """Refuse a plaintext credential, then a secret the program would show in plain text,
    named at its leaf where `secret_paths` knows it."""
    for full in _must_be_secret():
        if values.get(full) not in (None, "") and full not in secret_keys:
            revoke = (
                "also revoke the exposed token, git keeps it"
                if full.startswith(PROJECT)
                else "also revoke the exposed credential, git keeps it; Application Default"
                " Credentials or Workload Identity Federation need no key in the stack at all"
            )
            raise InvalidStackConfig(
                full,
                f"is set in plain text in Pulumi.{stack}.yaml; it must be a Pulumi secret",
                f"pulumi config set --secret {full} VALUE -s {stack} (this replaces the plain"
                f" value with an encrypted one; {revoke})",
            )
    for full in sorted(secret_keys):
        if full not in values:
            continue
        namespace, _, name = full.partition(":")
        read_in_plain = (namespace == PROJECT and name not in SECRET_KEYS) or full in PROVIDER_KEYS
        if read_in_plain:
            at = secret_paths.get(full, full)
            shown = at if at != full else f"{full}..."
            raise InvalidStackConfig(
                at,
                ("holds" if at == full else "is")
                + " a secret (secure:) value, but the program uses this setting in plain"
                " text - resource names, labels, paths, the job's command - where the secret"
                " would show in state, the cloud console and every preview",
                f"set it without --secret (pulumi config set --path '{shown}' VALUE -s"
                f" {stack}) if it is not secret; the program reads secrets only from"
                f" {', '.join(_must_be_secret())}",
            )
