"""The run report's pytest face: `pytest --agentevals-report PATH` writes the HTML report of the runs
the session recorded when it ends.

A test that records a trace carries it as a user property (`recording.naming.TRACE_PROPERTY`), which
its reports take from an xdist worker to the controller; the controller collects the paths and,
being the only writer of shared files, writes the report at the end of the session, with the
marathon layer's verdicts over the seeds when the session ran marathon tests (`VERDICTS_KEY`). A report that
cannot be written (a trace that is not one, a key-shaped string in it) is said in the terminal
summary; it never hides the tests' own outcome.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ..errors import AgentEvalsError
from ..recording.naming import TRACE_PROPERTY
from . import numbers
from .build import build_report, write_report
from .verdicts import VerdictRow

# The marathon verdicts of the session, as the report's rows: set by the marathon layer when the
# session finishes (before this report is written), read here.
VERDICTS_KEY = pytest.StashKey[list[VerdictRow]]()


class SessionReport:
    def __init__(self, config: pytest.Config, path: Path) -> None:
        self.path = path
        self.is_worker = hasattr(config, "workerinput")
        self.traces: dict[str, None] = {}  # in the order the tests recorded them
        self.outcome: tuple[bool, str] | None = None  # (written, the line the terminal shows)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        for name, value in report.user_properties:
            if name == TRACE_PROPERTY and isinstance(value, str):
                self.traces[value] = None

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.is_worker:
            return
        traces = [Path(path) for path in self.traces if Path(path).is_file()]
        try:
            verdicts = session.config.stash.get(VERDICTS_KEY, [])
            report = build_report(traces, verdicts=verdicts, allow_empty=True)
            size = write_report(report, self.path)
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
