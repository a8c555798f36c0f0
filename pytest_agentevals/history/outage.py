"""An infrastructure outage is not flakiness: a run in which nearly every test failed is not judged."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from .model import FAILING, SKIPPED

OUTAGE_FAILED_SHARE: Final = 0.9  # this share of a run's tests failing or more...
OUTAGE_MIN_TESTS: Final = 10  # ...among at least this many tests (a run of 3 tests proves nothing)


def is_outage(tests: int, failed: int) -> bool:
    """Whether a run of `tests` (not skipped) with `failed` failing looks like an outage."""
    return tests >= OUTAGE_MIN_TESTS and failed >= OUTAGE_FAILED_SHARE * tests


def tally(final_outcomes: Iterable[str]) -> tuple[int, int]:
    """(tests, failed) from the final outcome of each test in a run; skips are not counted."""
    tests = failed = 0
    for outcome in final_outcomes:
        if outcome == SKIPPED:
            continue
        tests += 1
        failed += outcome in FAILING
    return tests, failed


def describe(tests: int, failed: int) -> str:
    return (
        f"{failed} of {tests} tests failed ({failed / tests:.0%}): an infrastructure outage, not "
        "flakiness; not counted"
    )
