"""The pytest side of the history: record every test attempt, apply the quarantine, check the budgets.

Where it runs:
- wherever tests are collected and run (a plain session, or each xdist worker), it tags each layered
  test with its layer and variant (`item.user_properties`, which travel inside reports) and marks
  quarantined tests as non-strict xfail, so they run and are recorded but do not fail the session;
- wherever tests run, it marks a test whose failure a budget's stop caused (`RunStopped` with status
  `budget_exhausted` in the failure's chain) with the `agentevals.budget_stop` property, which the
  history files as the attempt outcome `budget_stopped` (`attempts.py`);
- where reports arrive (a plain session, or the xdist controller), it turns reports into attempts,
  one per run of a test (reruns included), and appends them to the store. An xdist worker never
  touches the store: the controller is the only writer, so no attempt is lost and no lock is fought.

At the end of the session it judges the layers the session ran against their budgets and prints the
per-layer table. With `--agentevals-flaky=fail` a breach turns an otherwise green session into exit
code `FLAKY_EXIT_CODE`.
"""

from __future__ import annotations

import datetime as dt
import os
import time
import uuid
from collections.abc import Generator, Mapping
from typing import TYPE_CHECKING, Any

import pytest

from ..errors import ConfigError, HistoryError
from ..markers import is_worker
from ..settings import Settings
from . import quarantine
from .attempts import (
    Attempts,
    ReportedAttempt,
    budget_stop_in,
    clear_budget_stop,
    mark_budget_stop,
    tag_layer,
)
from .model import PYTEST, Attempt, Source
from .variant import VARIANT_PROPERTY, canonical, from_properties, plain

if TYPE_CHECKING:  # the store and the analysis load when the session starts using the history
    from ..trace.scrub import Scrubber
    from .analysis import FlakinessReport
    from .store import HistoryStore

FLUSH_EVERY = 100  # attempts buffered before a write...
FLUSH_SECONDS = 2.0  # ...or seconds since the last write, whichever comes first
# Parametrize arguments that belong to a test's variant, and the name each is filed under: a marathon
# seed item's `agentevals_seed` is its seed.
VARIANT_PARAMS = {"seed": "seed", "model": "model", "agentevals_seed": "seed"}


def variant_of(item: pytest.Item, layer: str) -> str:
    """The canonical variant of a layered test: its layer marker's arguments, and its `seed` and
    `model` parameters. Values that are not plain JSON (objects, callables) are left out."""
    fields: dict[str, Any] = {}
    marker = item.get_closest_marker(layer)
    if marker is not None:
        for name, value in marker.kwargs.items():
            if plain(value) is not None:
                fields[name] = plain(value)
        if marker.args and plain(list(marker.args)) is not None:
            fields["args"] = plain(list(marker.args))
    params: Mapping[str, Any] = getattr(getattr(item, "callspec", None), "params", {})
    for name, field in VARIANT_PARAMS.items():
        if name in params and plain(params[name]) is not None:
            fields[field] = plain(params[name])
    return canonical(fields)


class HistoryCollector:
    """The plugin object registered by plugin.py (see the module docstring)."""

    def __init__(
        self,
        config: pytest.Config,
        settings: Settings,
        quarantined: quarantine.Quarantine,
        *,
        today: dt.date | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.config = config
        self.settings = settings
        self.quarantine = quarantined
        self.today = today or dt.date.today()
        self.env = os.environ if env is None else env
        self._scrubber: Scrubber | None = None
        self.is_worker = is_worker(config)
        self.store: HistoryStore | None = None
        self.source: Source | None = None
        self.problems: list[str] = []  # why the history could not be used: shown, never silent
        self.notes: list[str] = []  # e.g. this session was not judged as an outage
        self.report: FlakinessReport | None = None
        self.gating: list[str] = []  # breaches that concern this session
        self.failed_gate = False  # --agentevals-flaky=fail and a breach or a broken history
        self.exit_code_set = False  # ...and this collector set the session's exit code
        self._reports = Attempts()
        self._attempts: dict[str, int] = {}
        self._finals: dict[tuple[str, str], str] = {}
        self._layers: set[str] = set()
        self._nodeids: set[str] = set()
        self._buffer: list[Attempt] = []
        self._flushed = time.monotonic()
        # The quarantine entries already expired, which a session judging its flakiness reports when
        # it ran their tests: without a store, the test ids are all a report is read for.
        self._expired = self.quarantine.expired(self.today) if settings.flaky != "off" else []

    @property
    def scrubber(self) -> Scrubber:
        """Scrubs test ids before they are stored: a parametrized test id can hold a value."""
        if self._scrubber is None:
            from ..trace.scrub import Scrubber

            self._scrubber = Scrubber(environ=self.env)
        return self._scrubber

    @classmethod
    def from_config(cls, config: pytest.Config, settings: Settings) -> HistoryCollector:
        """The collector for a session; a bad quarantine file stops the run naming the file."""
        try:
            quarantined = quarantine.load(settings.quarantine)
        except ConfigError as exc:
            raise pytest.UsageError(f"agentevals: {exc}") from None
        return cls(config, settings, quarantined)

    # -- where tests run: tag layer and variant, apply the quarantine ------------------------------

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            layer = tag_layer(item)
            if layer is not None:
                variant = variant_of(item, layer)
                if variant:
                    item.user_properties.append((VARIANT_PROPERTY, variant))
            entry = self.quarantine.protects(item.nodeid, self.today)
            if entry is not None:
                from ..trace.terminal import safe_line

                reason = (  # pytest prints it as it is; the quarantine file comes from the repository
                    f"{quarantine.REASON_PREFIX}: {safe_line(entry.reason)} "
                    f"(owner {safe_line(entry.owner)}, until {entry.expires.isoformat()})"
                )
                item.add_marker(pytest.mark.xfail(reason=reason, strict=False))

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        clear_budget_stop(item)  # a rerun of the same item starts without its last attempt's stop

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report: pytest.TestReport = yield
        if not report.passed and call.excinfo is not None:
            stop = budget_stop_in(call.excinfo.value)
            if stop is not None:
                mark_budget_stop(item, report, str(stop))
        return report

    # -- where reports arrive: attempts into the store --------------------------------------------

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        if self.is_worker or self.settings.history is None:
            return
        from . import ci_env
        from .backends import open_store

        try:
            self.store = open_store(self.settings.history)
        except HistoryError as exc:
            if self.settings.flaky == "fail":
                raise pytest.UsageError(
                    f"agentevals: {exc} (--agentevals-flaky=fail needs a readable history)"
                ) from None
            self.problems.append(f"history not recorded: {exc}")
            return
        commit = ci_env.resolve_commit(
            self.config.rootpath, self.env, sha=self.settings.sha, run_id=self.settings.run_id
        )
        self.source = Source(
            key=f"{PYTEST}:{uuid.uuid4().hex}",
            kind=PYTEST,
            run_id=commit.run_id or ci_env.local_run_id(),
            sha=commit.sha,
            branch=commit.branch,
        )
        self._tag_junit(self.source.key)

    def _tag_junit(self, key: str) -> None:
        """Name this session in the JUnit XML, so ingesting that file later adds nothing twice."""
        try:
            from _pytest.junitxml import xml_key
        except ImportError:  # pragma: no cover - a pytest without junitxml
            return
        xml = self.config.stash.get(xml_key, None)
        if xml is not None:
            from .junit import SOURCE_PROPERTY

            xml.add_global_property(SOURCE_PROPERTY, key)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.is_worker:
            return
        if self.store is None:
            # Nothing is recorded (the history is off, or could not be used): attempts, outcomes and
            # layers feed only the store and the judging of its verdicts, so they are not worked out.
            # An expired quarantine entry is still reported when this session ran its test.
            if self._expired:
                self._nodeids.add(report.nodeid)
            return
        attempt = self._reports.add(report)
        if attempt is not None:
            self._finish(attempt)

    def _finish(self, state: ReportedAttempt) -> None:
        assert state.last is not None
        nodeid = state.nodeid
        layer, variant = from_properties(state.last.user_properties)
        number = self._attempts[nodeid] = self._attempts.get(nodeid, 0) + 1
        worker = getattr(state.last, "worker_id", None) or "main"
        outcome = state.recorded  # its outcome, or budget_stopped
        self._finals[(nodeid, variant)] = outcome
        self._nodeids.add(nodeid)
        if layer is not None:
            self._layers.add(layer)
        if self.store is None:
            return
        scrub = self.scrubber.scrub_text
        self._buffer.append(
            Attempt(scrub(nodeid), layer, scrub(variant), number, outcome, state.duration, str(worker))
        )
        if len(self._buffer) >= FLUSH_EVERY or time.monotonic() - self._flushed >= FLUSH_SECONDS:
            self._flush()

    def _flush(self) -> None:
        self._flushed = time.monotonic()
        if self.store is None or self.source is None or not self._buffer:
            return
        batch, self._buffer = self._buffer, []
        try:
            self.store.append(self.source, batch)
        except HistoryError as exc:
            self.problems.append(f"history not recorded from here on: {exc}")
            self._close()

    def _close(self) -> None:
        if self.store is not None:
            self.store.close()
            self.store = None

    # -- the end: outage check, budgets, exit code ------------------------------------------------

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.is_worker:
            return
        for attempt in self._reports.unfinished():  # e.g. a crashed xdist worker's last test
            self._finish(attempt)
        self._flush()
        from .outage import describe, is_outage, tally

        tests, failed = tally(self._finals.values())
        if self.store is not None and self.source is not None and is_outage(tests, failed):
            try:
                self.store.exclude(self.source.key, describe(tests, failed))
                self.notes.append(f"this session is not judged: {describe(tests, failed)}")
            except HistoryError as exc:
                self.problems.append(str(exc))
        if self.settings.flaky != "off":
            self._judge()
        self.failed_gate = self.settings.flaky == "fail" and bool(self.gating or self.problems)
        if self.failed_gate and session.exitstatus == pytest.ExitCode.OK:
            from .budgets import FLAKY_EXIT_CODE

            session.exitstatus = FLAKY_EXIT_CODE
            self.exit_code_set = True
        self._close()

    def _judge(self) -> None:
        expired = [entry for entry in self._expired if any(entry.matches(nodeid) for nodeid in self._nodeids)]
        self.gating = [f"quarantine expired: {entry.describe()}" for entry in expired]
        if self.store is None or not self._layers:
            return
        from .analysis import analyze

        try:
            self.report = analyze(
                self.store,
                self.settings.flaky_budget,
                self.quarantine,
                self.today,
                self.settings.budget_stops,
            )
        except HistoryError as exc:
            self.problems.append(f"flakiness not judged: {exc}")
            return
        self.gating[:0] = self.report.layer_breaches(self._layers)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.is_worker or not (self.report or self.gating or self.problems or self.notes):
            return
        from ..trace.terminal import safe
        from .budgets import FLAKY_EXIT_CODE
        from .report import text_lines  # only a session with something to say loads the report

        def write(text: str, **markup: bool) -> None:
            terminalreporter.write_line(safe(text), **markup)  # test ids come from the history

        terminalreporter.write_sep("=", "agentevals flakiness")
        if self.report is not None:
            for text, colour in text_lines(self.report):
                write(text, **({colour: True} if colour else {}))
        for note in self.notes:
            write(note, yellow=True)
        for problem in self.problems:
            write(f"agentevals: {problem}", red=True)
        for line in self.gating:
            write(f"BREACH {line}", red=True)
        if self.gating or self.failed_gate:
            if self.exit_code_set:
                write(
                    f"flakiness gate failed: exit code {FLAKY_EXIT_CODE} (--agentevals-flaky=fail)", red=True
                )
            elif self.failed_gate:
                write(
                    "flakiness gate failed too (the session failed already: its exit code stands)", red=True
                )
            else:
                write(
                    "flakiness budget breached (a warning: --agentevals-flaky=fail makes it fail)",
                    yellow=True,
                )
