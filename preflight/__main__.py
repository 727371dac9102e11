"""`python -m preflight --stack NAME`."""

import sys

from preflight.cli import main

sys.exit(main())
