"""The history in real pytest runs: attempts recorded (reruns and xdist included), FLAKY verdicts,
quarantine, budgets and the exit code, a broken history file."""

from __future__ import annotations

import datetime as dt
import textwrap
from pathlib import Path

import pytest

from pytest_agentevals.errors import HistoryError
from pytest_agentevals.history import backends, ci_env
from pytest_agentevals.history.ingest import Ingester
from pytest_agentevals.history.model import StoredAttempt
from pytest_agentevals.history.sqlite import SQLiteStore
from pytest_agentevals.history.verdicts import FLAKY, verdicts

from ..conftest import empty_cassette

# A quarantine's end within its horizon (a year), whenever the suite runs.
SOON = (dt.date.today() + dt.timedelta(days=30)).isoformat()

# A stand-in for pytest-rerunfailures (not installed here): the same protocol, so the same reports. A
# failed attempt is logged with outcome "rerun" and the test runs again, up to RERUNS times.
RERUN_CONFTEST = """
import pytest
from _pytest.runner import runtestprotocol

RERUNS = 2

@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    for attempt in range(RERUNS + 1):
        reports = runtestprotocol(item, nextitem=nextitem, log=False)
        for report in reports:
            if report.failed and attempt < RERUNS:
                report.outcome = "rerun"
                item.ihook.pytest_runtest_logreport(report=report)
                break
            item.ihook.pytest_runtest_logreport(report=report)
        else:
            break
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True

def pytest_report_teststatus(report):
    if report.outcome == "rerun":
        return "rerun", "R", "RERUN"
"""

# Fails the first time it runs in a folder, passes after.
ONCE_FLAKY = """
def test_once_flaky(request):
    marker = request.config.rootpath / ("ran-" + request.node.name)
    if not marker.exists():
        marker.touch()
        assert False, "first attempt fails"
"""


def _source(head: str, tail: str = "") -> str:
    """A test module: `head`, the once-flaky test, `tail` (each dedented)."""
    return textwrap.dedent(head) + ONCE_FLAKY + textwrap.dedent(tail)


def _outcomes(result: pytest.RunResult) -> dict[str, int]:
    return result.parseoutcomes()


@pytest.fixture(autouse=True)
def _no_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs here are local runs, whatever CI runs this suite."""
    for flag, _read in ci_env.PROVIDERS:
        monkeypatch.delenv(flag, raising=False)


def _attempts(path: Path) -> list[StoredAttempt]:
    store = SQLiteStore(path)
    try:
        return list(store.attempts())
    finally:
        store.close()


def _flaky(path: Path) -> list[str]:
    store = SQLiteStore(path)
    try:
        return sorted(v.test_id for v in verdicts(store.verdict_counts()) if v.verdict == FLAKY)
    finally:
        store.close()


VARIANT = '{"seed":7,"seeds":[7]}'  # the marker's keywords and the seed


def test_a_test_that_passes_then_fails_on_one_commit_is_flaky(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_agent="""
        import os, pytest

        @pytest.mark.marathon(seeds=[7])
        def test_flip():
            assert not os.path.exists("fail-now")

        @pytest.mark.marathon(seeds=[7])
        def test_steady():
            pass
        """
    )
    # A marathon seed with a result at the commit is kept, not rerun, unless asked.
    first = pytester.runpytest("--agentevals-sha=c1", "--agentevals-rerun-seeds")
    first.assert_outcomes(passed=2)
    (pytester.path / "fail-now").touch()
    second = pytester.runpytest("--agentevals-sha=c1", "--agentevals-rerun-seeds")
    second.assert_outcomes(passed=1, failed=1)
    # On by default, under the run's own rootdir.
    history = pytester.path / ".agentevals" / "history.sqlite"
    rows = _attempts(history)
    assert [(r.test_id, r.layer, r.variant, r.sha, r.attempt, r.outcome, r.worker) for r in rows] == [
        ("test_agent.py::test_flip[seed=7]", "marathon", VARIANT, "c1", 1, "passed", "main"),
        ("test_agent.py::test_steady[seed=7]", "marathon", VARIANT, "c1", 1, "passed", "main"),
        ("test_agent.py::test_flip[seed=7]", "marathon", VARIANT, "c1", 1, "failed", "main"),
        ("test_agent.py::test_steady[seed=7]", "marathon", VARIANT, "c1", 1, "passed", "main"),
    ]
    assert rows[0].run_id.startswith("local-")
    assert rows[0].run_id != rows[2].run_id
    assert _flaky(history) == ["test_agent.py::test_flip[seed=7]"]
    second.stdout.fnmatch_lines(
        [
            "*= agentevals flakiness =*",
            "not enough data yet: marathon 2 verdicts (1 FLAKY); a layer is judged once it has 30 "
            "(min_samples)",
            '    flaky 1 of 1: test_agent.py::test_flip?seed=7? {"seed":7,"seeds":?7?}',
        ]
    )
    assert "false-red" not in second.stdout.str()  # no table yet: nothing to explain
    # Another commit is other code: passing there makes no verdict FLAKY.
    pytester.runpytest("--agentevals-sha=c2")
    assert _flaky(history) == ["test_agent.py::test_flip[seed=7]"]


def test_reruns_are_attempts_of_their_own(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(RERUN_CONFTEST)
    pytester.makepyfile(
        test_agent=_source(
            """
            import pytest
            pytestmark = pytest.mark.resume
            """,
            """
            def test_always_fails():
                assert False
            """,
        )
    )
    result = pytester.runpytest("--agentevals-sha=c1", "--agentevals-history=h.sqlite")
    assert _outcomes(result) == {"passed": 1, "failed": 1, "rerun": 3}
    rows = [(r.test_id.split("::")[1], r.attempt, r.outcome) for r in _attempts(pytester.path / "h.sqlite")]
    assert rows == [
        ("test_once_flaky", 1, "failed"),
        ("test_once_flaky", 2, "passed"),
        ("test_always_fails", 1, "failed"),
        ("test_always_fails", 2, "failed"),
        ("test_always_fails", 3, "failed"),
    ]
    assert _flaky(pytester.path / "h.sqlite") == ["test_agent.py::test_once_flaky"]


def test_under_xdist_only_the_controller_writes_and_no_attempt_is_lost(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    pytester.makeconftest(RERUN_CONFTEST)
    pytester.makepyfile(
        test_agent=_source(
            """
            import os, pytest
            pytestmark = pytest.mark.step

            @pytest.mark.parametrize("i", range(30))
            def test_many(i):
                pass

            def test_flip():
                assert not os.path.exists("fail-now")
            """
        )
    )
    args = ("-n", "2", "--agentevals-sha=c1", "--agentevals-history=h.sqlite", "-p", "no:cacheprovider")
    first = pytester.runpytest_subprocess(*args)
    assert _outcomes(first) == {"passed": 32, "rerun": 1}
    (pytester.path / "fail-now").touch()
    second = pytester.runpytest_subprocess(*args)
    assert _outcomes(second) == {"passed": 31, "failed": 1, "rerun": 2}
    rows = _attempts(pytester.path / "h.sqlite")
    # first run: 30 + flip + 2 attempts of once_flaky; second: 30 + 3 attempts of flip + once_flaky.
    assert len(rows) == 33 + 34
    assert {r.worker for r in rows} == {"gw0", "gw1"}
    flip = [(r.attempt, r.outcome) for r in rows if r.test_id.endswith("test_flip")]
    assert flip == [(1, "passed"), (1, "failed"), (2, "failed"), (3, "failed")]
    assert _flaky(pytester.path / "h.sqlite") == [
        "test_agent.py::test_flip",
        "test_agent.py::test_once_flaky",
    ]
    # Zero budget for step: a breach, shown by the controller.
    second.stdout.fnmatch_lines(
        ["step*32*2*6.2%*1.7-20.1%*0.0%*1/2*breach", "BREACH step: 2 FLAKY of 32 verdicts*"]
    )


def test_fail_mode_turns_a_breach_into_its_own_exit_code(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_agent="""
        import os, pytest

        @pytest.mark.step
        def test_decision():
            assert not os.path.exists("fail-now")
        """
    )
    (pytester.path / "fail-now").touch()
    assert pytester.runpytest("--agentevals-sha=c1").ret == pytest.ExitCode.TESTS_FAILED
    (pytester.path / "fail-now").unlink()
    warn = pytester.runpytest("--agentevals-sha=c1")
    assert warn.ret == pytest.ExitCode.OK
    warn.stdout.fnmatch_lines(
        [
            "BREACH step: 1 FLAKY of 1 verdicts; the budget is 0: any flaky verdict breaches",
            "flakiness budget breached (a warning: --agentevals-flaky=fail makes it fail)",
        ]
    )
    fail = pytester.runpytest("--agentevals-sha=c1", "--agentevals-flaky=fail")
    assert fail.ret == 6
    fail.stdout.fnmatch_lines(["flakiness gate failed: exit code 6 (--agentevals-flaky=fail)"])
    (pytester.path / "fail-now").touch()
    red = pytester.runpytest("--agentevals-sha=c1", "--agentevals-flaky=fail")
    assert red.ret == pytest.ExitCode.TESTS_FAILED  # a failed test's exit code stands
    red.stdout.fnmatch_lines(["flakiness gate failed too (the session failed already: its exit code stands)"])
    (pytester.path / "fail-now").unlink()
    off = pytester.runpytest("--agentevals-sha=c1", "--agentevals-flaky=off")
    assert off.ret == pytest.ExitCode.OK
    assert "agentevals flakiness" not in off.stdout.str()


def test_the_budget_comes_from_pyproject(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml(
        """
        [tool.agentevals]
        flaky = "fail"

        [tool.agentevals.flaky_budget]
        step = 0.5
        min_samples = 1
        """
    )
    pytester.makepyfile(
        test_agent="""
        import os, pytest

        @pytest.mark.step
        def test_decision():
            assert not os.path.exists("fail-now")
        """
    )
    (pytester.path / "fail-now").touch()
    pytester.runpytest("--agentevals-sha=c1")
    (pytester.path / "fail-now").unlink()
    result = pytester.runpytest("--agentevals-sha=c1")
    # 1 of 1 FLAKY: 100%, but the Wilson lower bound (20.7%) is under the 50% budget: a warning only.
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["step*1*1*100.0%*20.7-100.0%*50.0%*warn"])


def test_a_quarantined_test_runs_and_is_recorded_but_does_not_fail(pytester: pytest.Pytester) -> None:
    pytester.makefile(
        ".yaml",
        **{
            "agentevals-quarantine": """
            quarantine:
              - test: test_agent.py::test_dns
                owner: alice@example.com
                reason: sandbox DNS flaps (INFRA-123)
                expires: 2999-12-31
              - test: test_agent.py::test_renewed_late
                owner: bob@example.com
                reason: fixed, entry left behind
                expires: 2001-01-01
            """.replace("2999-12-31", SOON)
        },
    )
    pytester.makepyfile(
        test_agent="""
        import pytest

        @pytest.mark.resume
        def test_dns():
            assert False, "no route to host"

        @pytest.mark.resume
        def test_renewed_late():
            pass
        """
    )
    result = pytester.runpytest("--agentevals-sha=c1", "-rx")
    result.assert_outcomes(passed=1, xfailed=1)
    result.stdout.fnmatch_lines(
        [
            "not enough data yet: resume 1 verdict; *",  # the quarantined test is left out of the numbers
            f"quarantined: test_agent.py::test_dns (owner alice@example.com, expires {SOON}: *",
            "quarantine EXPIRED: test_agent.py::test_renewed_late (owner bob@example.com*",
            "BREACH quarantine expired: test_agent.py::test_renewed_late*",
            "XFAIL test_agent.py::test_dns - agentevals quarantine: sandbox DNS flaps (INFRA-123) "
            f"(owner alice@example.com, until {SOON})",
        ]
    )
    assert result.ret == pytest.ExitCode.OK  # warn mode
    outcomes = {r.test_id: r.outcome for r in _attempts(pytester.path / ".agentevals" / "history.sqlite")}
    assert outcomes == {"test_agent.py::test_dns": "failed", "test_agent.py::test_renewed_late": "passed"}
    assert pytester.runpytest("--agentevals-sha=c1", "--agentevals-flaky=fail").ret == 6


def test_a_bad_quarantine_file_stops_the_run_naming_it(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"agentevals-quarantine": "quarantine: [{test: a, owner: b}]"})
    pytester.makepyfile("def test_a(): pass")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: agentevals: *agentevals-quarantine.yaml: entry 1 (a) reason: is missing*"]
    )


def test_a_corrupt_history_is_named_kept_and_never_silently_ignored(pytester: pytest.Pytester) -> None:
    history = pytester.path / ".agentevals" / "history.sqlite"
    history.parent.mkdir()
    garbage = b"\x00garbage, not SQLite\n" * 500
    history.write_bytes(garbage)
    pytester.makepyfile("import pytest\n@pytest.mark.step\ndef test_a(): pass")
    warn = pytester.runpytest("--agentevals-sha=c1")
    assert warn.ret == pytest.ExitCode.OK
    warn.stdout.fnmatch_lines(
        [
            "*= agentevals flakiness =*",
            f"agentevals: history not recorded: {history}: cannot open the history database (file is not a "
            "database); nothing was changed; move the file aside*",
        ]
    )
    fail = pytester.runpytest("--agentevals-sha=c1", "--agentevals-flaky=fail")
    assert fail.ret == pytest.ExitCode.USAGE_ERROR
    fail.stderr.fnmatch_lines([f"ERROR: agentevals: {history}: cannot open the history database*"])
    assert history.read_bytes() == garbage
    assert sorted(p.name for p in history.parent.iterdir()) == ["history.sqlite"]


def test_history_off_writes_nothing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("import pytest\n@pytest.mark.step\ndef test_a(): pass")
    pytester.runpytest("--agentevals-history=off").assert_outcomes(passed=1)
    assert not (pytester.path / ".agentevals").exists()


def test_history_off_reads_no_report_but_still_reports_expired_quarantine(pytester: pytest.Pytester) -> None:
    # With nothing recorded, reports are read only for the test ids an expired quarantine entry
    # needs: no attempts are folded, no outcome or layer kept (issue 22: a per-report cost of ~0.4 s
    # per 1,000 step cases, for nothing).
    pytester.makefile(
        ".yaml",
        **{
            "agentevals-quarantine": """
            quarantine:
              - test: test_agent.py::test_left_behind
                owner: bob@example.com
                reason: fixed, entry left behind
                expires: 2001-01-01
            """
        },
    )
    pytester.makepyfile(
        test_agent="""
        import pytest

        @pytest.mark.step
        def test_left_behind():
            pass

        @pytest.mark.step
        def test_other():
            pass
        """
    )
    collectors = []

    class Spy:
        @pytest.hookimpl(trylast=True)
        def pytest_sessionfinish(self, session: pytest.Session) -> None:
            collectors.append(session.config.pluginmanager.get_plugin("agentevals-history"))

    result = pytester.runpytest_inprocess("--agentevals-history=off", plugins=[Spy()])
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["BREACH quarantine expired: test_agent.py::test_left_behind*"])
    assert not (pytester.path / ".agentevals").exists()
    (collector,) = collectors
    assert (collector._finals, collector._layers, collector._attempts) == ({}, set(), {})
    assert not collector._reports.unfinished()
    assert pytester.runpytest("--agentevals-history=off", "--agentevals-flaky=fail").ret == 6
    # Without an expired entry, not even the test ids are kept.
    (pytester.path / "agentevals-quarantine.yaml").unlink()
    collectors.clear()
    pytester.runpytest_inprocess("--agentevals-history=off", plugins=[Spy()]).assert_outcomes(passed=2)
    assert collectors[0]._nodeids == set()


def test_a_session_in_which_nearly_everything_failed_is_kept_but_not_judged(
    pytester: pytest.Pytester,
) -> None:
    empty_cassette(pytester.path)  # a replay test replays: its run holds no calls
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.replay("empty")
        @pytest.mark.parametrize("i", range(12))
        def test_replay(i):
            assert False, "the model gateway is down"
        """
    )
    result = pytester.runpytest("--agentevals-sha=c1")
    result.stdout.fnmatch_lines(
        ["this session is not judged: 12 of 12 tests failed (100%): an infrastructure outage, not flakiness*"]
    )
    store = SQLiteStore(pytester.path / ".agentevals" / "history.sqlite")
    assert len(list(store.attempts())) == 12
    assert store.verdict_counts() == []
    store.close()


def test_junit_of_a_recorded_session_ingests_to_the_same_attempts(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_agent="""
        import pytest

        @pytest.mark.marathon(max_cost_usd=3, seeds=[1, 2])
        def test_run(agentevals_seed):
            assert agentevals_seed == 1

        class TestPlanner:
            @pytest.mark.step
            def test_tool_choice(self, request):
                request.node.user_properties.append(("agentevals.variant.model", "claude-x"))

            def test_plain(self):
                pass
        """
    )
    pytester.runpytest("--agentevals-sha=c1", "--junitxml=results/junit.xml")
    live = _attempts(pytester.path / ".agentevals" / "history.sqlite")
    other = SQLiteStore(pytester.path / "ingested.sqlite")
    summary = Ingester(other, pytester.path).ingest(
        [pytester.path / "results" / "junit.xml"], sha="c1", run_id="ci"
    )
    ingested = list(other.attempts())
    other.close()
    assert summary.stored == 1

    def key(r: StoredAttempt) -> tuple[str, str | None, str, int, str]:
        return (r.test_id, r.layer, r.variant, r.attempt, r.outcome)

    assert sorted(map(key, ingested)) == sorted(map(key, live))
    assert (
        "test_agent.py::TestPlanner::test_tool_choice",
        "step",
        '{"model":"claude-x"}',
        1,
        "passed",
    ) in map(key, live)
    variant = '{"max_cost_usd":3,"seed":2,"seeds":[1,2]}'
    assert ("test_agent.py::test_run[seed=2]", "marathon", variant, 1, "failed") in map(key, live)
    # Into the history that recorded the session live, the same file adds nothing.
    same = SQLiteStore(pytester.path / ".agentevals" / "history.sqlite")
    again = Ingester(same, pytester.path).ingest(
        [pytester.path / "results" / "junit.xml"], sha="c1", run_id="ci"
    )
    same.close()
    assert (again.stored, again.already) == (0, 1)


class _FullDisk:
    """A store (any backend will do) whose writes fail, as a full disk would make them."""

    location = "/mnt/full/history.sqlite"

    def append(self, source: object, attempts: object) -> int:
        raise HistoryError(
            f"{self.location}: cannot write to the history database (database or disk is full)"
        )

    def close(self) -> None:
        pass


def test_a_failed_write_is_shown_and_fails_the_gate_in_fail_mode(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(backends, "open_store", lambda path: _FullDisk())  # what the face opens
    pytester.makepyfile("import pytest\n@pytest.mark.step\ndef test_a(): pass")
    warn = pytester.runpytest("--agentevals-sha=c1")
    assert warn.ret == pytest.ExitCode.OK
    warn.stdout.fnmatch_lines(
        [
            "agentevals: history not recorded from here on: /mnt/full/history.sqlite: cannot write to the "
            "history database (database or disk is full)"
        ]
    )
    fail = pytester.runpytest("--agentevals-sha=c1", "--agentevals-flaky=fail")
    assert fail.ret == 6
    fail.stdout.fnmatch_lines(["flakiness gate failed: exit code 6 (--agentevals-flaky=fail)"])


def test_day_one_says_in_one_line_what_is_missing_and_the_table_comes_with_data(
    pytester: pytest.Pytester,
) -> None:
    empty_cassette(pytester.path)  # a replay test replays: its run holds no calls
    pytester.makepyfile(
        test_agent="""
        import pytest

        @pytest.mark.step
        def test_decision():
            pass

        @pytest.mark.replay("empty")
        def test_run():
            pass
        """
    )
    first = pytester.runpytest("--agentevals-sha=c1")
    section = first.stdout.str().split("agentevals flakiness")[1].split("agentevals pyramid")[0]
    assert section.splitlines()[1:3] == [
        "not enough data yet: replay 1 verdict, step 1 verdict; a layer is judged once it has 30 "
        "(min_samples)",
        f"history: {pytester.path / '.agentevals' / 'history.sqlite'} (window: 200 verdicts per layer)",
    ]
    for noise in ("not enough data\n", "false-red", "marathon", "resume", "verdicts  flaky"):
        assert noise not in section
    # With as many verdicts as it takes (here 2, on the command line), each layer gets its row, and
    # the false-red column is explained, once.
    second = pytester.runpytest("--agentevals-sha=c2", "--agentevals-flaky-budget=min_samples=2")
    second.stdout.fnmatch_lines(
        [
            "layer*verdicts*flaky*rate*95% CI*budget*false-red*status",
            "replay*2*0*0.0%*0.0-65.8%*0.0%*0/2*ok",
            "step*2*0*0.0%*0.0-65.8%*0.0%*0/2*ok",
            "false-red: a layer's recent runs that went red only because of flaky tests *",
        ]
    )
    assert second.stdout.str().count("went red only because of flaky tests") == 1
    assert "not enough data" not in second.stdout.str()


_BOMB = "".join(
    f"{name}: &{name} [{', '.join([f'*{prev}'] * 9) if prev else ', '.join(['lol'] * 9)}]\n"
    for prev, name in zip(["", *"abcdefgh"], "abcdefghi", strict=True)
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            _BOMB + "quarantine: [*i]\n",
            "*agentevals-quarantine.yaml: holds YAML aliases that expand 30 written nodes into 926,177,116*",
        ),
        (
            "quarantine:\n  - {test: t, owner: o, reason: r, expires: 2026-02-30}\n",
            "*agentevals-quarantine.yaml:2: quarantine[0].expires: '2026-02-30' is not a date*",
        ),
        (
            "quarantine:\n  - {test: !!int abc, owner: o, reason: r, expires: 2026-02-28}\n",
            "*agentevals-quarantine.yaml:2: quarantine[0].test: 'abc' is not an integer*",
        ),
    ],
)
def test_a_hostile_quarantine_file_is_one_usage_error(
    pytester: pytest.Pytester, text: str, expected: str
) -> None:
    # The 422-byte bomb took 40 s and 3.2 GB, then INTERNALERROR with the loaded bomb in its repr.
    (pytester.path / "agentevals-quarantine.yaml").write_text(text)
    pytester.makepyfile(test_agent="def test_fine():\n    pass\n")
    result = pytester.runpytest("--agentevals-sha=c1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert expected.strip("*") in result.stderr.str()  # plain text: `[0]` is no fnmatch class here
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    assert len(result.stderr.str()) < 1000
