"""The report's pytest faces: what a person reads of a session.

- `PyramidSummary`: the pyramid table at the end of a run — per layer, outcomes and time spent. A
  test's layer and what each attempt ended as are read as the history reads them (`history.attempts`):
  the last attempt of a rerun test decides, and a quarantined test counts as what it really did.
- `OurFailures`: a failure of ours (every layer's) reads message first, without the SDK's and our
  frames (`failure.py`).
- `SessionReport`: `pytest --agentevals-report=PATH` writes the HTML report of the runs the session
  recorded when it ends. A test that records a trace carries it as a user property
  (`trace.naming.TRACE_PROPERTY`), which its reports take from an xdist worker to the
  controller; the controller, the only writer of shared files, writes the report at the end of the
  session, with the marathon verdicts over the seeds when the session ran marathon tests (the
  `pytest_agentevals_verdicts` hook). A report that cannot be written (a trace that is not one, a
  key-shaped string in it) is said in the terminal summary; it never hides the tests' own outcome.

Each hands off to the engine (`build.py`, `failure.py`) when it first has something to do.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ..errors import AgentEvalsError
from ..history import PASSED, SKIPPED, Attempts, ReportedAttempt
from ..hooks import verdicts_of
from ..markers import is_worker
from ..settings import Settings
from ..settings.layers import LAYER_NAMES
from ..trace.naming import TRACE_PROPERTY


class OurFailures:
    """A failure of ours (every layer's) reads message first, without the SDK's and our frames."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.fulltrace = bool(config.option.fulltrace)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report: pytest.TestReport = yield
        if report.failed and call.excinfo is not None and not self.fulltrace:
            from .failure import OurFailure

            ours = OurFailure.replacing(report.longrepr, call.excinfo.value, item.config.rootpath)
            if ours is not None:
                report.longrepr = ours  # type: ignore[assignment]
        return report


class SessionReport:
    @classmethod
    def for_settings(cls, config: pytest.Config, settings: Settings) -> SessionReport | None:
        """The session's report when `--agentevals-report` (or `report`) asks for one."""
        return cls(config, settings.report) if settings.report is not None else None

    def __init__(self, config: pytest.Config, path: Path) -> None:
        self.path = path
        self.rootdir = config.rootpath
        self.is_worker = is_worker(config)
        self.traces: dict[str, None] = {}  # in the order the tests recorded them
        self.outcome: tuple[bool, str] | None = None  # (written, the line the terminal shows)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        for name, value in report.user_properties:
            if name == TRACE_PROPERTY and isinstance(value, str):
                self.traces[value] = None

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.is_worker:
            return
        from . import numbers
        from .build import build_report, write_report

        traces = [Path(path) for path in self.traces if Path(path).is_file()]
        try:
            report = build_report(traces, verdicts=verdicts_of(session.config), allow_empty=True)
            size = write_report(report, self.path, root=self.rootdir)
        except AgentEvalsError as exc:
            self.outcome = (False, f"agentevals report: not written: {exc}")
            return
        runs = len(report.runs)
        plural = "s" if runs != 1 else ""
        self.outcome = (
            True,
            f"agentevals report: wrote {self.path} ({runs} run{plural}, {numbers.size(size)})",
        )

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.outcome is None:
            return
        written, line = self.outcome
        terminalreporter.write_line(line, red=not written)


# -- the pyramid table ---------------------------------------------------------------------------------
@dataclass
class LayerTally:
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    quarantined: int = 0  # of the failed: quarantined tests (they did not fail the session)
    seconds: float = 0.0

    @property
    def total(self) -> int:
        return self.passed + self.failed + self.skipped


class PyramidSummary:
    """The pyramid table at the end of a pytest run, per layer: outcomes and time spent. Tallies
    reports as they arrive (on the controller under xdist) and prints the table."""

    def __init__(self, config: pytest.Config | None = None, settings: Settings | None = None) -> None:
        self.tallies: dict[str, LayerTally] = {name: LayerTally() for name in LAYER_NAMES}
        self._attempts = Attempts()
        self.config = config

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        attempt = self._attempts.add(report)
        if attempt is not None:
            self._count(attempt)

    def _count(self, attempt: ReportedAttempt) -> None:
        layer = attempt.layer
        if layer is None:
            return
        tally = self.tallies[layer]
        tally.seconds += attempt.duration
        if attempt.rerun:  # the test runs again: its last attempt decides
            return
        if attempt.outcome == PASSED:
            tally.passed += 1
        elif attempt.outcome == SKIPPED:
            tally.skipped += 1
        else:
            tally.failed += 1
            tally.quarantined += attempt.quarantined

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        for attempt in self._attempts.unfinished():  # e.g. a crashed xdist worker's last test
            self._count(attempt)
        rows = verdicts_of(self.config) if self.config is not None else []
        below = len({row.test for row in rows if row.fails_the_session})
        undecided = len({row.test for row in rows if row.undecided})
        marathon = self.tallies["marathon"]
        marathon.failed += below  # a verdict below its bar is a failure of the marathon layer
        if not any(tally.total for tally in self.tallies.values()):
            return
        terminalreporter.write_sep("=", "agentevals pyramid")
        terminalreporter.write_line(f"{'layer':<10}{'passed':>8}{'failed':>8}{'skipped':>9}{'time':>10}")
        # The top of the pyramid first, as the pyramid is drawn.
        for name in reversed(LAYER_NAMES):
            tally = self.tallies[name]
            if not tally.total:
                continue
            line = f"{name:<10}{tally.passed:>8}{tally.failed:>8}{tally.skipped:>9}{tally.seconds:>9.2f}s"
            notes = []
            if tally.quarantined:
                notes.append(f"{tally.quarantined} of the failed quarantined")
            if name == "marathon" and below:
                notes.append(f"{below} of the failed: a verdict below its bar")
            if name == "marathon" and undecided:
                notes.append(f"{undecided} verdict(s) inconclusive")
            if notes:
                line += f"  ({'; '.join(notes)})"
            red = tally.failed > tally.quarantined
            yellow = not red and name == "marathon" and bool(undecided)
            terminalreporter.write_line(line, red=red, yellow=yellow, green=not (red or yellow))
