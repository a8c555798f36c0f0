"""The pytest glue every layer's face shares, in one module beside the top-level `plugin.py`: the
engines below never import it (a test checks). Three things live here:

- **Marker specs** (`MarkerSpec`): a layer's marker, declared once and checked once, at collection.
  Each face declares the marker it reads — its positional arguments, its own keywords with a parser
  each, and the keywords that override a setting (parsed by `Settings.for_marker`):

      REPLAY = MarkerSpec("replay", positional=("cassette",), keywords={"cassette": text, ...},
                          settings=("mode", "record"))

  and calls `spec.check(session, items, settings)` from `pytest_collection_modifyitems`. Any mistake
  stops the run before a test runs, with `pytest.UsageError` naming the test, the keyword and the
  allowed ones: an unknown keyword (`mdoe=`), a bad value, too many positional arguments, or an
  unregistered marker whose name is a near miss of the layer's (`@pytest.mark.replya`). What it
  parsed waits in `item.stash[spec.key]` for the layer's fixture.
- **Report payloads**: one reading of pytest's reports, shared by the pyramid table and the history
  — which layer a test is in (`tag_layer`, `report_layer`), and what each attempt ended as
  (`Attempt`, `Attempts`).
  - The layer is the test's `agentevals.layer` property, put there at collection from its markers.
    Properties travel inside reports to an xdist controller and into JUnit XML; a report's keywords
    would not do, since a parametrize id or a folder named `replay` is a keyword too.
  - An attempt is one run of a test's setup, call and teardown, or of the part of them that ran
    before pytest-rerunfailures ran it again (a report with the outcome "rerun"). It ended as its
    worst phase.
  - A quarantined test's xfail is its real outcome: its XPASS passed, its XFAIL failed. A genuine
    xfail, like a skip, is no signal (skipped); a genuine non-strict XPASS passed.
- **What several faces ask of a test**: its run budget and guards (`budget_for`, `guards_for_item`:
  `[tool.agentevals.budget]`, then the budget keywords of its markers — module, class, then
  function: the closest wins — under `--agentevals-budget`, which no marker overrides), the contract
  its harness declares (`declared_contract`), the marathon verdicts a session report shows
  (`VERDICTS_KEY`), and those not met counted in the session's outcome (`count_verdict`).
- **The session's settings**: the `--agentevals-*` options made from the `OPTIONS` table
  (`add_options`), resolved once at configure (`resolve_settings`) and read back by every face
  (`settings_of`); and `is_worker(config)`, the one test of "this process is an xdist worker" (only
  the controller writes shared files).
"""

from __future__ import annotations

import difflib
import itertools
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from .errors import AgentEvalsError, ConfigError
from .history import quarantine
from .history.model import ERROR, FAILED, PASSED, SKIPPED
from .history.variant import LAYER_PROPERTY, from_properties
from .settings import OPTIONS, Settings, find_pyproject, read_pyproject
from .settings.budgets import Budget, split_keywords
from .settings.layers import LAYERS, layer_of

Parse = Callable[[str, Any], Any]  # (where, raw value) -> value, raising ConfigError


@dataclass(frozen=True)
class Marked:
    """A test's marker, checked: its own arguments (parsed) and the run's settings under it."""

    values: Mapping[str, Any]
    settings: Settings

    @property
    def bare(self) -> bool:
        """No argument of the layer's own (setting keywords aside): the test's own default applies."""
        return not self.values


@dataclass(frozen=True, eq=False)
class MarkerSpec:
    """One layer's marker: `name`, its positional arguments' names (each also a keyword), its own
    keywords and their parsers, and the keywords that override a setting (`Option.marker_kwarg`)."""

    name: str
    positional: tuple[str, ...] = ()
    # The parsers, or a function that gives them: a face declares its marker at import, and the
    # parsers (from its engine) load with the first test that carries the marker.
    keywords: Mapping[str, Parse] | Callable[[], Mapping[str, Parse]] = field(default_factory=dict)
    settings: tuple[str, ...] = ()
    key: pytest.StashKey[Marked] = field(default_factory=lambda: pytest.StashKey[Marked]())

    @property
    def parsers(self) -> Mapping[str, Parse]:
        # Asked anew each time, not cached: the engine's parsers come from the modules in sys.modules
        # now (pytester drops modules between in-process runs; a cached parser would be a stale copy).
        return self.keywords() if callable(self.keywords) else self.keywords

    @property
    def allowed(self) -> tuple[str, ...]:
        return (*self.parsers, *self.settings)

    def parse(self, mark: pytest.Mark, settings: Settings) -> Marked:
        """Check one marker; ConfigError naming the marker and the keyword otherwise."""
        where = f"@pytest.mark.{self.name}"
        if len(mark.args) > len(self.positional):
            takes = ", ".join(self.positional) or "none"
            raise ConfigError(
                f"{where}{_call(mark)}",
                f"takes at most {len(self.positional)} positional argument(s) ({takes})",
                "give the others as keywords: " + ", ".join(self.allowed),
            )
        raw = dict(zip(self.positional, mark.args, strict=False))
        for name, value in mark.kwargs.items():
            if name in raw:
                raise ConfigError(f"{where}({name}=...)", "given twice, as a positional and a keyword")
            raw[name] = value
        values: dict[str, Any] = {}
        overrides: dict[str, Any] = {}
        for name, value in raw.items():
            if name in self.settings:
                overrides[name] = value
            elif name in self.parsers:
                values[name] = self.parsers[name](f"{where}({name}=...)", value)
            else:
                near = difflib.get_close_matches(name, self.allowed, n=1)
                hint = f"did you mean {near[0]}=? " if near else ""
                raise ConfigError(
                    f"{where}({name}=...)", "unknown keyword", hint + "allowed: " + ", ".join(self.allowed)
                )
        return Marked(values, settings.for_marker(self.name, overrides))

    def check(self, session: pytest.Session, items: list[pytest.Item], settings: Settings) -> None:
        """Check this marker on every collected test (every one of its marks, module-level ones too)
        and keep the closest one's reading; raise `pytest.UsageError` listing the mistakes.

        Under pytest-xdist a worker cannot end the run with a usage error (the controller would call
        it a crash): it stops the session with the message instead, and collects nothing.
        """
        try:
            self._check(items, settings, registered_markers(session.config))
        except pytest.UsageError as exc:
            if not is_worker(session.config):
                raise
            session.shouldstop = str(exc)
            items.clear()

    def _check(self, items: Iterable[pytest.Item], settings: Settings, registered: Iterable[str]) -> None:
        known = set(registered)
        errors: list[str] = []
        for item in items:
            try:
                for mark in item.iter_markers():
                    if mark.name not in known and near_miss(mark.name, [self.name]):
                        raise ConfigError(
                            f"@pytest.mark.{mark.name}",
                            "is not a marker",
                            f"did you mean @pytest.mark.{self.name}? (or register "
                            f"{mark.name!r} under markers in your pytest configuration)",
                        )
                closest = item.get_closest_marker(self.name)
                for mark in item.iter_markers(self.name):
                    marked = self.parse(mark, settings)
                    if mark is closest:
                        item.stash[self.key] = marked
            except ConfigError as exc:
                errors.append(f"{item.nodeid}: {exc}")
        if errors:
            more = f"\n  … and {len(errors) - 5} more" if len(errors) > 5 else ""
            raise pytest.UsageError("agentevals: " + "\n".join(errors[:5]) + more)

    def of(self, item: pytest.Item) -> Marked | None:
        """What `check` read from the test's closest marker (None when it has none)."""
        return item.stash.get(self.key, None)


def near_miss(name: str, candidates: Iterable[str]) -> str | None:
    """The candidate `name` looks like a typo of (`replya` -> `replay`), or None."""
    found = difflib.get_close_matches(name, [c for c in candidates if c != name], n=1, cutoff=0.75)
    return found[0] if found else None


def registered_markers(config: pytest.Config) -> set[str]:
    """The names of every marker registered with pytest (by plugins and the ini `markers`)."""
    lines = config.getini("markers")
    return {str(line).split(":", 1)[0].split("(", 1)[0].strip() for line in lines}


def _call(mark: pytest.Mark) -> str:
    parts = [repr(arg) for arg in mark.args] + [f"{key}=..." for key in mark.kwargs]
    return f"({', '.join(parts)})"


# -- parsers for a layer's own keywords --------------------------------------------------------------


def text_or_path(where: str, raw: Any) -> Any:
    if isinstance(raw, str) and raw.strip():
        return raw
    if isinstance(raw, os.PathLike):
        return raw
    raise ConfigError(where, f"{raw!r} is not a name or a path", "give a cassette name or a file path")


def step_number(where: str, raw: Any) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
        raise ConfigError(where, f"{raw!r} is not a step number", "give an int >= 0")
    return raw


def anything(where: str, raw: Any) -> Any:
    return raw


# -- report payloads: what each attempt of a test ended as --------------------------------------------
_RANK = {PASSED: 0, SKIPPED: 1, ERROR: 2, FAILED: 3}


def tag_layer(item: pytest.Item) -> str | None:
    """Record the layer of a test (from its markers) as its property, and return it."""
    layer = layer_of({marker.name for marker in item.iter_markers()})
    if layer is not None:
        item.user_properties.append((LAYER_PROPERTY, layer))
    return layer


def report_layer(report: pytest.TestReport) -> str | None:
    """The layer of the test a report is about (None: outside the pyramid)."""
    return from_properties(report.user_properties)[0]


def is_rerun(report: pytest.TestReport) -> bool:
    """Whether pytest-rerunfailures marked this report: its attempt failed and the test runs again."""
    outcome: str = report.outcome
    return outcome == "rerun"


def is_quarantined(report: pytest.TestReport) -> bool:
    """Whether the report is of a test the quarantine turned into a non-strict xfail."""
    wasxfail = getattr(report, "wasxfail", None)
    return isinstance(wasxfail, str) and wasxfail.startswith(quarantine.REASON_PREFIX)


def phase_outcome(report: pytest.TestReport) -> str:
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


@dataclass
class Attempt:
    """One attempt of one test, as its reports arrive."""

    nodeid: str
    outcome: str = PASSED
    duration: float = 0.0
    quarantined: bool = False
    last: pytest.TestReport | None = None  # the latest report: its user_properties are the fullest
    rerun: bool = False  # it failed and the test runs again: not the test's final attempt

    @property
    def layer(self) -> str | None:
        return report_layer(self.last) if self.last is not None else None


class Attempts:
    """Folds phase reports into attempts, for whoever receives reports (the xdist controller too)."""

    def __init__(self) -> None:
        self._open: dict[str, Attempt] = {}

    def add(self, report: pytest.TestReport) -> Attempt | None:
        """Take one report; the attempt it completes (at teardown, or at a rerun), else None."""
        attempt = self._open.setdefault(report.nodeid, Attempt(report.nodeid))
        attempt.duration += report.duration
        attempt.last = report
        attempt.quarantined = attempt.quarantined or is_quarantined(report)
        outcome = phase_outcome(report)
        if _RANK[outcome] > _RANK[attempt.outcome]:
            attempt.outcome = outcome
        if report.when == "teardown" or is_rerun(report):
            attempt.rerun = is_rerun(report)
            return self._open.pop(report.nodeid)
        return None

    def unfinished(self) -> list[Attempt]:
        """The attempts whose teardown never came (a crashed xdist worker's last test), closed now."""
        left = [attempt for attempt in self._open.values() if attempt.last is not None]
        self._open.clear()
        return left


# -- xdist ---------------------------------------------------------------------------------------------


def is_worker(config: pytest.Config) -> bool:
    """Whether this process is an xdist worker: it sends what it saw through reports, and only the
    controller (or a plain session) writes shared files."""
    return hasattr(config, "workerinput")


# -- the session's settings ----------------------------------------------------------------------------

SETTINGS_KEY = pytest.StashKey[Settings]()


def add_options(parser: pytest.Parser) -> None:
    """One `--agentevals-*` option per entry of the `OPTIONS` table."""
    group = parser.getgroup("agentevals", "agentevals: the eval pyramid for long-running agents")
    for option in OPTIONS:
        if option.flag:
            group.addoption(option.cli, action="store_const", const=True, default=None, help=option.help)
        else:
            extra = f" (one of: {', '.join(option.choices)})" if option.choices else ""
            default = "" if option.default in (None, {}) else f"; default {option.default}"
            group.addoption(
                option.cli,
                default=None,
                action="append" if option.text else "store",
                metavar=option.metavar or option.key.upper(),
                help=f"{option.help}{extra}{default}",
            )


def resolve_settings(config: pytest.Config) -> Settings:
    """The run's settings, resolved once (CLI > marker > pyproject > default) and kept in the stash;
    a bad value stops the run with a usage error naming it. Registers the layers' markers."""
    for layer in LAYERS:
        config.addinivalue_line("markers", layer.marker_help)
    cli = {option.key: config.getoption(option.cli) for option in OPTIONS}
    try:
        settings = Settings.resolve(config.rootpath, cli=cli, pyproject=read_pyproject(_pyproject(config)))
    except ConfigError as exc:
        raise pytest.UsageError(f"agentevals: {exc}") from None
    config.stash[SETTINGS_KEY] = settings
    _warn_spaced_paths(config)
    return settings


# The options whose value is a path: given as `--opt VALUE`, pytest takes VALUE as a test path too
# when it chooses the rootdir, so a path outside the project moves the rootdir (and .agentevals/).
PATH_OPTIONS = frozenset(
    {
        "--agentevals-trace-dir",
        "--agentevals-cassette-dir",
        "--agentevals-goldens-dir",
        "--agentevals-fixtures-dir",
        "--agentevals-history",
        "--agentevals-quarantine",
        "--agentevals-ledger",
        "--agentevals-marathon-dir",
        "--agentevals-report",
    }
)


def _warn_spaced_paths(config: pytest.Config) -> None:
    args, here = list(config.invocation_params.args), config.invocation_params.dir
    for flag, value in itertools.pairwise(args):
        if flag not in PATH_OPTIONS or value.startswith("-") or "://" in value:
            continue
        path = Path(value) if Path(value).is_absolute() else here / value
        if path.resolve().is_relative_to(here.resolve()):
            continue  # inside the folder pytest runs in: the rootdir is not moved
        config.issue_config_time_warning(
            pytest.PytestConfigWarning(
                f"agentevals: {flag} {value}: written with a space, pytest also took {value} as a test "
                f"path when it chose the rootdir ({config.rootpath}), where .agentevals/ and the "
                f"settings are looked for; write {flag}={value}"
            ),
            stacklevel=2,
        )


def settings_of(config: pytest.Config) -> Settings:
    """The run's resolved settings (for fixtures and the other faces)."""
    return config.stash[SETTINGS_KEY]


def _pyproject(config: pytest.Config) -> Path | None:
    inipath = config.inipath
    if inipath is not None and inipath.name == "pyproject.toml":
        return inipath
    return find_pyproject(config.rootpath)


# -- what several faces ask of a test ------------------------------------------------------------------

BUDGET_MARKER = "agentevals_budget"
# The marathon verdicts of the session, as the run report's rows: set by the marathon face when the
# session finishes (before the session report is written), read by the report face.
VERDICTS_KEY = pytest.StashKey[list[Any]]()
# The marathon verdicts not met, as (test, "failed" | "inconclusive"): counted by the pyramid table.
VERDICT_OUTCOMES_KEY = pytest.StashKey[list[tuple[str, str]]]()
VERDICT_FAILED, VERDICT_INCONCLUSIVE = "failed", "inconclusive"


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
    summary; the pyramid table reads the same outcomes (`VERDICT_OUTCOMES_KEY`)."""
    config.stash.setdefault(VERDICT_OUTCOMES_KEY, []).append((test, outcome))
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    if terminal is None:
        return
    path, _, name = test.partition("::")
    longrepr = VerdictRepr(tuple(lines), _Crash(path, None, lines[0].strip() if lines else test))
    report = pytest.TestReport(
        nodeid=test,
        location=(path, None, name or test),
        keywords={},
        outcome="failed" if outcome == VERDICT_FAILED else "passed",
        longrepr=longrepr if outcome == VERDICT_FAILED else None,  # type: ignore[arg-type]  # a TerminalRepr's shape
        when="call",
    )
    terminal.stats.setdefault(outcome, []).append(report)


def budget_for(item: pytest.Item, settings: Settings, markers: Sequence[str] = (BUDGET_MARKER,)) -> Budget:
    """The budget of a test: the configured one with the budget keywords of `markers` applied
    (farthest first, so the function's marker wins over its class's and module's). Keywords of other
    markers that are not budget keys are left to their layer; `agentevals_budget` takes only keys."""
    budget = settings.budget
    for name in markers:
        for marker in reversed(list(item.iter_markers(name))):
            if name == BUDGET_MARKER and marker.args:
                raise ConfigError(
                    f"@pytest.mark.{BUDGET_MARKER}",
                    "takes keywords only",
                    "write e.g. agentevals_budget(max_calls=40)",
                )
            keywords = dict(marker.kwargs) if name == BUDGET_MARKER else split_keywords(marker.kwargs)[0]
            budget = budget.with_keywords(keywords, f"@pytest.mark.{name}")
    return budget


def guards_for_item(
    item: pytest.Item,
    settings: Settings,
    markers: Sequence[str] = (BUDGET_MARKER,),
    budget: Budget | None = None,
) -> list[Any]:
    """The guards a test's run is recorded under (its budget's, or `budget`); the watchdog asks the
    `pytest_agentevals_watchdog` hooks of the conftest.py files that apply to the test."""
    from .guards.build import guards_for

    hooks = item.ihook

    def ask(run: Any, reason: str) -> Any:
        return hooks.pytest_agentevals_watchdog(run=run, reason=reason)

    chosen = budget if budget is not None else budget_for(item, settings, markers)
    return guards_for(chosen, ledger=settings.ledger, unreachable=settings.ledger_unreachable, ask=ask)


def declared_contract(item: pytest.Item) -> dict[str, Any]:
    """What the harness declares now for this test: every `pytest_agentevals_contract()` dict of the
    plugins and of the conftest.py files that apply to the test's folder, merged."""
    declared: dict[str, Any] = {}
    for part in reversed(item.ihook.pytest_agentevals_contract()):
        if part is None:
            continue
        if not isinstance(part, dict):
            raise AgentEvalsError(
                f"a pytest_agentevals_contract() hook returned {type(part).__name__}; return a dict of "
                "JSON values by key (or None)"
            )
        declared.update(part)
    return declared
