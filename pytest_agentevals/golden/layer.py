"""The step layer's pytest plugin object: collects goldens files, offers the overridable fixtures,
and at the end of the session writes what the cases recorded or re-blessed.

Registered by `pytest_agentevals.plugin` with the run's settings.
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from ..settings import Settings
from .items import PAYLOAD_KEY, RECORD_KEY, SESSION_KEY, UPDATE_KEY, GoldensCollector
from .judge import Judge, anthropic_judge
from .runner import Decide
from .session import Flushed, StepSession

GOLDENS_SUFFIXES = (".yaml", ".yml")

NO_DECIDE = (
    "agentevals: no agentevals_decide fixture for this step case. Define one in a conftest.py beside "
    "your goldens (e.g. goldens/conftest.py) that returns decide(case) -> the agent's decision: one "
    "model call through your own harness for case.messages, or a harness decision for case.state. "
    "See docs/step-layer.md."
)


class StepLayer:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.flushed: Flushed | None = None
        self.session = StepSession(settings.rootdir, settings.prices)

    def pytest_configure(self, config: pytest.Config) -> None:
        config.stash[SESSION_KEY] = self.session
        config.stash[RECORD_KEY] = self.settings.record
        config.stash[UPDATE_KEY] = self.settings.update_goldens
        config.addinivalue_line(
            "markers", "agentevals_step_kind(kind): set on each golden step case: its kind of decision"
        )
        config.addinivalue_line(
            "markers", "metamorphic: a metamorphic step test (Hypothesis); off the `-m step` fast path"
        )

    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
        if file_path.suffix not in GOLDENS_SUFFIXES or file_path.name.startswith("."):
            return None
        goldens = self.settings.goldens_dir
        if goldens not in file_path.parents:
            return None
        return GoldensCollector.from_parent(parent, path=file_path)

    @pytest.fixture
    def agentevals_decide(self) -> Decide:
        """Override in your conftest.py: return decide(case) -> the agent's decision at that step."""
        pytest.fail(NO_DECIDE, pytrace=False)

    @pytest.fixture
    def agentevals_judge(self) -> Judge:
        """The judge of compaction cases that ask for one; override to use another client or model."""
        return anthropic_judge()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report: pytest.TestReport = yield
        payload = item.stash.get(PAYLOAD_KEY, None)
        if report.when == "call" and payload is not None and ("recorded" in payload or "rebless" in payload):
            # Travels with the report, so under xdist the controller gets it and writes.
            report.agentevals_step = payload  # type: ignore[attr-defined]
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        payload = getattr(report, "agentevals_step", None)
        if isinstance(payload, dict):
            self.session.receive(report.nodeid, payload)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if hasattr(session.config, "workerinput"):
            return  # an xdist worker: its reports carried everything to the controller
        self.flushed = self.session.flush()

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        done = self.flushed
        if done is None or not (done.recorded or done.reblessed or done.errors):
            return
        terminalreporter.write_sep("=", "agentevals step cases")
        for line in done.recorded:
            terminalreporter.write_line(line)
        if done.reblessed:
            terminalreporter.write_line(
                f"re-blessed {len(done.reblessed)} step case(s) from their current decisions:"
            )
            for _, diff in done.reblessed:
                for line in diff.splitlines():
                    terminalreporter.write_line(
                        line,
                        green=line.startswith("+") and not line.startswith("+++"),
                        red=line.startswith("-") and not line.startswith("---"),
                    )
        for line in done.errors:
            terminalreporter.write_line(line, red=True)
