"""The records of the history: one test attempt, and the source (a session or a JUnit file) it came from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, NamedTuple

# What one attempt ended as. "error" is a failure outside the test body (setup or teardown); both
# "failed" and "error" count as a failure for verdicts. "skipped" (and a genuine xfail) is no signal.
# "budget_stopped": a budget stopped the test's run (`budget_exhausted`): the guard worked, which says
# nothing of the agent. It is neither a pass nor a failure for verdicts unless the `budget_stops`
# setting is "fail" (then it counts as a failure); it is counted and shown either way.
PASSED: Final = "passed"
FAILED: Final = "failed"
ERROR: Final = "error"
SKIPPED: Final = "skipped"
BUDGET_STOPPED: Final = "budget_stopped"
OUTCOMES: Final = (PASSED, FAILED, ERROR, SKIPPED, BUDGET_STOPPED)
FAILING: Final = frozenset((FAILED, ERROR))
# What the `budget_stops` setting does with a budget-stopped attempt (settings/options.py).
STOPS_EXCLUDED: Final = "exclude"
STOPS_FAIL: Final = "fail"


def ignored_outcomes(budget_stops: str) -> tuple[str, str]:
    """The outcomes a verdict leaves out under the `budget_stops` mode: skips always, budget stops
    unless they count as failures (a pair, so a store's query always takes two parameters)."""
    return (SKIPPED, SKIPPED if budget_stops == STOPS_FAIL else BUDGET_STOPPED)


# What a store's verdict counts leave out: only skips (budget stops are counted, on their own).
SKIPS_ONLY: Final = ignored_outcomes(STOPS_FAIL)


PYTEST: Final = "pytest"  # a source recorded live by the pytest plugin
JUNIT: Final = "junit"  # a source ingested from a JUnit XML file


class Attempt(NamedTuple):
    """One run of one test: setup, call and teardown, or one rerun of them.

    A named tuple rather than a dataclass: ingest builds hundreds of thousands of them.
    """

    test_id: str  # the pytest node id, e.g. tests/test_agent.py::test_plan[3]
    layer: str | None  # step, replay, resume, marathon, or None for a test outside the pyramid
    variant: str  # canonical JSON of the seed, model and marker parameters, "" when there are none
    attempt: int  # 1 for the first run of the test in its source, 2 for its first rerun...
    outcome: str  # one of OUTCOMES
    duration: float  # seconds
    worker: str | None = None  # the xdist worker (gw0...), "main" without xdist, None when unknown


@dataclass(frozen=True)
class Source:
    """Where a batch of attempts came from: one pytest session, or one ingested JUnit file.

    Commit, branch and run id belong to the source, not to each attempt: one session or one file runs
    one commit.
    """

    key: str  # "pytest:<uuid>" or "junit:<sha256 of the file>"; unique in a store
    kind: str  # PYTEST or JUNIT
    run_id: str
    sha: str | None  # None when unknown: such attempts are kept but never judged
    branch: str | None = None
    path: str | None = None  # the JUnit file, for a JUnit source


@dataclass(frozen=True)
class StoredAttempt:
    """An attempt as read back from a store, with its source's commit and run."""

    test_id: str
    layer: str | None
    variant: str
    sha: str | None
    branch: str | None
    run_id: str
    attempt: int
    outcome: str
    duration: float
    worker: str | None
    source: str  # the source key
