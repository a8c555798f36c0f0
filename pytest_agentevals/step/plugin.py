"""The step layer's pytest face: collects goldens files (each case a `StepItem` marked `step`),
offers the overridable fixtures, and at the end of the session writes what the cases recorded or
re-blessed. Registered by `pytest_agentevals.plugin` with the run's settings; the loader loads with
the first goldens file the session collects, the runner and decision stores with the first case run.

An item is a `pytest.Function` whose function asks for the `agentevals_decide` and
`agentevals_judge` fixtures, so a conftest.py overrides them as it would any fixture, at any scope.
Its id is the file and the case: `goldens/refactor.yaml::step-12-tool-choice`.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..errors import AgentEvalsDeprecationWarning, GoldenError
from ..markers import is_worker
from ..settings import Settings
from ..settings.options import renamed

if TYPE_CHECKING:  # the engine loads with the first goldens file collected or case run
    from .case import StepCase
    from .goldens import Flushed, Goldens
    from .judge import Judge, JudgeSpec, JudgeVerdict
    from .runner import CaseRun, Decide

GOLDENS_SUFFIXES = (".yaml", ".yml")
# The marker of a metamorphic step test; its 0.x name had no prefix (the naming table: a marker that
# is not a layer's word begins with agentevals_).
METAMORPHIC, OLD_METAMORPHIC = "agentevals_metamorphic", "metamorphic"

NO_DECIDE = (
    "agentevals: no agentevals_decide fixture for this step case. Define one in a conftest.py beside "
    "your goldens (e.g. goldens/conftest.py) that returns decide(case) -> the agent's decision: one "
    "model call through your own harness for case.messages, or a harness decision for case.state. "
    "See docs/step.md."
)


class StepLayer:
    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.settings = settings
        self.flushed: Flushed | None = None
        self._goldens: Goldens | None = None
        self._votes: list[list[bool | None]] = []  # each judged case's votes, for the judge's agreement

    @property
    def goldens(self) -> Goldens:
        """The session's decision stores and writes, made when the first case runs."""
        if self._goldens is None:
            from .goldens import Goldens

            self._goldens = Goldens(self.settings.rootdir, self.settings.prices)
        return self._goldens

    def pytest_configure(self, config: pytest.Config) -> None:
        config.stash[LAYER_KEY] = self
        config.stash[RECORD_KEY] = self.settings.record
        config.stash[UPDATE_KEY] = self.settings.update_goldens
        config.addinivalue_line(
            "markers", "agentevals_step_kind(kind): set on each golden step case: its kind of decision"
        )
        config.addinivalue_line(
            "markers",
            f"{METAMORPHIC}: a metamorphic step test (Hypothesis); off the `-m step` fast path",
        )
        config.addinivalue_line("markers", f"{OLD_METAMORPHIC}: the 0.x name of {METAMORPHIC} (warned)")

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            if item.get_closest_marker(OLD_METAMORPHIC) is not None:
                old, new = f"@pytest.mark.{OLD_METAMORPHIC}", f"@pytest.mark.{METAMORPHIC}"
                item.warn(AgentEvalsDeprecationWarning(renamed(old, new, item.nodeid)))

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
        from .judge import anthropic_judge

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
            self.goldens.receive(report.nodeid, payload)
        if report.when == "call":  # the verdict travels in user_properties, so xdist's workers' too
            for name, value in report.user_properties:
                if name == "agentevals_judge":
                    self._votes.append(_votes(value))

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if is_worker(session.config) or self._goldens is None:
            return  # an xdist worker (its reports carried everything to the controller), or no case
        self.flushed = self._goldens.flush()

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        done = self.flushed
        repeated = [votes for votes in self._votes if len(votes) > 1]
        if not repeated and (done is None or not (done.recorded or done.reblessed or done.errors)):
            return
        from ..trace.terminal import safe  # case ids and decisions come from goldens files and traces

        terminalreporter.write_sep("=", "agentevals step cases")
        if repeated:
            from .agreement import JudgeAgreement

            terminalreporter.write_line(JudgeAgreement.of(repeated).describe())
        if done is None:
            return
        for line in done.recorded:
            terminalreporter.write_line(safe(line))
        if done.reblessed:
            terminalreporter.write_line(
                f"re-blessed {len(done.reblessed)} step case(s) from their current decisions:"
            )
            for _, diff in done.reblessed:
                for line in safe(diff).splitlines():
                    terminalreporter.write_line(
                        line,
                        green=line.startswith("+") and not line.startswith("+++"),
                        red=line.startswith("-") and not line.startswith("---"),
                    )
        for line in done.errors:
            terminalreporter.write_line(safe(line), red=True)


# -- goldens files as collectors, step cases as items -------------------------------------------------
LAYER_KEY = pytest.StashKey[StepLayer]()
RECORD_KEY = pytest.StashKey[str]()
UPDATE_KEY = pytest.StashKey[bool]()
PAYLOAD_KEY = pytest.StashKey[dict[str, Any]]()


def _step_case(agentevals_decide: Any, agentevals_judge: Any) -> None:  # pragma: no cover
    """Stands for a step case; `StepItem.runtest` does the work. Declares the fixtures it uses."""


class GoldensCollector(pytest.File):
    """A goldens file: one item per case. A malformed file is one collection error naming the file,
    line, case and key, with no traceback."""

    def collect(self) -> Iterator[StepItem]:
        # The loader only: the session's decision stores (and what they import) wait for a run.
        from .loader import display_path, load_goldens

        rootdir = self.config.stash[LAYER_KEY].settings.rootdir
        try:
            goldens = load_goldens(self.path, display_path(self.path, rootdir), root=rootdir)
        except GoldenError as exc:
            raise self.CollectError(str(exc)) from None
        # Every case of a file runs the same function in the same place, so its fixture closure is
        # worked out once and shared, as pytest shares one among a parametrized function's items:
        # worked out per item it was most of the collection's time (1,000 cases).
        fixtureinfo = None
        for case in goldens.cases:
            item = StepItem.from_parent(
                self, name=case.id, callobj=_step_case, case=case, fixtureinfo=fixtureinfo
            )
            fixtureinfo = item._fixtureinfo
            yield item


class StepItem(pytest.Function):
    def __init__(self, *, case: StepCase, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case
        self.add_marker(pytest.mark.step)
        self.add_marker(pytest.mark.agentevals_step_kind(case.kind))
        if case.xfail is not None:
            self.add_marker(pytest.mark.xfail(reason=case.xfail))

    def runtest(self) -> None:
        from .render import StepMismatch, explain
        from .runner import run_case

        goldens = self.config.stash[LAYER_KEY].goldens
        case = self.case
        payload: dict[str, Any] = {"file": str(case.path), "case": case.id}
        self.stash[PAYLOAD_KEY] = payload
        judge = _remembering(self.funcargs["agentevals_judge"])  # type: ignore[arg-type]
        run = run_case(
            case,
            self.funcargs["agentevals_decide"],  # type: ignore[arg-type]
            goldens.store(case.path).exchanges(case.id),
            self.config.stash[RECORD_KEY],
            judge,
            goldens.prices,
            self.nodeid,
            self.config.stash[LAYER_KEY].settings.replay_via,
            self.config.stash[LAYER_KEY].settings.replay_normalize,
        )
        if run.cassette.folds is not None:
            self.add_report_section("call", "agentevals step folds", "\n".join(run.cassette.folds.lines()))
        if run.cassette.new:
            payload["recorded"] = [exchange.as_data() for exchange in run.cassette.used]
        if run.outcome.verdict is not None:
            # JSON, so JUnit XML carries it readably: a judge's noise can be told from the agent's.
            self.user_properties.append(("agentevals_judge", json.dumps(run.outcome.verdict.as_data())))
        if run.outcome.ok:
            return
        if self.config.stash[UPDATE_KEY]:
            self._rebless(run, judge, payload)
            return
        raise StepMismatch(explain(self.nodeid, case.kind, run.outcome))

    def _rebless(self, run: CaseRun, judge: Judge, payload: dict[str, Any]) -> None:
        from .kinds import parse_expectation
        from .render import StepMismatch, explain
        from .yamlio import dump_yaml

        case = self.case
        try:
            new_raw = case.expect.rebless(run.decision)
        except GoldenError as exc:
            raise GoldenError(self.nodeid, f"cannot be re-blessed: {exc.problem}", exc.fix) from None
        before = dump_yaml({"expect": case.expect.raw}).splitlines()
        after = dump_yaml({"expect": new_raw}).splitlines()
        diff = "\n".join(difflib.unified_diff(before, after, f"{self.nodeid} (was)", "(now)", lineterm=""))
        payload["rebless"] = {"expect": new_raw, "diff": diff}
        self.add_report_section("call", "agentevals re-blessed", diff)
        outcome = parse_expectation(case.kind, new_raw, "expect").check(run.decision, judge)
        if not outcome.ok:  # only a judge's verdict cannot be re-blessed
            raise StepMismatch(
                explain(self.nodeid, case.kind, outcome)
                + "\n  (re-blessed the checks; the judge's verdict stands)"
            )

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:  # type: ignore[override]
        from .render import StepMismatch

        if isinstance(excinfo.value, StepMismatch | GoldenError):
            # The report names the case already; the message starts with what happened.
            return str(excinfo.value).removeprefix(f"{self.nodeid}: ")
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, f"{self.case.kind} step case {self.case.id}"


def _votes(value: Any) -> list[bool | None]:
    """A judged case's votes, from its `agentevals_judge` property (JSON); [] for a judge asked once."""
    try:
        data = json.loads(value) if isinstance(value, str) else value
    except ValueError:
        return []
    if not isinstance(data, dict):
        return []
    votes = data.get("votes")
    return [vote if isinstance(vote, bool) else None for vote in votes] if isinstance(votes, list) else []


def _remembering(judge: Judge) -> Judge:
    """The judge, asked at most `repeats` times per rubric and summary: a re-check after re-blessing
    gets the same replies in the same order, not new ones."""
    verdicts: dict[tuple[JudgeSpec, str], list[JudgeVerdict]] = {}
    asked: dict[tuple[JudgeSpec, str], int] = {}

    def ask(spec: JudgeSpec, summary: str) -> JudgeVerdict:
        key = (spec, summary)
        replies = verdicts.setdefault(key, [])
        index = asked.get(key, 0) % spec.repeats
        asked[key] = index + 1
        if index == len(replies):
            replies.append(judge(spec, summary))
        return replies[index]

    return ask
