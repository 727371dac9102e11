"""Which configuration keys do something in this program, so that the others are refused.

The engine hands the program every key of the stack, in every namespace. Three namespaces are
read: the project's own (`nemo-rl-gke:`, judged field by field by the models), the `gcp`
provider's (the default provider reads it; its keys are the ones the pulumi-gcp SDK itself
lists in `pulumi_gcp/config/vars.py`) and the engine's own `pulumi:` keys. A key anywhere else
does nothing: a typo (`gpc:project`), a look-alike of the project's name written in another
script (`nemo-rl-gk\u0435:gpu`), or a provider the program does not configure from the stack
(its Kubernetes provider is explicit, built from the cluster's outputs). Such a key is refused,
naming it, instead of silently changing nothing.
"""

from __future__ import annotations

import difflib
import importlib.util
import re
import unicodedata
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Any, Final

from planning.naming import PROJECT
from stack_config.errors import InvalidStackConfig, show_key

ENGINE_KEYS: Final = frozenset({"disable-default-providers", "tags", "autonaming"})
"""The `pulumi:` keys the engine reads (pulumi/pulumi pkg v3.276.0: pulumi:tags in
sdk/go/common/workspace/project.go, pulumi:autonaming in cmd/pulumi/autonaming/config.go,
pulumi:disable-default-providers in the resource monitor)."""
PROVIDER_NAMESPACES: Final = ("gcp", "pulumi")

_GCP_KEY = re.compile(r"__config__\.get(?:_bool|_int|_float|_object)?\('([A-Za-z0-9]+)'\)")


@cache
def gcp_keys() -> frozenset[str]:
    """Every key of the gcp provider, as the installed pulumi-gcp SDK lists them."""
    spec = importlib.util.find_spec("pulumi_gcp")
    if spec is None or not spec.submodule_search_locations:
        return frozenset()
    vars_py = Path(next(iter(spec.submodule_search_locations))) / "config" / "vars.py"
    try:
        text = vars_py.read_text(encoding="utf-8")
    except OSError:
        return frozenset()
    return frozenset(_GCP_KEY.findall(text))


def _folded(text: str) -> str:
    """Compatibility form, lower case: full-width `NEMO` (U+FF2E...) and `nemo` compare equal."""
    return unicodedata.normalize("NFKC", text).casefold()


def _closest(word: str, candidates: Iterable[str]) -> str | None:
    options = list(candidates)
    folded = {_folded(c): c for c in options}
    if _folded(word) in folded:
        return folded[_folded(word)]
    found = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    return found[0] if found else None


def namespace_problems(values: Mapping[str, Any], stack: str) -> None:
    """Refuse the first key that does nothing (sorted, so the same key is always named)."""
    gcp = gcp_keys()
    for key in sorted(values):
        namespace, _, name = key.partition(":")
        if namespace == PROJECT:
            continue  # judged by the models, which know every field
        if namespace == "gcp":
            if gcp and name not in gcp:
                guess = _closest(name, gcp)
                hint = f"; did you mean gcp:{guess}?" if guess else ""
                raise InvalidStackConfig(
                    key,
                    f"is not a setting of the gcp provider{hint}",
                    f"pulumi config rm {show_key(key)} -s {stack} (the gcp provider reads the"
                    " keys listed in pulumi_gcp/config/vars.py)",
                )
            continue
        if namespace == "pulumi":
            if name not in ENGINE_KEYS:
                guess = _closest(name, ENGINE_KEYS)
                hint = f"; did you mean pulumi:{guess}?" if guess else ""
                raise InvalidStackConfig(
                    key,
                    f"is not a key the Pulumi engine reads{hint}",
                    f"pulumi config rm {show_key(key)} -s {stack} (the engine reads"
                    f" pulumi:{', pulumi:'.join(sorted(ENGINE_KEYS))})",
                )
            continue
        guess = _closest(namespace, (PROJECT, *PROVIDER_NAMESPACES))
        hint = f"; did you mean {guess}:{show_key(name)}?" if guess else ""
        raise InvalidStackConfig(
            key,
            f"namespace '{show_key(namespace)}' is neither this project's ({PROJECT}) nor a"
            f" provider's the program configures from the stack (gcp), so the key does"
            f" nothing{hint}",
            f"move the value to the right key and pulumi config rm {show_key(key)} -s {stack}",
        )
