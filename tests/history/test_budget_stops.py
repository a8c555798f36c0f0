"""Attempts a budget stopped are their own outcome in the history (`budget_stopped`): recorded from a
real pytest run and read back from its JUnit XML, admitted by both stores (an SQLite file and a
PostgreSQL schema of version 1 upgraded in place, every row kept), left out of verdicts, flips and red
runs by default, counted and shown, and counted as failures with `budget_stops = "fail"`."""

from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from pytest_agentevals.errors import HistoryError
from pytest_agentevals.history import report as render
from pytest_agentevals.history.analysis import analyze
from pytest_agentevals.history.ingest import Ingester
from pytest_agentevals.history.junit import parse
from pytest_agentevals.history.model import BUDGET_STOPPED, FAILED, PASSED, SKIPPED, Attempt, Source
from pytest_agentevals.history.outage import tally
from pytest_agentevals.history.quarantine import Quarantine
from pytest_agentevals.history.sqlite import SCHEMA_VERSION, SQLiteStore
from pytest_agentevals.history.store import HistoryStore
from pytest_agentevals.history.variant import BUDGET_STOP_PROPERTY
from pytest_agentevals.history.verdicts import FAIL, FLAKY, PASS, STOPPED, verdicts
from pytest_agentevals.settings import Settings
from pytest_agentevals.settings.dburl import DatabaseURL

from ..conftest import run_agentevals
from .conftest import Opener
from .test_pytest import RERUN_CONFTEST

TODAY = dt.date(2026, 1, 1)
BUDGETS = {"step": 0.0, "replay": 0.0, "resume": 0.05, "marathon": 0.05, "min_samples": 1, "window": 100}

# A conftest whose agent makes 5 calls to the simulated model: a marathon seed under max_calls=2 is
# stopped by its budget, and its item passes (the verdict over seeds counts it).
CONFTEST = """
import anthropic
import pytest
from pytest_agentevals.sim import Reply, SimServer

def chat(client, turns):
    for turn in range(turns):
        client.messages.create(
            model="claude-sonnet-4-6", max_tokens=32, messages=[{"role": "user", "content": f"q{turn}"}]
        )

@pytest.fixture
def client():
    with SimServer(lambda request: Reply.text("ok"), seed=1) as sim:
        yield anthropic.Anthropic(base_url=sim.url, api_key="sim", max_retries=0)

def pytest_agentevals_run_agent(run):
    if run.marathon is None:
        return None
    with SimServer(lambda request: Reply.text("ok"), seed=1) as sim:
        chat(anthropic.Anthropic(base_url=sim.url, api_key="sim", max_retries=0), 5)
    return True
"""

TESTS = """
import pytest
from conftest import chat

@pytest.mark.agentevals_budget(max_calls=2)
def test_stopped(agentevals_recorder, client):
    chat(client, 3)  # the third call is refused: RunStopped (budget_exhausted) fails the test

@pytest.mark.agentevals_budget(max_calls=2)
def test_wrapped(agentevals_recorder, client):
    try:
        chat(client, 3)
    except Exception as exc:  # a harness that wraps the stop in an error of its own
        raise RuntimeError("the agent gave up") from exc

@pytest.mark.agentevals_budget(max_calls=2)
def test_within(agentevals_recorder, client):
    chat(client, 2)

def test_broken():
    assert False, "a real failure"

@pytest.mark.marathon(seeds=1, max_calls=2)
def test_seeded(agentevals_marathon):
    agentevals_marathon.run_agent()

@pytest.mark.marathon(seeds=1, max_calls=10)
def test_seeded_fine(agentevals_marathon):
    agentevals_marathon.run_agent()
"""


def _outcomes(store: SQLiteStore) -> dict[str, str]:
    return {row.test_id.split("::")[-1]: row.outcome for row in store.attempts()}


def test_a_pytest_run_records_budget_stops_as_their_own_outcome_and_its_junit_says_so(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_agent=TESTS)
    result = pytester.runpytest(
        "--agentevals-sha=c1",
        "--agentevals-history=h.sqlite",
        "--agentevals-traces-dir=traces",
        "--junitxml=junit.xml",
        "-p",
        "no:cacheprovider",
    )
    # pytest's own outcomes do not change: the stopped tests failed, the stopped seed passed.
    result.assert_outcomes(passed=3, failed=3)
    store = SQLiteStore(pytester.path / "h.sqlite")
    try:
        recorded = _outcomes(store)
    finally:
        store.close()
    assert recorded == {
        "test_stopped": BUDGET_STOPPED,
        "test_wrapped": BUDGET_STOPPED,  # the stop is in the chain of the error that failed it
        "test_within": PASSED,
        "test_broken": FAILED,
        "test_seeded[seed=0]": BUDGET_STOPPED,  # its run ended budget_exhausted, whatever its item did
        "test_seeded_fine[seed=0]": PASSED,
    }
    # The session's own flakiness report counts them apart (no verdict is made of them).
    result.stdout.fnmatch_lines(
        [
            "*agentevals flakiness*",
            "marathon: 1 of 2 attempts stopped by budget; (no layer): 2 of 4 attempts stopped by budget: "
            "left out of the verdicts and flaky rates*",
        ]
    )

    # The JUnit XML carries the stop as a property of each stopped testcase, and ingest reads it back.
    xml = (pytester.path / "junit.xml").read_bytes()
    assert xml.count(f'name="{BUDGET_STOP_PROPERTY}"'.encode()) == 3
    parsed = parse(Path("junit.xml"), xml, "d")
    assert {case.name: case.outcomes[-1][0] for case in parsed.cases} == {
        "test_stopped": BUDGET_STOPPED,
        "test_wrapped": BUDGET_STOPPED,
        "test_within": PASSED,
        "test_broken": FAILED,
        "test_seeded[seed=0]": BUDGET_STOPPED,
        "test_seeded_fine[seed=0]": PASSED,
    }
    fresh = SQLiteStore(pytester.path / "ingested.sqlite")
    try:
        summary = Ingester(fresh, pytester.path).ingest([pytester.path / "junit.xml"], sha="c1", run_id="r1")
        assert summary.stored == 1
        assert _outcomes(fresh) == recorded
    finally:
        fresh.close()


def test_a_rerun_after_a_budget_stop_is_judged_on_its_own(pytester: pytest.Pytester) -> None:
    # pytest-rerunfailures runs the same item again: the first attempt's stop must not stick to it.
    pytester.makeconftest(CONFTEST + RERUN_CONFTEST)
    pytester.makepyfile(
        test_agent="""
import pytest
from conftest import chat

@pytest.mark.agentevals_budget(max_calls=2)
def test_once_stopped(agentevals_recorder, client, request):
    marker = request.config.rootpath / "ran"
    first = not marker.exists()
    marker.touch()
    chat(client, 3 if first else 1)
"""
    )
    result = pytester.runpytest(
        "--agentevals-sha=c1", "--agentevals-history=h.sqlite", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=1)
    store = SQLiteStore(pytester.path / "h.sqlite")
    try:
        assert [(row.attempt, row.outcome) for row in store.attempts()] == [(1, BUDGET_STOPPED), (2, PASSED)]
    finally:
        store.close()


RUN_STOPPED = "pytest_agentevals.errors.RunStopped: the {guard} guard stopped the run as {status}: {why}"
CALLS = RUN_STOPPED.format(guard="budget", status="budget_exhausted", why="3 calls, over max_calls 2")
REFUSED = RUN_STOPPED.format(guard="daily_budget", status="budget_exhausted", why="refused before it started")
STALLED = RUN_STOPPED.format(guard="watchdog", status="stalled", why="no progress")
SEED = "seed 0 stopped by budget max_calls=2"
JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="6">
  <testcase classname="tests.test_a" name="test_property" time="1.0">
    <properties><property name="agentevals.layer" value="replay"/>
      <property name="agentevals.budget_stop" value="the budget guard stopped the run"/></properties>
    <failure message="SeedFailed: the run ended budget_exhausted">...</failure>
  </testcase>
  <testcase classname="tests.test_a" name="test_message" time="1.0">
    <failure message="CALLS">...</failure>
  </testcase>
  <testcase classname="tests.test_a" name="test_setup" time="0.1">
    <error message="failed on setup with &quot;REFUSED&quot;">...</error>
  </testcase>
  <testcase classname="tests.test_a" name="test_other_stop" time="1.0">
    <failure message="STALLED">...</failure>
  </testcase>
  <testcase classname="tests.test_a" name="test_plain" time="1.0">
    <failure message="AssertionError: budget_exhausted was not expected">...</failure>
  </testcase>
  <testcase classname="tests.test_a" name="test_skipped" time="0.0">
    <properties><property name="agentevals.budget_stop" value="x"/></properties>
    <skipped type="pytest.skip" message="no"/>
  </testcase>
  <testcase classname="tests.test_a" name="test_seed" time="1.0">
    <properties><property name="agentevals.budget_stop" value="SEED"/></properties>
  </testcase>
</testsuite></testsuites>
"""
for _name, _text in {"CALLS": CALLS, "REFUSED": REFUSED, "STALLED": STALLED, "SEED": SEED}.items():
    JUNIT = JUNIT.replace(f'"{_name}"', f'"{_text}"').replace(f";{_name}&", f";{_text}&")


def test_junit_ingest_recognises_budget_stops_by_property_and_by_message() -> None:
    parsed = parse(Path("junit.xml"), JUNIT.encode(), "d")
    assert {case.name: case.outcomes for case in parsed.cases} == {
        "test_property": [(BUDGET_STOPPED, 1.0)],
        "test_message": [(BUDGET_STOPPED, 1.0)],
        "test_setup": [(BUDGET_STOPPED, 0.1)],
        "test_other_stop": [(FAILED, 1.0)],  # a watchdog's stop is not a budget's
        "test_plain": [(FAILED, 1.0)],
        "test_skipped": [(SKIPPED, 0.0)],  # a skip stays a skip
        "test_seed": [(BUDGET_STOPPED, 1.0)],
    }
    assert parsed.cases[0].layer == "replay"


# The SQLite history's schema 1 exactly as the release before budget stops wrote it.
SQLITE_V1 = """
CREATE TABLE sources (
    id       INTEGER PRIMARY KEY,
    key      TEXT NOT NULL UNIQUE,      -- pytest:<uuid> or junit:<sha256 of the file>
    kind     TEXT NOT NULL,             -- pytest or junit
    run_id   TEXT NOT NULL,
    sha      TEXT,                      -- NULL: commit unknown, attempts kept but never judged
    branch   TEXT,
    path     TEXT,                      -- the JUnit file of a junit source
    created  REAL NOT NULL,             -- unix time the source was first stored
    excluded TEXT                       -- NULL, or why its attempts are not judged (an outage)
);
CREATE TABLE tests (
    id      INTEGER PRIMARY KEY,
    test_id TEXT NOT NULL,
    variant TEXT NOT NULL,              -- canonical JSON of seed, model and marker parameters, or ''
    layer   TEXT NOT NULL,              -- step, replay, resume, marathon, or '' outside the pyramid
    UNIQUE (test_id, variant, layer)
);
CREATE TABLE attempts (
    id       INTEGER PRIMARY KEY,       -- insertion order: the recency of an attempt
    source   INTEGER NOT NULL REFERENCES sources (id),
    test     INTEGER NOT NULL REFERENCES tests (id),
    attempt  INTEGER NOT NULL,          -- 1, then 2 for the first rerun in the same source...
    outcome  TEXT NOT NULL CHECK (outcome IN ('passed', 'failed', 'error', 'skipped')),
    duration REAL NOT NULL,
    worker   TEXT
);
CREATE VIEW attempt_rows AS
    SELECT a.id, t.test_id, NULLIF(t.layer, '') AS layer, t.variant, s.sha, s.branch, s.run_id,
           a.attempt, a.outcome, a.duration, a.worker, s.key AS source, s.excluded
    FROM attempts a JOIN sources s ON s.id = a.source JOIN tests t ON t.id = a.test;
"""


def _v1_sqlite(path: Path, extra: str = "") -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        for statement in SQLITE_V1.split(";"):
            if statement.strip():
                conn.execute(statement)
        conn.execute("PRAGMA user_version = 1")
        conn.execute(
            "INSERT INTO sources VALUES (1, 'junit:a', 'junit', 'r1', 'c1', 'main', 'a.xml', 1.0, NULL)"
        )
        conn.execute(
            "INSERT INTO sources VALUES (2, 'pytest:b', 'pytest', 'r2', 'c2', NULL, NULL, 2.0, 'outage')"
        )
        conn.execute(
            "INSERT INTO tests VALUES (1, 't.py::test_a', '', 'replay'), (2, 't.py::test_b', '{}', '')"
        )
        conn.execute(
            "INSERT INTO attempts VALUES (1, 1, 1, 1, 'passed', 0.5, 'gw0'), "
            "(2, 1, 1, 2, 'failed', 0.25, NULL), (5, 2, 2, 1, 'skipped', 0.0, 'main'), "
            "(9, 1, 2, 1, 'error', 1.5, 'main')"
        )
        with pytest.raises(sqlite3.IntegrityError):  # the old schema refuses the new outcome
            conn.execute("INSERT INTO attempts VALUES (10, 1, 1, 3, 'budget_stopped', 0.0, NULL)")
        if extra:
            conn.execute(extra)
    finally:
        conn.close()


def test_an_sqlite_history_of_schema_1_is_upgraded_in_place_keeping_every_row(tmp_path: Path) -> None:
    old = tmp_path / "old.sqlite"
    _v1_sqlite(old)
    before = sqlite3.connect(old)
    rows = before.execute("SELECT * FROM attempt_rows ORDER BY id").fetchall()
    before.close()
    store = SQLiteStore(old)
    try:
        assert [row.outcome for row in store.attempts()] == ["passed", "failed", "skipped", "error"]
        assert store.excluded_sources()[0].reason == "outage"
        store.append(
            Source("pytest:c", "pytest", "r3", "c1"),
            [Attempt("t.py::test_a", "replay", "", 1, BUDGET_STOPPED, 0.1)],
        )
        assert [row.outcome for row in store.attempts()][-1] == BUDGET_STOPPED
    finally:
        store.close()
    after = sqlite3.connect(old)
    try:
        assert after.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 2
        assert after.execute("SELECT * FROM attempt_rows WHERE id <= 9 ORDER BY id").fetchall() == rows
        assert [row[0] for row in after.execute("SELECT id FROM attempts ORDER BY id")] == [1, 2, 5, 9, 10]
        migrated = after.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall()
    finally:
        after.close()
    SQLiteStore(tmp_path / "new.sqlite").close()  # a new history: the migrated one must read the same
    new = sqlite3.connect(tmp_path / "new.sqlite")
    try:
        assert new.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall() == migrated
    finally:
        new.close()
    SQLiteStore(old).close()  # and it opens again as a current history


def test_an_sqlite_history_of_schema_1_with_an_object_of_its_own_is_refused_not_migrated(
    tmp_path: Path,
) -> None:
    old = tmp_path / "old.sqlite"
    _v1_sqlite(
        old, "CREATE TRIGGER lie AFTER INSERT ON attempts BEGIN UPDATE attempts SET outcome = 'passed'; END"
    )
    with pytest.raises(HistoryError, match="a trigger 'lie'"):
        SQLiteStore(old)
    conn = sqlite3.connect(old)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 1  # untouched
    finally:
        conn.close()


def _seed_stops(store: HistoryStore, *, run: str = "r1") -> None:
    """replay: test_a passed and was stopped on c1 (2 attempts), test_b only stopped on c2; test_c
    failed then was stopped last in its run on c1; outside the pyramid, one stop among two passes."""
    attempts = [
        Attempt("t.py::test_a", "replay", "", 1, PASSED, 0.1),
        Attempt("t.py::test_a", "replay", "", 2, BUDGET_STOPPED, 0.1),
        Attempt("t.py::test_c", "replay", "", 1, PASSED, 0.1),
    ]
    store.append(Source("pytest:1", "pytest", run, "c1"), attempts)
    store.append(
        Source("pytest:2", "pytest", "r2", "c2"),
        [Attempt("t.py::test_b", "replay", "", 1, BUDGET_STOPPED, 0.1)],
    )
    store.append(
        Source("pytest:3", "pytest", "r3", "c1"),
        [
            Attempt("t.py::test_c", "replay", "", 1, FAILED, 0.1),
            Attempt("t.py::test_c", "replay", "", 2, BUDGET_STOPPED, 0.1),
            Attempt("u.py::test_u", None, "", 1, PASSED, 0.1),
            Attempt("u.py::test_u", None, "", 2, BUDGET_STOPPED, 0.1),
            Attempt("u.py::test_u", None, "", 3, PASSED, 0.1),
        ],
    )


def test_budget_stops_are_left_out_of_verdicts_and_counted_apart(backend: Opener) -> None:
    store = backend()
    _seed_stops(store)
    counts = {(c.test_id, c.sha): (c.passes, c.failures, c.stopped) for c in store.verdict_counts()}
    assert counts == {
        ("t.py::test_a", "c1"): (1, 0, 1),
        ("t.py::test_b", "c2"): (0, 0, 1),
        ("t.py::test_c", "c1"): (1, 1, 1),
        ("u.py::test_u", "c1"): (2, 0, 1),
    }
    by_test = {(v.test_id, v.sha): v.verdict for v in verdicts(store.verdict_counts())}
    assert by_test == {
        ("t.py::test_a", "c1"): PASS,  # the stop is no failure: no flip
        ("t.py::test_b", "c2"): STOPPED,  # nothing but a stop: no verdict
        ("t.py::test_c", "c1"): FLAKY,  # a pass and a real failure
        ("u.py::test_u", "c1"): PASS,
    }
    assert store.flaky_keys() == {("t.py::test_c", "", "c1")}
    # r3's last attempt of test_c was stopped: its failure before it is what the run ended on.
    assert {(f.run_id, f.test_id, f.outcome) for f in store.failing_finals()} == {
        ("r3", "t.py::test_c", FAILED)
    }
    assert ("r2", "replay") not in {(r.run_id, r.layer) for r in store.run_layers()}  # stops only

    report = analyze(store, BUDGETS, Quarantine(Path("none.yaml")), TODAY)
    replay = report.layer("replay").metrics
    assert (replay.verdicts, replay.flaky, replay.attempts, replay.stopped) == (2, 1, 6, 3)
    assert (report.outside.metrics.attempts, report.outside.metrics.stopped) == (3, 1)
    assert (report.attempts, report.stopped) == (9, 4)
    line = render.stops_line(report)
    assert line == (
        "replay: 3 of 6 attempts stopped by budget; (no layer): 1 of 3 attempts stopped by budget: left out "
        'of the verdicts and flaky rates (budget_stops = "fail" counts them as failures)'
    )
    assert (line, "yellow") in render.text_lines(report)
    data = render.to_json(report)
    assert data["budget_stops"] == {"mode": "exclude", "attempts": 9, "stopped": 4}
    replay_json = next(layer for layer in data["layers"] if layer["layer"] == "replay")
    assert (replay_json["attempts"], replay_json["stopped_by_budget"]) == (6, 3)
    assert line.replace("|", "\\|") + "." in render.markdown(report)


def test_budget_stops_fail_counts_them_as_failures(backend: Opener) -> None:
    store = backend()
    _seed_stops(store)
    by_test = {(v.test_id, v.sha): v.verdict for v in verdicts(store.verdict_counts(), "fail")}
    assert by_test == {
        ("t.py::test_a", "c1"): FLAKY,
        ("t.py::test_b", "c2"): FAIL,
        ("t.py::test_c", "c1"): FLAKY,
        ("u.py::test_u", "c1"): FLAKY,
    }
    assert store.flaky_keys("fail") == {
        ("t.py::test_a", "", "c1"),
        ("t.py::test_c", "", "c1"),
        ("u.py::test_u", "", "c1"),
    }
    finals = {(f.run_id, f.test_id, f.outcome) for f in store.failing_finals("fail")}
    assert finals == {
        ("r1", "t.py::test_a", BUDGET_STOPPED),
        ("r2", "t.py::test_b", BUDGET_STOPPED),
        ("r3", "t.py::test_c", BUDGET_STOPPED),
    }
    report = analyze(store, BUDGETS, Quarantine(Path("none.yaml")), TODAY, budget_stops="fail")
    replay = report.layer("replay").metrics
    assert (replay.verdicts, replay.flaky, replay.attempts, replay.stopped) == (3, 2, 6, 3)
    assert render.to_json(report)["budget_stops"]["mode"] == "fail"
    assert 'counted as failures (budget_stops = "fail")' in (render.stops_line(report) or "")


def test_a_session_every_test_of_which_a_budget_stopped_is_no_outage() -> None:
    assert tally([BUDGET_STOPPED] * 12) == (12, 0)
    assert tally([BUDGET_STOPPED] * 6 + [FAILED] * 6) == (12, 6)


def test_flaky_report_prints_the_stops_and_takes_the_setting(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "h.sqlite")
    try:
        _seed_stops(store)
    finally:
        store.close()
    assert Settings.resolve(tmp_path, pyproject={"budget_stops": "fail"}, environ={}).budget_stops == "fail"
    text = run_agentevals("flaky", "report", "--history", "h.sqlite", cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    assert "replay: 3 of 6 attempts stopped by budget" in text.stdout
    default = json.loads(
        run_agentevals("flaky", "report", "--json", "--history", "h.sqlite", cwd=tmp_path).stdout
    )
    assert default["budget_stops"] == {"mode": "exclude", "attempts": 9, "stopped": 4}
    done = run_agentevals(
        "flaky", "report", "--json", "--history", "h.sqlite", "--budget-stops", "fail", cwd=tmp_path
    )
    counted = json.loads(done.stdout)
    assert counted["budget_stops"]["mode"] == "fail"
    assert next(layer for layer in counted["layers"] if layer["layer"] == "replay")["verdicts"] == 3
    bad = run_agentevals("flaky", "report", "--history", "h.sqlite", "--budget-stops", "never", cwd=tmp_path)
    assert bad.returncode == 2
    assert "--budget-stops" in bad.stderr


# The PostgreSQL history's schema 1 exactly as the release before budget stops made it.
POSTGRES_V1 = """
CREATE SCHEMA IF NOT EXISTS agentevals_history;
CREATE TABLE agentevals_history.meta (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE agentevals_history.sources (
    id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    key      text NOT NULL UNIQUE,
    kind     text NOT NULL,
    run_id   text NOT NULL,
    sha      text,
    branch   text,
    path     text,
    created  double precision NOT NULL,
    excluded text
);
CREATE TABLE agentevals_history.tests (
    id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    test_id text NOT NULL,
    variant text NOT NULL,
    layer   text NOT NULL,
    UNIQUE (test_id, variant, layer)
);
CREATE TABLE agentevals_history.attempts (
    id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    source   bigint NOT NULL REFERENCES agentevals_history.sources (id),
    test     bigint NOT NULL REFERENCES agentevals_history.tests (id),
    attempt  integer NOT NULL,
    outcome  text NOT NULL CHECK (outcome IN ('passed', 'failed', 'error', 'skipped')),
    duration double precision NOT NULL,
    worker   text
);
CREATE INDEX attempts_source ON agentevals_history.attempts (source);
INSERT INTO agentevals_history.meta (key, value) VALUES ('schema_version', '1');
INSERT INTO agentevals_history.sources (key, kind, run_id, sha, created)
    VALUES ('junit:a', 'junit', 'r1', 'c1', 1.0), ('pytest:b', 'pytest', 'r2', 'c2', 2.0);
INSERT INTO agentevals_history.tests (test_id, variant, layer)
    VALUES ('t.py::test_a', '', 'replay'), ('t.py::test_b', '', '');
INSERT INTO agentevals_history.attempts (source, test, attempt, outcome, duration, worker)
    VALUES (1, 1, 1, 'passed', 0.5, 'gw0'), (1, 1, 2, 'failed', 0.25, NULL), (2, 2, 1, 'error', 1.0, 'main');
"""


@pytest.fixture
def psycopg() -> Any:
    if os.environ.get("CI"):
        import psycopg

        return psycopg
    from ..pg_support import NO_POSTGRES

    return pytest.importorskip("psycopg", reason=NO_POSTGRES)


def test_a_postgres_history_of_schema_1_is_migrated_keeping_every_row(
    psycopg: Any, pg_url: DatabaseURL
) -> None:
    from pytest_agentevals import pg
    from pytest_agentevals.history.postgres import SCHEMA, SCHEMA_VERSION, PostgresStore
    from pytest_agentevals.history.postgres_schema import EXPECTED, OLDER

    url = pg_url.url
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(POSTGRES_V1)
        with pytest.raises(psycopg.errors.CheckViolation):
            conn.execute(
                f"INSERT INTO {SCHEMA}.attempts (source, test, attempt, outcome, duration) "
                "VALUES (1, 1, 3, 'budget_stopped', 0.0)"
            )
        conn.execute("SET search_path = pg_catalog, pg_temp")
        assert pg.snapshot(pg.describe(conn, SCHEMA)) == OLDER[1]  # the old catalog, as the store knows it
    store = PostgresStore(pg_url)
    try:
        assert [(r.test_id, r.outcome, r.attempt, r.worker) for r in store.attempts()] == [
            ("t.py::test_a", PASSED, 1, "gw0"),
            ("t.py::test_a", FAILED, 2, None),
            ("t.py::test_b", "error", 1, "main"),
        ]
        store.append(
            Source("pytest:c", "pytest", "r3", "c1"),
            [Attempt("t.py::test_a", "replay", "", 3, BUDGET_STOPPED, 0.1)],
        )
        assert [r.outcome for r in store.attempts()][-1] == BUDGET_STOPPED
        counts = {(c.test_id, c.sha): (c.passes, c.failures, c.stopped) for c in store.verdict_counts()}
        assert counts[("t.py::test_a", "c1")] == (1, 1, 1)
    finally:
        store.close()
    with psycopg.connect(url) as conn:
        conn.execute("SET search_path = pg_catalog, pg_temp")
        assert pg.snapshot(pg.describe(conn, SCHEMA)) == EXPECTED  # reads as a new schema does
        version = conn.execute(f"SELECT value FROM {SCHEMA}.meta WHERE key = 'schema_version'").fetchone()
        assert version == (str(SCHEMA_VERSION),) == ("2",)
    PostgresStore(pg_url).close()


def test_a_postgres_history_of_schema_1_with_an_object_of_its_own_is_refused(
    psycopg: Any, pg_url: DatabaseURL
) -> None:
    from pytest_agentevals.history.postgres import SCHEMA, PostgresStore

    url = pg_url.url
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(POSTGRES_V1)
        conn.execute(f"CREATE VIEW {SCHEMA}.lies AS SELECT 1 AS x")
    with pytest.raises(HistoryError, match="a view 'lies'"):
        PostgresStore(pg_url)
    with psycopg.connect(url) as conn:
        version = conn.execute(f"SELECT value FROM {SCHEMA}.meta WHERE key = 'schema_version'").fetchone()
        assert version == ("1",)  # not migrated
