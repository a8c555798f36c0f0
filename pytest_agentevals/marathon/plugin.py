"""The marathon layer's pytest face: the `marathon` marker, the `agentevals_marathon` and `agentevals_seed`
fixtures, and the hooks that hand off to the engine (`run.py`, `tally.py`, `verdict.py`).
Registered by `pytest_agentevals.plugin` with the run's settings.

```python
@pytest.mark.marathon(seeds=5, max_cost_usd=3.0, min_pass_rate=0.6, min_progress_auc=0.7)
def test_refactor_marathon(agentevals_marathon):
    agentevals_marathon.run_agent()        # the pytest_agentevals_run_agent hook, seeded
```

- Collection: each seed is an item (`test_refactor_marathon[seed=3]`); the marker is checked once
  (`marker.py`; a mistake is a usage error naming the test and the keyword).
  `--agentevals-seeds` deselects the seeds this session does not run; a seed with a result at this
  commit from an earlier session is skipped and its result kept (`--agentevals-rerun-seeds` runs it
  again); `max_seeds` keeps reserve seeds, collected only when the stored verdict asks for them.
- Each seed: its own recorder and trace (`<marathons_dir>/<test>/seed-<n>.trace.jsonl`), its budgets
  and watchdog as guards, the seed handed to the agent. Its result travels in its teardown report.
- Where reports arrive (a plain session, or the xdist controller): the results file, the verdicts,
  the terminal table, and a failed session when a whole interval is below its bar.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from ..errors import ConfigError
from ..markers import MarkerSpec, is_worker
from ..runs import budget_for, opened, spec_for
from ..settings import Settings
from ..settings.budgets import BUDGET_MARKER
from ..trace.terminal import safe

if TYPE_CHECKING:  # the engine loads with the first marathon test of the session
    from ..history import Commit
    from . import render
    from .results import Plan, SeedResult
    from .rows import VerdictRow
    from .run import SeedRun
    from .tally import MarathonTally
    from .verdict import Verdict


def _keywords() -> Any:
    from .plan import KEYWORDS

    return KEYWORDS


MARATHON = MarkerSpec("marathon", keywords=_keywords)
SEED_ID = "seed={}"
SNAPSHOT_KEY = "agentevals_marathon_results_size"
SEED_ARG = "agentevals_seed"


@dataclass(frozen=True)
class Seeding:
    """A seed item's place in its marathon: read by the fixture and the report hook."""

    test: str  # the node id without [seed=N]
    seed: int
    plan: Plan
    expected: tuple[int, ...]  # the seeds of this test this session runs or keeps
    partial: bool  # a seed selection left some of them out
    kept: SeedResult | None  # a result from an earlier session at this commit


SEEDING_KEY = pytest.StashKey[Seeding]()
CALL_KEY = pytest.StashKey[str]()  # the call phase's outcome
RESULT_KEY = pytest.StashKey["SeedResult"]()


def test_key(item: pytest.Item, seed: int) -> str:
    """The test a seed item belongs to: its node id without the `seed=N` part of its id, and
    without a secret a parametrized id held (the key is stored in the results file)."""
    from ..trace.scrub import Scrubber

    nodeid, part = Scrubber().scrub_text(item.nodeid), SEED_ID.format(seed)
    for old, new in ((f"[{part}]", ""), (f"[{part}-", "["), (f"-{part}]", "]"), (f"-{part}-", "-")):
        if old in nodeid:
            return nodeid.replace(old, new, 1)
    return nodeid


def seed_of(item: pytest.Item) -> int | None:
    params = getattr(getattr(item, "callspec", None), "params", {})
    seed = params.get(SEED_ARG)
    return seed if isinstance(seed, int) else None


# -- the face --------------------------------------------------------------------------------------------


class MarathonLayer:
    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.settings = settings
        self.tally: MarathonTally | None = None
        self.verdicts: list[Verdict] = []
        self.rows: list[VerdictRow] = []
        self.problems: list[str] = []
        self._commit: Commit | None = None
        self._stored: list[SeedResult] | None = None
        self._latest: list[SeedResult] | None = None
        self.config: pytest.Config | None = None
        self._snapshot: int | None = None  # the results file's size when the workers were started

    # -- what every process needs: the commit, the results kept from earlier sessions -------------------

    def commit(self, config: pytest.Config) -> Commit:
        if self._commit is None:
            from ..history import resolve_commit

            self._commit = resolve_commit(
                config.rootpath, os.environ, sha=self.settings.sha, run_id=self.settings.run_id
            )
        return self._commit

    def stored(self, config: pytest.Config) -> list[SeedResult]:
        """The results at this commit from earlier sessions (none with --agentevals-rerun-seeds, or
        when no commit is known: results of unknown code are not carried over)."""
        if self._stored is None:
            sha = self.commit(config).sha
            self._stored = []
            if not self.settings.rerun_seeds and sha is not None:
                self._stored = [r for r in self._results(config) if r.commit == sha]
        return self._stored

    def _results(self, config: pytest.Config) -> list[SeedResult]:
        """The results file's latest line per test, seed and commit, read once.

        Under xdist every worker reads the file as it was when the session started (its size then,
        from the controller): a worker started late, to replace a crashed one, collects what the
        others collected, not what this session has appended since."""
        if self._latest is None:
            from .results import RESULTS_FILE, latest, read_results

            path = self.settings.marathons_dir / RESULTS_FILE
            limit = getattr(config, "workerinput", {}).get(SNAPSHOT_KEY)
            self._latest = latest(read_results(path, limit)) if path.is_file() else []
        return self._latest

    def durations(self, config: pytest.Config) -> dict[tuple[str, int], float]:
        """Each test's seeds' durations in their latest results (at any commit): the hint that orders
        the seeds for xdist's workers. Only a hint, so a results file that cannot be read gives none
        here (a session that keeps results reads it in `stored` and says what is wrong with it)."""
        import warnings

        from ..errors import MarathonError
        from .results import TornResultsWarning

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", TornResultsWarning)
                results = self._results(config)
        except (MarathonError, OSError):
            return {}
        return {(r.test, r.seed): r.metrics.duration_s for r in results}  # the file's order: latest last

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """xdist's controller, before it starts a worker: the results file's size at session start."""
        if self._snapshot is None:
            from .results import RESULTS_FILE

            path = self.settings.marathons_dir / RESULTS_FILE
            self._snapshot = path.stat().st_size if path.is_file() else 0
        node.workerinput[SNAPSHOT_KEY] = self._snapshot

    # -- collection ----------------------------------------------------------------------------------

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        mark = metafunc.definition.get_closest_marker(MARATHON.name)
        if mark is None:
            return
        from .plan import plan_of, reserve_of

        try:
            plan = plan_of(MARATHON.parse(mark, self.settings).values)
        except ConfigError:
            return  # the collection check reports it, naming the test
        seeds = reserve_of(plan)
        metafunc.parametrize(SEED_ARG, seeds, ids=[SEED_ID.format(seed) for seed in seeds])

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(
        self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        MARATHON.check(session, items, self.settings)
        marked = [item for item in items if MARATHON.of(item) is not None]
        if not marked:
            return
        try:
            self._seed(config, items, marked)
        except (ConfigError, pytest.UsageError) as exc:
            message = str(exc) if isinstance(exc, pytest.UsageError) else f"agentevals: {exc}"
            if not is_worker(config):
                raise pytest.UsageError(message) from None
            session.shouldstop = message
            items.clear()

    def _seed(self, config: pytest.Config, items: list[pytest.Item], marked: list[pytest.Item]) -> None:
        from .plan import plan_of, plan_seeds

        plans: dict[str, Plan] = {}
        errors: list[str] = []
        by_test: dict[str, list[tuple[pytest.Item, int]]] = {}
        for item in marked:
            values = MARATHON.of(item)
            assert values is not None
            try:
                plan = plan_of(values.values)
                budget_for(item, self.settings, markers=(BUDGET_MARKER, MARATHON.name))
            except ConfigError as exc:
                errors.append(f"{item.nodeid}: {exc}")
                continue
            seed = seed_of(item)
            if seed is None:
                errors.append(f"{item.nodeid}: @pytest.mark.marathon on a test pytest could not give seeds")
                continue
            test = test_key(item, seed)
            plans[test] = plan
            by_test.setdefault(test, []).append((item, seed))
        if errors:
            more = f"\n  … and {len(errors) - 5} more" if len(errors) > 5 else ""
            raise pytest.UsageError("agentevals: " + "\n".join(errors[:5]) + more)
        stored = self.stored(config)
        dropped: list[pytest.Item] = []  # reserve seeds not called in: not tests of this session
        deselected: list[pytest.Item] = []
        for test, seeded in by_test.items():
            plan = plans[test]
            choice = plan_seeds(test, plan, [seed for _, seed in seeded], stored, self.settings.seeds)
            for item, seed in seeded:
                if seed not in choice.active:
                    dropped.append(item)
                elif seed not in choice.chosen:
                    deselected.append(item)
                else:
                    kept = choice.kept.get(seed)
                    item.stash[SEEDING_KEY] = Seeding(
                        test, seed, plan, choice.expected(), choice.partial, kept
                    )
                    if kept is not None:
                        item.add_marker(
                            pytest.mark.skip(
                                reason=f"seed {seed} has a result at this commit from an earlier session: "
                                "kept (--agentevals-rerun-seeds runs it again)"
                            )
                        )
        if dropped or deselected:
            gone = {id(item) for item in (*dropped, *deselected)}
            items[:] = [item for item in items if id(item) not in gone]
        if deselected:
            config.hook.pytest_deselected(items=deselected)
        if is_worker(config):
            self._longest_first(config, items)

    def _longest_first(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        """On an xdist worker, each test's seeds in the slots its seeds hold, longest first
        (`schedule.py`: so no worker runs three long seeds while another idles). Every worker reads
        the same results file snapshot, so all of them collect the same order, as xdist requires."""
        from .schedule import longest_first

        durations = self.durations(config)
        slots: dict[str, list[int]] = {}
        for index, item in enumerate(items):
            seeding = item.stash.get(SEEDING_KEY, None)
            if seeding is not None:
                slots.setdefault(seeding.test, []).append(index)
        for test, places in slots.items():
            seeded = [items[index] for index in places]
            seeds = [item.stash[SEEDING_KEY].seed for item in seeded]
            known = {seed: durations[test, seed] for seed in seeds if (test, seed) in durations}
            kept = {item.stash[SEEDING_KEY].seed for item in seeded if item.stash[SEEDING_KEY].kept}
            for index, position in zip(places, longest_first(seeds, known, kept), strict=True):
                items[index] = seeded[position]

    # -- the fixtures ----------------------------------------------------------------------------------

    @pytest.fixture
    def agentevals_seed(self) -> int | None:
        """The seed of a marathon test's item (None in any other test)."""
        return None

    @pytest.fixture(autouse=True)
    def _agentevals_marathon_marker(
        self, request: pytest.FixtureRequest, agentevals_seed: int | None
    ) -> None:
        """A test marked @pytest.mark.marathon records its seed's run even if it does not ask for the
        fixture (it may run the agent itself, with `agentevals_seed`)."""
        if request.node.stash.get(SEEDING_KEY, None) is not None:
            request.getfixturevalue("agentevals_marathon")

    @pytest.fixture
    def agentevals_marathon(self, request: pytest.FixtureRequest) -> Iterator[SeedRun]:
        """This seed's run: `run_agent()` starts the agent on the seeded task through the
        `pytest_agentevals_run_agent(run)` hook (`run.layer == "marathon"`); `seed`, `task`,
        `workspace`, `recorder`, `trace`. Recorded from setup to teardown under the run's budgets and
        watchdog."""
        item = request.node
        seeding = item.stash.get(SEEDING_KEY, None)
        marked = MARATHON.of(item)
        if seeding is None or marked is None:
            pytest.fail(
                "agentevals: the agentevals_marathon fixture belongs to a test marked "
                "@pytest.mark.marathon(seeds=...) (docs/marathon.md)",
                pytrace=False,
            )
        from .results import trace_name
        from .run import SeedRun

        settings = marked.settings
        name = trace_name(seeding.test, seeding.seed)
        hooks = item.ihook  # the conftest.py files that apply to this test

        def resumer(point: Any) -> Any:
            return hooks.pytest_agentevals_resume_agent(checkpoint=point)  # the resume layer's (firstresult)

        spec = spec_for(
            item,
            settings,
            "marathon",
            markers=(BUDGET_MARKER, MARATHON.name),
            trace=settings.marathons_dir / name,
            task=marked.values.get("task"),
            seed=seeding.seed,
            workspace=request.getfixturevalue("tmp_path") / "workspace",
        )
        spec = dataclasses.replace(spec, name=seeding.test)  # the test, without its seed
        run = SeedRun(
            spec,
            trace_name=name,
            fail_on=marked.values.get("fail_on", ()),
            max_restarts=marked.values.get("max_restarts", 0),
            resumer=resumer,
            verify=marked.values.get("verify"),
        )
        try:
            yield from opened(item, run)
        finally:
            item.stash[RESULT_KEY] = run.result(
                item.stash.get(CALL_KEY, "error"), plan=seeding.plan, commit=self.commit(item.config).sha
            )

    # -- reports -------------------------------------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report: pytest.TestReport = yield
        seeding = item.stash.get(SEEDING_KEY, None)
        if seeding is None:
            return report
        if report.when == "call":
            item.stash[CALL_KEY] = report.outcome
        elif report.when == "teardown":
            # The seed's last report carries its result, so under xdist it reaches the controller.
            from .tally import payload

            fresh = item.stash.get(RESULT_KEY, None)
            if fresh is not None and fresh.stopped_by_budget:
                from ..history import mark_budget_stop  # the history files the seed as budget_stopped

                stop = fresh.metrics.budget_stop or "a budget"
                mark_budget_stop(item, report, f"seed {seeding.seed} stopped by budget {stop}")
            report.agentevals_marathon = payload(  # type: ignore[attr-defined]
                test=seeding.test,
                seed=seeding.seed,
                plan=seeding.plan,
                expected=seeding.expected,
                partial=seeding.partial,
                result=fresh if fresh is not None else seeding.kept,
                kept=fresh is None and seeding.kept is not None,
            )
        return report

    def pytest_configure(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = getattr(report, "agentevals_marathon", None)
        if not isinstance(data, dict) or (self.config is not None and is_worker(self.config)):
            return  # a worker: its reports carry every result to the controller, which writes
        if self.tally is None:
            from ..history import local_run_id
            from .tally import MarathonTally

            assert self.config is not None
            commit = self.commit(self.config)
            self.tally = MarathonTally(
                self.settings.marathons_dir,
                commit=commit.sha,
                branch=commit.branch,
                run_id=commit.run_id or local_run_id(),
                budget_stops=self.settings.budget_stops,
            )
        self.tally.receive(data)

    @pytest.hookimpl(tryfirst=True)  # before the run report is written: it shows the verdicts
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.tally is None or not self.tally.tests:
            return
        from . import render

        self.verdicts = self.tally.verdicts()
        folder = self.settings.marathons_dir
        self.rows = render.verdict_rows(self.verdicts, _trace_finder(folder))
        self.problems = list(self.tally.problems)
        for verdict in self.verdicts:
            counted = render.session_outcome(verdict, _trace_finder(folder))
            if counted is not None:
                count_verdict(session.config, verdict.test, *counted)
        failed = any(verdict.fails for verdict in self.verdicts) or bool(self.problems)
        if failed and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_agentevals_verdicts(self, config: pytest.Config) -> list[VerdictRow]:
        """The session's marathon verdicts, as the report's rows (after the session finished)."""
        return self.rows

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.tally is None or not (self.verdicts or self.problems):
            return
        from . import render

        terminalreporter.write_sep("=", "agentevals marathon")
        folder = self.settings.marathons_dir
        for index, verdict in enumerate(self.verdicts):
            if index:
                terminalreporter.write_line("")
            for line, colour in render.text_lines(verdict, _trace_finder(folder)):
                terminalreporter.write_line(line, **({colour: True} if colour else {}))
        for problem in self.problems:
            terminalreporter.write_line(f"agentevals: {problem}", red=True)
        tally = self.tally
        kept = f"; {tally.kept} kept from an earlier session at this commit" if tally.kept else ""
        terminalreporter.write_line(f"results: {tally.results_path} ({tally.appended} new{kept})")
        failing = [verdict.test for verdict in self.verdicts if verdict.fails]
        if failing:
            terminalreporter.write_line(
                f"marathon failed: {len(failing)} verdict(s) below the bar — a bar's whole 95% interval "
                f"on its wrong side: {', '.join(safe(test) for test in failing)}",
                red=True,
            )


# -- a verdict counted in the session's outcome -----------------------------------------------------


@dataclass(frozen=True)
class _Crash:
    path: str
    lineno: int | None
    message: str


@dataclass(frozen=True)
class VerdictRepr:
    """A marathon verdict as a report's longrepr: its lines, in red, and the first as the short
    summary's message (pytest reads `reprcrash.message`)."""

    lines: tuple[str, ...]
    reprcrash: _Crash

    def toterminal(self, tw: Any) -> None:
        for line in self.lines:
            tw.line(line, red=True)

    def __str__(self) -> str:
        return "\n".join(self.lines)


def count_verdict(config: pytest.Config, test: str, outcome: str, lines: Sequence[str]) -> None:
    """Count a marathon verdict in the session's outcome as pytest counts a test's: one below its bar
    is a failed report (the summary line says `1 failed`, in red, and the short summary lists it with
    the metric and its interval), an inconclusive one is counted as `inconclusive` (yellow), never as
    passed. The seeds' own items keep their outcomes: each did its job, the verdict is over them.

    Called where reports arrive (a plain session, or the xdist controller) before the terminal
    summary; the pyramid table reads the same outcomes from the verdict rows (`VerdictRow.counts`)."""
    from .rows import FAILED

    terminal = config.pluginmanager.get_plugin("terminalreporter")
    if terminal is None:
        return
    path, _, name = test.partition("::")
    longrepr = VerdictRepr(tuple(lines), _Crash(path, None, lines[0].strip() if lines else test))
    report = pytest.TestReport(
        nodeid=test,
        location=(path, None, name or test),
        keywords={},
        outcome="failed" if outcome == FAILED else "passed",
        longrepr=longrepr if outcome == FAILED else None,  # type: ignore[arg-type]  # a TerminalRepr's shape
        when="call",
    )
    terminal.stats.setdefault(outcome, []).append(report)


def _trace_finder(folder: Any) -> render.TracePath:
    def find(result: SeedResult) -> Any:
        if result.trace is None:
            return None
        path = folder / result.trace
        return path if path.is_file() else None

    return find
