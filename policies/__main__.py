"""Policy pack entry point for `pulumi preview --policy-pack policies`.

Only this file builds the PolicyPack: constructing it starts the analyzer server and never
returns, so tests and preflight import `policies.pack` instead.
"""

import sys
from pathlib import Path

# The pack shares the GPU catalog with the program; make the repository root importable
# when the CLI runs this file from the policies/ directory.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pulumi_policy import PolicyPack

from policies.pack import PACK_ENFORCEMENT_LEVEL, PACK_NAME, POLICIES

PolicyPack(name=PACK_NAME, policies=POLICIES, enforcement_level=PACK_ENFORCEMENT_LEVEL)
