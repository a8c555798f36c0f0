"""The plugin's wiring: markers, the pyramid summary, and the per-test recorder fixture."""

from __future__ import annotations

import datetime as dt

import pytest

from pytest_agentevals import read_trace
from pytest_agentevals.history.sqlite import SQLiteStore
from pytest_agentevals.report.plugin import PyramidSummary

from .conftest import empty_cassette

# A quarantine's end within its horizon (a year), whenever the suite runs.
SOON = (dt.date.today() + dt.timedelta(days=30)).isoformat()


def test_markers_are_documented(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--markers")
    for layer, cadence in (
        ("step", "every commit"),
        ("replay", "every merge"),
        ("resume", "daily"),
        ("marathon", "nightly"),
    ):
        result.stdout.fnmatch_lines(
            [f"@pytest.mark.{layer}(*args, **kwargs): agentevals {layer} layer ({cadence}*"]
        )


def test_dash_m_selects_a_layer_and_summary_shows_the_pyramid(pytester: pytest.Pytester) -> None:
    empty_cassette(pytester.path)  # a replay test replays: its run holds no calls
    pytester.makepyfile(
        """
        import pytest
        @pytest.mark.step
        def test_a(): pass
        @pytest.mark.step
        def test_b(): assert False
        @pytest.mark.replay("empty")
        def test_c(): pass
        @pytest.mark.marathon(seeds=1)
        def test_d(): pytest.skip("nightly only")
        def test_plain(): pass
        """
    )
    result = pytester.runpytest("-m", "step", "--agentevals-history=off")
    # Deselected: three tests, and the cassette test_c replays (not collected on its own).
    result.assert_outcomes(passed=1, failed=1, deselected=4)
    result.stdout.fnmatch_lines(["*agentevals pyramid*", "layer*passed*failed*skipped*time", "step*1*1*0*s"])
    assert "replay " not in result.stdout.str().split("agentevals pyramid")[1]

    result = pytester.runpytest("--agentevals-history=off")
    result.stdout.fnmatch_lines(
        ["*agentevals pyramid*", "marathon*0*0*1*s", "replay*1*0*0*s", "step*1*1*0*s"]
    )


def test_recorder_fixture_writes_one_trace_per_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest
        import pytest_agentevals as ae

        @ae.tool
        def add(a, b):
            return a + b

        @pytest.mark.parametrize("n", ["a/b", "a-b"])
        def test_run(agentevals_recorder, n):
            assert add(1, 2) == 3
            ae.verification("sum", True, progress=1.0)

        def test_fails(agentevals_recorder):
            ae.note("about to fail")
            assert False
        """
    )
    result = pytester.runpytest("--agentevals-traces-dir=traces", "--agentevals-history=off")
    result.assert_outcomes(passed=2, failed=1)
    traces = sorted((pytester.path / "traces").glob("*.trace.jsonl"))
    assert len(traces) == 3  # the two parametrized ids clean up alike, their hashes keep them apart
    by_status = {read_trace(path)[-1]["status"]: path for path in traces}
    assert set(by_status) == {"ok", "failed"}
    events = read_trace(next(path for path in traces if "test_run" in path.name))
    assert [event["type"] for event in events] == ["run_start", "tool_call", "verification", "run_end"]
    assert events[1]["input"] == {"a": 1, "b": 2}
    assert events[1]["output"] == 3


def test_pyramid_counts_a_rerun_test_once() -> None:
    # pytest-rerunfailures reports the attempts before the last with the outcome "rerun".
    def report(outcome: str, when: str = "call") -> pytest.TestReport:
        return pytest.TestReport(
            "t.py::test_x",
            ("t.py", 1, "test_x"),
            {},
            outcome,
            None,
            when,
            user_properties=[("agentevals.layer", "replay")],
        )

    summary = PyramidSummary()
    for item in (
        report("passed", "setup"),
        report("rerun"),
        report("rerun"),
        report("passed"),
        report("passed", "teardown"),
    ):
        summary.pytest_runtest_logreport(item)
    tally = summary.tallies["replay"]
    assert (tally.passed, tally.failed) == (1, 0)


def test_recorder_fixture_under_xdist_writes_every_trace(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest
        import pytest_agentevals as ae

        @pytest.mark.parametrize("n", range(12))
        def test_run(agentevals_recorder, n):
            ae.note("worker", n=n)
        """
    )
    result = pytester.runpytest_subprocess(
        "-n", "2", "--agentevals-traces-dir=traces", "--agentevals-history=off"
    )
    result.assert_outcomes(passed=12)
    traces = sorted((pytester.path / "traces").glob("*.trace.jsonl"))
    assert len(traces) == 12
    seen = sorted(read_trace(path)[1]["data"]["n"] for path in traces)
    assert seen == list(range(12))
    assert len({read_trace(path)[0]["pid"] for path in traces}) == 2  # both workers recorded


def test_pyramid_and_history_read_outcomes_alike(pytester: pytest.Pytester) -> None:
    empty_cassette(pytester.path)  # a replay test replays: its run holds no calls
    pytester.makefile(
        ".yaml",
        **{
            "agentevals-quarantine": """
            quarantine:
              - {test: test_q.py::test_quarantined_passes, owner: ann, reason: flaps, expires: 2999-12-31}
              - {test: test_q.py::test_quarantined_fails, owner: ann, reason: flaps, expires: 2999-12-31}
            """.replace("2999-12-31", SOON)
        },
    )
    pytester.makepyfile(
        test_q="""
        import pytest

        @pytest.mark.replay("empty")
        def test_quarantined_passes():
            pass

        @pytest.mark.replay("empty")
        def test_quarantined_fails():
            assert False

        @pytest.mark.replay("empty")
        @pytest.mark.xfail(reason="known bug", strict=False)
        def test_known_bug():
            assert False

        @pytest.mark.parametrize("kind", ["replay", "step"])
        def test_unlayered(kind):  # its ids are not markers: no layer
            pass
        """
    )
    result = pytester.runpytest("--agentevals-sha=c1")
    result.assert_outcomes(passed=2, xfailed=2, xpassed=1)
    # The history: a quarantined pass passed, a quarantined failure failed, a genuine xfail is no signal.
    store = SQLiteStore(pytester.path / ".agentevals" / "history.sqlite")
    try:
        recorded = {(a.test_id.split("::")[1], a.layer): a.outcome for a in store.attempts()}
    finally:
        store.close()
    assert recorded == {
        ("test_quarantined_passes", "replay"): "passed",
        ("test_quarantined_fails", "replay"): "failed",
        ("test_known_bug", "replay"): "skipped",
        ("test_unlayered[replay]", None): "passed",
        ("test_unlayered[step]", None): "passed",
    }
    # The pyramid says the same: 1 passed, 1 failed (quarantined), 1 skipped; no step row.
    table = result.stdout.str().split("agentevals pyramid")[1]
    assert "step " not in table
    result.stdout.fnmatch_lines(["replay*1*1*1*s  (1 of the failed quarantined)"])
