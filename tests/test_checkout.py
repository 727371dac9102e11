"""The check that the suite left the checkout alone can see a change."""

from __future__ import annotations

from tests.checkout import changes, checkout_status


def test_a_new_file_in_the_checkout_is_seen() -> None:
    before = checkout_status()
    assert before is not None
    # Judged on two statuses, not by writing into the checkout: a stray file and a modified one.
    after = before + "?? stray.txt\n M planning/ray.py\n"
    assert changes(before, after) == [" M planning/ray.py", "?? stray.txt"]
    assert changes(before, before) == []
