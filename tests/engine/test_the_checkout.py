"""Last of the engine tests (files run in name order): the checkout is as it was before them.

The engine tests run the real CLI, `make engine-up` and changed programs, all in copies of the
project; this shows that none of them wrote into the checkout.
"""

from __future__ import annotations

import pytest

from tests.checkout import changes, checkout_status
from tests.conftest import STATUS_AT_START


def test_the_engine_tests_left_the_checkout_as_it_was(request: pytest.FixtureRequest) -> None:
    before = request.config.stash.get(STATUS_AT_START, None)
    after = checkout_status()
    if before is None or after is None:
        pytest.skip("the project is not a git checkout here")
    assert changes(before, after) == [], "a test changed the checkout"
