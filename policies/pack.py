"""The policy pack's contents, importable without starting the analyzer."""

from __future__ import annotations

from typing import Final

from pulumi_policy import EnforcementLevel, Policy

from policies.firewall import no_world_ingress
from policies.quota import gpu_quota

PACK_NAME: Final = "nemo-rl-gke-guardrails"
PACK_VERSION: Final = "0.1.0"
PACK_ENFORCEMENT_LEVEL: Final = EnforcementLevel.ADVISORY
"""Level for a policy that sets none; every policy here sets its own."""

POLICIES: Final[list[Policy]] = [gpu_quota, no_world_ingress]
