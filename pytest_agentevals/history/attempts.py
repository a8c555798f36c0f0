"""What each attempt of a test ended as, read off pytest's reports: one reading shared by the
history and the pyramid table (which layer a test is in, and how each attempt ended).

- The layer is the test's `agentevals.layer` property, put there at collection from its markers.
  Properties travel inside reports to an xdist controller and into JUnit XML; a report's keywords
  would not do, since a parametrize id or a folder named `replay` is a keyword too.
- An attempt is one run of a test's setup, call and teardown, or of the part of them that ran
  before pytest-rerunfailures ran it again (a report with the outcome "rerun"). It ended as its
  worst phase.
- A quarantined test's xfail is its real outcome: its XPASS passed, its XFAIL failed. A genuine
  xfail, like a skip, is no signal (skipped); a genuine non-strict XPASS passed.
- A budget stop is its own outcome in the history (`budget_stopped`), though pytest (and the pyramid
  table) count the attempt as it ended: a test that failed because a budget stopped its run (the
  project's `RunStopped` with status `budget_exhausted` in the failure's chain: a recording, a replay
  or a resumed leg whose guard stopped it, a run the day's budget refused), and a marathon seed whose
  run a budget stopped, whatever its item did (its face says so: the seed's own work was cut short).
  The test then carries the `agentevals.budget_stop` property (`mark_budget_stop`), so the stop
  reaches an xdist controller inside its reports and JUnit XML as a testcase property.

Reports and items are read by their attributes (pytest's `TestReport` and `Item`), so this module
imports no pytest: the faces hand them over.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from ..errors import RunStopped
from ..settings.layers import layer_of
from . import quarantine
from .model import BUDGET_STOPPED, ERROR, FAILED, PASSED, SKIPPED
from .variant import BUDGET_STOP_PROPERTY, LAYER_PROPERTY, from_properties

BUDGET_EXHAUSTED = "budget_exhausted"  # the run status a budget's stop ends a run with
_STOP_TEXT_LIMIT = 300  # characters of the stop kept in the property (it lands in JUnit XML)


class Report(Protocol):
    """What is read of one of pytest's phase reports (a `TestReport`)."""

    nodeid: str
    duration: float
    user_properties: list[tuple[str, object]]

    @property
    def when(self) -> str | None: ...

    @property
    def outcome(self) -> str: ...

    @property
    def passed(self) -> bool: ...

    @property
    def failed(self) -> bool: ...


class Marked(Protocol):
    """What is read of a collected test (a pytest `Item`)."""

    user_properties: list[tuple[str, object]]

    def iter_markers(self, name: str | None = None) -> Iterator[Any]: ...


def tag_layer(item: Marked) -> str | None:
    """Record the layer of a test (from its markers) as its property, and return it."""
    layer = layer_of({marker.name for marker in item.iter_markers()})
    if layer is not None:
        item.user_properties.append((LAYER_PROPERTY, layer))
    return layer


def budget_stop_in(error: BaseException | None) -> RunStopped | None:
    """The budget's stop (`RunStopped`, status `budget_exhausted`) behind `error`: itself, or what it
    was raised from or during (a client's own error wrapping the stop, say); None when no budget
    stopped it. The chain is walked a bounded number of steps, each exception once."""
    seen: set[int] = set()
    todo: list[BaseException] = [error] if error is not None else []
    while todo and len(seen) < 32:
        exc = todo.pop()
        if id(exc) in seen:
            continue
        seen.add(id(exc))
        if isinstance(exc, RunStopped) and exc.status == BUDGET_EXHAUSTED:
            return exc
        original = exc.__dict__.get("original") if hasattr(exc, "__dict__") else None
        for nxt in (exc.__cause__, exc.__context__, original):
            if isinstance(nxt, BaseException):
                todo.append(nxt)
        if isinstance(exc, BaseExceptionGroup):
            todo.extend(exc.exceptions)
    return None


def mark_budget_stop(item: Marked, report: Report, stop: str) -> None:
    """Say that a budget stopped this test (`stop`: what stopped it, one line): on the test, so its
    later reports (the teardown's, which JUnit XML takes its properties from) carry it, and on
    `report`. Once per test."""
    text = " ".join(str(stop).split())[:_STOP_TEXT_LIMIT] or BUDGET_EXHAUSTED
    if not any(name == BUDGET_STOP_PROPERTY for name, _ in item.user_properties):
        item.user_properties.append((BUDGET_STOP_PROPERTY, text))
    if not any(name == BUDGET_STOP_PROPERTY for name, _ in report.user_properties):
        report.user_properties.append((BUDGET_STOP_PROPERTY, text))


def clear_budget_stop(item: Marked) -> None:
    """Forget an earlier attempt's stop before the test runs again (pytest-rerunfailures reuses the item)."""
    item.user_properties[:] = [prop for prop in item.user_properties if prop[0] != BUDGET_STOP_PROPERTY]


def is_budget_stopped(report: Report) -> bool:
    """Whether the report carries the budget-stop property (`mark_budget_stop`)."""
    return any(name == BUDGET_STOP_PROPERTY for name, _ in report.user_properties)


def report_layer(report: Report) -> str | None:
    """The layer of the test a report is about (None: outside the pyramid)."""
    return from_properties(report.user_properties)[0]


def is_rerun(report: Report) -> bool:
    """Whether pytest-rerunfailures marked this report: its attempt failed and the test runs again."""
    return report.outcome == "rerun"


def is_quarantined(report: Report) -> bool:
    """Whether the report is of a test the quarantine turned into a non-strict xfail."""
    wasxfail = getattr(report, "wasxfail", None)
    return isinstance(wasxfail, str) and wasxfail.startswith(quarantine.REASON_PREFIX)


def phase_outcome(report: Report) -> str:
    """What one phase report says about its attempt."""
    failing = FAILED if report.when == "call" else ERROR
    if is_rerun(report):  # pytest-rerunfailures: this attempt failed and runs again
        return failing
    if report.passed:
        return PASSED  # an XPASS included: a quarantined test that passed, passed
    if report.failed:
        return failing
    if is_quarantined(report):
        return failing  # a quarantined test's XFAIL is the failure it really was
    return SKIPPED  # a skip, or a genuine xfail: no signal


_RANK = {PASSED: 0, SKIPPED: 1, ERROR: 2, FAILED: 3}


@dataclass
class ReportedAttempt:
    """One attempt of one test, as its reports arrive."""

    nodeid: str
    outcome: str = PASSED
    duration: float = 0.0
    quarantined: bool = False
    last: Report | None = None  # the latest report: its user_properties are the fullest
    rerun: bool = False  # it failed and the test runs again: not the test's final attempt
    budget_stopped: bool = False  # a budget stopped its run (a report carried the property)

    @property
    def layer(self) -> str | None:
        return report_layer(self.last) if self.last is not None else None

    @property
    def recorded(self) -> str:
        """What the history files this attempt as: its outcome, or `budget_stopped` when a budget
        stopped it and it was not skipped."""
        if self.budget_stopped and self.outcome != SKIPPED:
            return BUDGET_STOPPED
        return self.outcome


class Attempts:
    """Folds phase reports into attempts, for whoever receives reports (the xdist controller too)."""

    def __init__(self) -> None:
        self._open: dict[str, ReportedAttempt] = {}

    def add(self, report: Report) -> ReportedAttempt | None:
        """Take one report; the attempt it completes (at teardown, or at a rerun), else None."""
        attempt = self._open.setdefault(report.nodeid, ReportedAttempt(report.nodeid))
        attempt.duration += report.duration
        attempt.last = report
        attempt.quarantined = attempt.quarantined or is_quarantined(report)
        attempt.budget_stopped = attempt.budget_stopped or is_budget_stopped(report)
        outcome = phase_outcome(report)
        if _RANK[outcome] > _RANK[attempt.outcome]:
            attempt.outcome = outcome
        if report.when == "teardown" or is_rerun(report):
            attempt.rerun = is_rerun(report)
            return self._open.pop(report.nodeid)
        return None

    def unfinished(self) -> Iterable[ReportedAttempt]:
        """The attempts whose teardown never came (a crashed xdist worker's last test), closed now."""
        left = [attempt for attempt in self._open.values() if attempt.last is not None]
        self._open.clear()
        return left
