"""JUnit ingest: the shapes reruns leave behind, test ids and layers mapped back, idempotency, outages,
broken files; and the `agentevals flaky` command as a subprocess."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest

from pytest_agentevals.errors import HistoryError
from pytest_agentevals.history import junit
from pytest_agentevals.history.budgets import FLAKY_EXIT_CODE
from pytest_agentevals.history.ingest import Ingester, expand
from pytest_agentevals.history.model import PYTEST, Attempt, Source
from pytest_agentevals.history.sqlite import SQLiteStore
from pytest_agentevals.history.verdicts import verdicts

from ..conftest import run_agentevals
from .test_store import _damage_page_of

# pytest-rerunfailures writes one <testcase> per attempt; the attempts that were rerun are empty.
RERUNFAILURES = """\
<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="8" failures="1" errors="1" skipped="1">
  <testcase classname="tests.test_agent" name="test_always_fails" time="0.1" />
  <testcase classname="tests.test_agent" name="test_always_fails" time="0.1" />
  <testcase classname="tests.test_agent" name="test_always_fails" time="0.1">
    <failure message="assert False">AssertionError</failure>
  </testcase>
  <testcase classname="tests.test_agent" name="test_eventually_passes" time="0.1" />
  <testcase classname="tests.test_agent" name="test_eventually_passes" time="0.25" />
  <testcase classname="tests.test_agent.TestPlanner" name="test_plan[3]" time="0.3" />
  <testcase classname="tests.test_agent" name="test_skip" time="0.0"><skipped message="later" /></testcase>
  <testcase classname="tests.test_agent" name="test_setup_error" time="0.0">
    <error message="fixture" />
  </testcase>
</testsuite></testsuites>
"""

# Maven Surefire (and tools that copy it): interim results inside the final testcase.
SUREFIRE = """\
<testsuite name="com.acme.AgentTest" tests="2">
  <testcase classname="com.acme.AgentTest" name="resumesFromCheckpoint" time="1.5">
    <flakyFailure message="timeout" type="java.net.SocketTimeoutException">
      <stackTrace>at x</stackTrace>
    </flakyFailure>
    <flakyError message="boom" />
    <system-out>hello</system-out>
  </testcase>
  <testcase classname="com.acme.AgentTest" name="alwaysBroken" time="2">
    <failure message="x" />
    <rerunFailure message="x" />
    <rerunError message="y" />
  </testcase>
</testsuite>
"""


def _outcomes(path: Path) -> dict[tuple[str, str], list[str]]:
    return {(c.classname, c.name): [o for o, _ in c.outcomes] for c in junit.read(path).cases}


def test_rerunfailures_repeated_testcases_are_one_attempt_each(tmp_path: Path) -> None:
    path = tmp_path / "r.xml"
    path.write_text(RERUNFAILURES)
    assert _outcomes(path) == {
        ("tests.test_agent", "test_always_fails"): ["failed", "failed", "failed"],
        ("tests.test_agent", "test_eventually_passes"): ["failed", "passed"],
        ("tests.test_agent.TestPlanner", "test_plan[3]"): ["passed"],
        ("tests.test_agent", "test_skip"): ["skipped"],
        ("tests.test_agent", "test_setup_error"): ["error"],
    }


def test_surefire_rerun_and_flaky_elements_are_one_attempt_each(tmp_path: Path) -> None:
    path = tmp_path / "s.xml"
    path.write_text(SUREFIRE)
    assert _outcomes(path) == {
        ("com.acme.AgentTest", "resumesFromCheckpoint"): ["failed", "error", "passed"],
        ("com.acme.AgentTest", "alwaysBroken"): ["failed", "failed", "error"],
    }


def test_test_ids_are_mapped_back_to_node_ids(tmp_path: Path) -> None:
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "agent_checks.py").write_text("")
    ids = junit.TestIds(tmp_path, {"tests/test_known.py::TestA::test_b[x.y]": "replay"})
    # Known to the history: exact, layer included.
    assert ids.nodeid("tests.test_known.TestA", "test_b[x.y]") == "tests/test_known.py::TestA::test_b[x.y]"
    assert ids.layer("tests/test_known.py::TestA::test_b[x.y]") == "replay"
    # A module that exists under the rootdir, whatever its name.
    assert ids.nodeid("evals.agent_checks.TestZ", "test_q") == "evals/agent_checks.py::TestZ::test_q"
    # pytest's conventions.
    assert (
        ids.nodeid("tests.test_agent.TestPlanner", "test_plan[3]")
        == "tests/test_agent.py::TestPlanner::test_plan[3]"
    )
    assert ids.nodeid("pkg.agent_test", "test_x") == "pkg/agent_test.py::test_x"
    # Anything else stays as it was written.
    assert ids.nodeid("com.acme.AgentTest", "alwaysBroken") == "com.acme.AgentTest::alwaysBroken"
    assert junit.mangle("tests/test_known.py::TestA::test_b[x.y]") == (
        "tests.test_known.TestA",
        "test_b[x.y]",
    )


def test_ingest_maps_layers_reads_reruns_and_is_idempotent(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "h.sqlite")
    # The history already knows one of these tests, and its layer.
    store.append(
        Source("pytest:earlier", PYTEST, "r0", "c0"),
        [Attempt("tests/test_agent.py::test_eventually_passes", "resume", "", 1, "passed", 1.0)],
    )
    path = tmp_path / "r.xml"
    path.write_text(RERUNFAILURES)
    ingester = Ingester(store, tmp_path)
    summary = ingester.ingest([path], sha="c1", run_id="ci-1")
    assert (summary.stored, summary.attempts, summary.already) == (1, 8, 0)
    rows = [r for r in store.attempts() if r.sha == "c1"]
    eventually = [r for r in rows if r.test_id == "tests/test_agent.py::test_eventually_passes"]
    assert [(r.attempt, r.outcome, r.layer, r.run_id) for r in eventually] == [
        (1, "failed", "resume", "ci-1"),
        (2, "passed", "resume", "ci-1"),
    ]
    flaky = [v.test_id for v in verdicts(store.verdict_counts()) if v.verdict == "FLAKY"]
    assert flaky == ["tests/test_agent.py::test_eventually_passes"]
    # Again, through a new ingester, even under another run id: nothing added.
    again = Ingester(store, tmp_path).ingest([path], sha="c1", run_id="ci-2")
    assert (again.stored, again.attempts, again.already) == (0, 0, 1)
    assert len(list(store.attempts())) == 9
    store.close()


def _suite(cases: int, failing: int) -> str:
    failure = '<failure message="down" />'
    body = "".join(
        f'<testcase classname="tests.test_x" name="test_{i}">{failure if i < failing else ""}</testcase>'
        for i in range(cases)
    )
    return f'<testsuite name="pytest" tests="{cases}">{body}</testsuite>'


def test_a_run_in_which_nearly_every_test_failed_is_skipped_as_an_outage(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "h.sqlite")
    outage = tmp_path / "outage.xml"
    outage.write_text(_suite(20, 19))
    lines: list[str] = []
    summary = Ingester(store, tmp_path, say=lines.append).ingest([outage], sha="c1", run_id="ci-9")
    assert (summary.stored, summary.outage_runs) == (0, 1)
    assert lines == [
        "skipped run ci-9: 19 of 20 tests failed (95%): an infrastructure outage, not flakiness; not counted"
    ]
    assert list(store.attempts()) == []
    bad_day = tmp_path / "bad_day.xml"  # 8 of 20 failing is a bad day, not an outage
    bad_day.write_text(_suite(20, 8))
    assert Ingester(store, tmp_path).ingest([bad_day], sha="c1", run_id="ci-10").stored == 1
    store.close()


def test_broken_xml_is_named_and_nothing_stored_is_lost(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "h.sqlite")
    good = tmp_path / "good.xml"
    good.write_text(_suite(3, 0))
    Ingester(store, tmp_path).ingest([good], sha="c1", run_id="r1")
    before = list(store.attempts())
    truncated = tmp_path / "truncated.xml"
    truncated.write_text(_suite(3, 0)[:-40])
    not_junit = tmp_path / "other.xml"
    not_junit.write_text("<html><body>404</body></html>")
    later = tmp_path / "later.xml"
    later.write_text(_suite(4, 0))
    summary = Ingester(store, tmp_path).ingest([truncated, not_junit, later], sha="c2", run_id=None)
    assert len(summary.errors) == 2
    assert str(truncated) in summary.errors[0]
    assert "is not well-formed XML" in summary.errors[0]
    assert str(not_junit) in summary.errors[1]
    assert "not JUnit XML" in summary.errors[1]
    assert summary.stored == 1
    after = list(store.attempts())
    assert after[: len(before)] == before
    assert len(after) == len(before) + 4
    with pytest.raises(HistoryError, match=r"truncated\.xml: is not well-formed XML"):
        junit.read(truncated)
    store.close()


def test_a_pattern_that_matches_nothing_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(HistoryError, match="matches no file"):
        expand([str(tmp_path / "results" / "**" / "*.xml")])


# -- the command line ------------------------------------------------------------------------------


def _agentevals(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_agentevals(*args, cwd=cwd, bare_env=True)  # no CI variables: the sha comes from --sha


def test_cli_ingest_glob_twice_then_report(tmp_path: Path) -> None:
    (tmp_path / "results" / "shard1").mkdir(parents=True)
    (tmp_path / "results" / "shard1" / "junit.xml").write_text(RERUNFAILURES)
    (tmp_path / "results" / "surefire.xml").write_text(SUREFIRE)
    args = ("flaky", "ingest", "results/**/*.xml", "--sha", "abc", "--run-id", "77", "--history", "h.sqlite")
    first = _agentevals(tmp_path, *args)
    assert first.returncode == 0, first.stderr
    assert "filing under commit abc (from the option), run 77" in first.stdout
    assert "ingested 2 of 2 files (14 attempts)" in first.stdout
    second = _agentevals(tmp_path, *args)
    assert second.returncode == 0, second.stderr
    assert "ingested 0 of 2 files (0 attempts)" in second.stdout
    assert "2 already there" in second.stdout
    report = _agentevals(tmp_path, "flaky", "report", "--format", "json", "--history", "h.sqlite")
    assert report.returncode == 0, report.stderr
    data = json.loads(report.stdout)
    assert [layer["layer"] for layer in data["layers"]] == ["marathon", "resume", "replay", "step"]
    assert data["false_red"] == {"runs": 1, "red": 1, "false_red": 0, "rate": 0.0}
    markdown = _agentevals(tmp_path, "flaky", "report", "--format", "markdown", "--history", "h.sqlite")
    assert (
        "| layer | status | verdicts | flaky | rate | 95% CI | budget | false-red runs |" in markdown.stdout
    )


def _seed(path: Path, layer: str, verdicts_: int, flaky: int) -> None:
    store = SQLiteStore(path)
    for i in range(verdicts_):
        attempts = [Attempt(f"t.py::test_{layer}{i % 5}", layer, "", 1, "passed", 0.1)]
        if i < flaky:
            attempts.append(Attempt(f"t.py::test_{layer}{i % 5}", layer, "", 2, "failed", 0.1))
        store.append(Source(f"pytest:{layer}{i}", PYTEST, f"run{layer}{i}", f"sha{i}"), attempts)
    store.close()


def test_cli_check_exits_with_the_breach_code(tmp_path: Path) -> None:
    history = tmp_path / "h.sqlite"
    _seed(history, "step", 5, 1)
    _seed(history, "marathon", 40, 2)
    check = _agentevals(tmp_path, "flaky", "check", "--history", str(history))
    assert check.returncode == FLAKY_EXIT_CODE == 6
    assert "BREACH step: 1 FLAKY of 5 verdicts; the budget is 0: any flaky verdict breaches" in check.stdout
    only_marathon = _agentevals(tmp_path, "flaky", "check", "--layer", "marathon", "--history", str(history))
    assert only_marathon.returncode == 0, only_marathon.stdout
    assert "flakiness within budget" in only_marathon.stdout


def test_cli_check_counts_an_expired_quarantine_as_a_breach(tmp_path: Path) -> None:
    history = tmp_path / "h.sqlite"
    _seed(history, "marathon", 3, 0)
    (tmp_path / "pyproject.toml").write_text(
        textwrap.dedent(
            """
            [tool.agentevals]
            history = "h.sqlite"
            quarantine = "q.yaml"
            """
        )
    )
    (tmp_path / "q.yaml").write_text(
        "quarantine:\n  - {test: t.py::test_x, owner: ann, reason: flaky DNS, expires: 2001-01-01}\n"
    )
    check = _agentevals(tmp_path, "flaky", "check")
    assert check.returncode == FLAKY_EXIT_CODE, check.stdout + check.stderr
    assert (
        "BREACH quarantine expired: t.py::test_x (owner ann, expires 2001-01-01: flaky DNS)" in check.stdout
    )


def test_cli_errors_are_clean_one_liners(tmp_path: Path) -> None:
    corrupt = tmp_path / "h.sqlite"
    corrupt.write_bytes(b"not a database" * 200)
    report = _agentevals(tmp_path, "flaky", "report", "--history", str(corrupt))
    assert report.returncode == 2
    assert report.stderr.startswith(f"agentevals flaky: error: {corrupt}: cannot open the history database")
    assert "Traceback" not in report.stderr
    assert corrupt.read_bytes() == b"not a database" * 200
    missing = _agentevals(tmp_path, "flaky", "report", "--history", "nowhere.sqlite")
    assert missing.returncode == 2
    assert "no history there yet" in missing.stderr
    assert not (tmp_path / "nowhere.sqlite").exists()
    (tmp_path / "broken.xml").write_text("<testsuite><testcase")
    ingest = _agentevals(tmp_path, "flaky", "ingest", "broken.xml", "--sha", "s", "--history", "new.sqlite")
    assert ingest.returncode == 2
    assert "error: broken.xml: is not well-formed XML" in ingest.stdout
    assert "Traceback" not in ingest.stderr


def test_tests_without_a_layer_get_their_own_row_and_a_hint(tmp_path: Path) -> None:
    # A suite run with pytest-rerunfailures but without the plugin: no agentevals.layer properties.
    (tmp_path / "junit.xml").write_text(RERUNFAILURES)
    ingested = _agentevals(
        tmp_path, "flaky", "ingest", "junit.xml", "--sha", "abc", "--run-id", "1", "--history", "h.sqlite"
    )
    assert ingested.returncode == 0, ingested.stderr
    assert "5 of the tests carry no layer: the report shows them as (no layer)" in ingested.stdout
    report = _agentevals(tmp_path, "flaky", "report", "--history", "h.sqlite")
    assert report.returncode == 0, report.stderr
    lines = report.stdout.splitlines()
    assert lines[0].split() == [
        "layer",
        "verdicts",
        "flaky",
        "rate",
        "95%",
        "CI",
        "budget",
        "false-red",
        "status",
    ]
    assert lines[1].split() == ["(no", "layer)", "4", "1", "25.0%", "4.6-69.9%", "-", "0/1", "no", "budget"]
    assert "(no layer): tests without a layer marker, shown but held to no budget; give a test its layer" in (
        report.stdout
    )
    assert "@pytest.mark.step (or replay, resume, marathon)" in report.stdout
    assert "    flaky 1 of 1: tests/test_agent.py::test_eventually_passes" in lines
    data = json.loads(_agentevals(tmp_path, "flaky", "report", "--json", "--history", "h.sqlite").stdout)
    outside = data["outside_pyramid"]
    assert (outside["layer"], outside["verdicts"], outside["flaky"], outside["tests"]) == (None, 4, 1, 4)
    assert outside["worst"][0]["test"] == "tests/test_agent.py::test_eventually_passes"
    markdown = _agentevals(
        tmp_path, "flaky", "report", "--format", "markdown", "--history", "h.sqlite"
    ).stdout
    assert "| (no layer) | · no budget | 4 | 1 | 25.0% |" in markdown
    check = _agentevals(tmp_path, "flaky", "check", "--history", "h.sqlite")
    assert check.returncode == 0  # no budget, so never a breach


def test_ingest_resolves_its_flags_over_the_project_settings(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[tool.agentevals]\nhistory = "ci/h.sqlite"\nsha = "pinned"\n')
    (tmp_path / "junit.xml").write_text(RERUNFAILURES)
    # Run from outside the project, naming it with --rootdir: its settings apply, paths under it.
    result = _agentevals(tmp_path, "flaky", "ingest", "junit.xml", "--run-id", "1", "--rootdir", "project")
    assert result.returncode == 0, result.stderr
    assert "filing under commit pinned (from [tool.agentevals] sha), run 1" in result.stdout
    assert (project / "ci" / "h.sqlite").is_file()
    # The option beats the pyproject value, and says so.
    (tmp_path / "junit2.xml").write_text(RERUNFAILURES.replace("test_plan[3]", "test_plan[4]"))
    again = _agentevals(
        tmp_path, "flaky", "ingest", "junit2.xml", "--sha", "given", "--run-id", "2", "--rootdir", "project"
    )
    assert "filing under commit given (from the option), run 2" in again.stdout


def test_cli_check_fails_on_a_damaged_history_naming_file_and_fix(tmp_path: Path) -> None:
    history = tmp_path / "h.sqlite"
    _seed(history, "step", 5, 0)
    _damage_page_of(history, "sqlite_autoindex_tests_1")  # an index no report query reads
    check = _agentevals(tmp_path, "flaky", "check", "--history", str(history))
    assert check.returncode == 2, check.stdout
    assert check.stderr.startswith(f"agentevals flaky: error: {history}: the history database is damaged")
    assert ".recover" in check.stderr
    assert "Traceback" not in check.stderr


def test_cli_refuses_an_empty_history_file(tmp_path: Path) -> None:
    (tmp_path / "h.sqlite").touch()
    for args in (("report",), ("check",), ("ingest", "j.xml", "--sha", "s")):
        (tmp_path / "j.xml").write_text(RERUNFAILURES)
        result = _agentevals(tmp_path, "flaky", *args, "--history", "h.sqlite")
        assert result.returncode == 2, (args, result.stdout)
        assert "h.sqlite: is an empty file, and an empty file is not a history database" in result.stderr
        assert (tmp_path / "h.sqlite").read_bytes() == b""


def test_cli_budget_on_the_command_line(tmp_path: Path) -> None:
    history = tmp_path / "h.sqlite"
    _seed(history, "marathon", 4, 2)
    assert _agentevals(tmp_path, "flaky", "check", "--history", str(history)).returncode == 0  # 4 < 30
    strict = _agentevals(
        tmp_path, "flaky", "check", "--history", str(history), "--flaky-budget", "marathon=0.01,min_samples=4"
    )
    assert strict.returncode == FLAKY_EXIT_CODE, strict.stdout
    assert "BREACH marathon: 2 FLAKY of 4 verdicts; rate 50.0%" in strict.stdout
    bad = _agentevals(tmp_path, "flaky", "report", "--history", str(history), "--flaky-budget", "marathon=5")
    assert bad.returncode == 2
    assert bad.stderr == (
        "agentevals flaky: error: --flaky-budget.marathon: 5 is not a rate (give a rate between 0 and 1)\n"
    )
