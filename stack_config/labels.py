"""The stack's extra labels, and GCP's limit of 64 labels on a resource.

Every labelable GCP resource carries the program's own labels (`planning.naming.base_labels`),
the user's `labels`, the gcp provider's `defaultLabels` and, unless the provider is told
otherwise, its attribution label `goog-pulumi-provisioned`. GCP refuses a resource with more
than 64 labels (https://cloud.google.com/compute/docs/labeling-resources#requirements), so the
sum is checked before anything is created.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Final

from planning.naming import LABEL_KEY_PATTERN, LABEL_VALUE_PATTERN, PROJECT, base_labels
from stack_config.errors import ConfigProblem, InvalidStackConfig, show

MAX_LABELS: Final = 64
"""Labels per GCP resource."""
ATTRIBUTION_LABEL: Final = "goog-pulumi-provisioned"
"""Added by pulumi-gcp (8.0 and later) to every resource unless gcp:addPulumiAttributionLabel is
false; it counts toward the 64."""
OWN_LABELS: Final = tuple(base_labels("stack"))
"""The labels the program puts on every resource itself (app, stack, managed-by)."""


def label_format_problem(labels: Mapping[str, str]) -> ConfigProblem | None:
    """The first label GCP would refuse, or one that would replace the program's own."""
    if len(labels) > MAX_LABELS - len(OWN_LABELS):
        return ConfigProblem(
            (),
            f"{len(labels)} labels; with the program's own {len(OWN_LABELS)} that is over GCP's"
            f" limit of {MAX_LABELS} per resource",
            f"keep at most {MAX_LABELS - len(OWN_LABELS) - 1} extra labels",
        )
    for key, val in labels.items():
        if not re.fullmatch(LABEL_KEY_PATTERN, key):
            return ConfigProblem(
                (key,),
                f"label key {show(key)} is invalid",
                "use lower-case letters, digits, _ or -, starting with a letter (max 63)",
            )
        if key in OWN_LABELS:
            return ConfigProblem(
                (key,),
                f"the program sets label {key} itself (app={PROJECT}, stack=<stack>,"
                " managed-by=pulumi); yours would replace it",
                f"choose another key than {', '.join(OWN_LABELS)}",
            )
        if not isinstance(val, str) or not re.fullmatch(LABEL_VALUE_PATTERN, val):
            return ConfigProblem(
                (key,),
                f"label value {show(val)} is invalid",
                "use lower-case letters, digits, _ or - (max 63)",
            )
    return None


def label_count_problems(labels: Mapping[str, str], values: Mapping[str, Any], stack: str) -> None:
    """All labels a resource gets, the provider's included, within GCP's 64."""
    default_raw = values.get("gcp:defaultLabels")
    try:
        defaults = json.loads(default_raw) if isinstance(default_raw, str) else {}
    except (json.JSONDecodeError, RecursionError):
        defaults = {}
    attribution = str(values.get("gcp:addPulumiAttributionLabel", "true")).lower() != "false"
    keys = set(OWN_LABELS) | set(labels) | (set(defaults) if isinstance(defaults, dict) else set())
    total = len(keys) + (1 if attribution and ATTRIBUTION_LABEL not in keys else 0)
    if total > MAX_LABELS:
        raise InvalidStackConfig(
            f"{PROJECT}:labels",
            f"resources would carry {total} labels ({len(OWN_LABELS)} of the program's,"
            f" {len(labels)} of yours, {len(keys) - len(OWN_LABELS) - len(labels)} more from"
            " gcp:defaultLabels"
            + (", and pulumi-gcp's attribution label" if attribution else "")
            + f"); GCP allows {MAX_LABELS}",
            f"drop {total - MAX_LABELS} labels from nemo-rl-gke:labels or gcp:defaultLabels"
            f" in Pulumi.{stack}.yaml",
        )
