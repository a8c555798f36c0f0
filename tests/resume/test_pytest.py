"""The resume layer in real pytest runs: the marker, the `agentevals_resume` fixture, the hooks,
the contract check, `until`, budgets, replayed mode, and the errors a user meets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import pytest_agentevals as ae

from .. import resume_support as agent

pytest_plugins = ["pytester"]

CONFTEST = """
import resume_support as agent

def pytest_agentevals_resume_agent(checkpoint):
    if not isinstance(checkpoint.task, dict) or checkpoint.task.get("agent") != "counter":
        return None
    return agent.run_counter(checkpoint.state, checkpoint.workspace)

def pytest_agentevals_contract():
    return {"counter.schema": 2}
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A pytester folder with the counter agent, its resume hook, and `fixtures/counter-2` (the
    checkpoint at step 2 of a recorded 6-task run)."""
    pytester.makepyfile(resume_support=Path(agent.__file__).read_text())
    pytester.makeconftest(CONFTEST)
    agent.make_fixture(pytester.path, continuation=True)
    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider --agentevals-history=off\n")
    return pytester


def leg_trace(project: pytest.Pytester) -> list[dict[str, object]]:
    traces = sorted((project.path / ".agentevals" / "traces").glob("*.trace.jsonl"))
    assert len(traces) == 1, traces
    return ae.read_trace(traces[0])


def test_a_marked_test_boots_the_fixture_and_runs_the_next_leg(project: pytest.Pytester) -> None:
    sha = __import__("hashlib").sha256((project.path / "fixtures/counter-2/manifest.json").read_bytes())
    project.makepyfile(
        test_leg="""
        import pytest

        @pytest.mark.resume("counter-2")
        def test_leg(agentevals_resume, tmp_path):
            cp = agentevals_resume
            assert cp.name == "counter-2" and cp.step == 2 and cp.state == {"done": 2}
            assert cp.task == {"agent": "counter", "total": 6} and cp.seed == 4
            assert cp.workspace == tmp_path / "workspace"  # the test's own temporary folder
            assert sorted(p.name for p in (cp.workspace / "done").iterdir()) == ["task1.txt", "task2.txt"]
            assert cp.events[-1]["type"] == "checkpoint" and cp.events[-1]["state"] == {"done": 2}
            assert cp.lineage["progress"] == pytest.approx(2 / 6)
            result = cp.run_agent()
            assert result == {"done": 6}
            phase = cp.phase
            assert phase.calls == 4 and phase.progress_start == pytest.approx(2 / 6)
            assert phase.verified_gain == pytest.approx(4 / 6) and phase.verified_pass
            assert phase.status == "ok" and not phase.until_reached and phase.tokens > 0
        """
    )
    result = project.runpytest("-rA")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*- Captured agentevals resume call -*",
            "resumed counter-2 (sha256 *, step 2 of run *, progress 0.333) in live mode",
            "the leg ran 4 model calls*verified progress 0.333 -> 1 (gain +0.667)*status ok; trace *",
        ]
    )
    start = leg_trace(project)[0]
    assert start["resumed_from"] == {
        "fixture": "counter-2",
        "sha256": sha.hexdigest(),
        "step": 2,
        "run_id": json.loads((project.path / "fixtures/counter-2/manifest.json").read_text())["lineage"][
            "run_id"
        ],
        "checkpoint": "task 2",
        "mode": "live",
    }
    assert start["contract"]["counter.schema"] == 2  # type: ignore[index]


def test_until_ends_the_leg_when_the_goal_is_reached(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_leg="""
        import pytest

        @pytest.mark.resume("counter-2", until="progress>=0.6")
        def test_leg(agentevals_resume):
            # The counter lets the guard's stop through; the resume layer takes it as the leg's end.
            assert agentevals_resume.run_agent() is None
            phase = agentevals_resume.phase
            assert phase.until_reached and phase.until == "progress>=0.6"
            assert phase.progress_end == pytest.approx(4 / 6) and phase.calls == 2
            assert phase.status == "ok"
        """
    )
    project.runpytest().assert_outcomes(passed=1)
    events = leg_trace(project)
    stop = next(e for e in events if e["type"] == "guard")
    assert (stop["guard"], stop["action"], stop["status"]) == ("until", "stop", "ok")
    assert events[-1]["status"] == "ok"


def test_the_phase_budget_stops_the_leg(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_leg="""
        import pytest
        from pytest_agentevals import RunStopped

        @pytest.mark.resume("counter-2", max_calls=1)
        def test_leg(agentevals_resume):
            with pytest.raises(RunStopped, match="budget"):
                agentevals_resume.run_agent()
            assert agentevals_resume.phase.status == "budget_exhausted"
            assert agentevals_resume.phase.calls == 1
        """
    )
    project.runpytest().assert_outcomes(passed=1)
    assert leg_trace(project)[0]["budget"]["max_calls"] == 1  # type: ignore[index]


def test_a_phase_budget_stop_names_the_marker_that_set_it(project: pytest.Pytester) -> None:
    # The table sets max_calls too; the marker's limit is the one in force, and the one to raise.
    (project.path / "pyproject.toml").write_text("[tool.agentevals.budget]\nmax_calls = 100\n")
    project.makepyfile(
        test_leg="""
        import pytest
        from pytest_agentevals import RunStopped

        @pytest.mark.resume("counter-2", max_calls=1)
        def test_leg(agentevals_resume):
            with pytest.raises(RunStopped) as stopped:
                agentevals_resume.run_agent()
            message = str(stopped.value)
            assert message.endswith(
                "(max_calls was set by @pytest.mark.resume(..., max_calls=1): raise it there)"
            ), message
            assert "[tool.agentevals.budget]" not in message
        """
    )
    project.runpytest().assert_outcomes(passed=1)
    assert leg_trace(project)[0]["budget"]["max_calls"] == 1  # type: ignore[index]


def test_a_stop_the_harness_swallows_still_fails_the_leg(project: pytest.Pytester) -> None:
    project.makeconftest(
        CONFTEST.replace(
            "    return agent.run_counter(checkpoint.state, checkpoint.workspace)",
            "    try:\n        return agent.run_counter(checkpoint.state, checkpoint.workspace)\n"
            "    except Exception:\n        return 'swallowed'",
        )
    )
    project.makepyfile(
        test_leg="""
        import pytest

        @pytest.mark.resume("counter-2", max_calls=1)
        def test_leg(agentevals_resume):
            agentevals_resume.run_agent()
        """
    )
    result = project.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["E   RunStopped: the budget guard stopped the run as budget_exhausted*"])


# A client process meets a stop as the endpoint's final 500 and its SDK raises an error of its own
# (the Claude Agent SDK's `ResultError`), with nothing chained to the guard's stop.
CLIENT_ERROR = CONFTEST.replace(
    "    return agent.run_counter(checkpoint.state, checkpoint.workspace)",
    "    try:\n        return agent.run_counter(checkpoint.state, checkpoint.workspace)\n"
    "    except Exception:\n        raise RuntimeError('API Error: 500 (the client gave up)') from None",
)


def test_what_the_hook_raises_after_a_stop_is_raised_as_the_stop(project: pytest.Pytester) -> None:
    project.makeconftest(CLIENT_ERROR)
    project.makepyfile(
        test_leg="""
        import pytest
        from pytest_agentevals import RunStopped

        @pytest.mark.resume("counter-2", max_calls=1)
        def test_budget(agentevals_resume):
            with pytest.raises(RunStopped) as stopped:
                agentevals_resume.run_agent()
            assert (stopped.value.status, stopped.value.guard) == ("budget_exhausted", "budget")
            assert isinstance(stopped.value.__cause__, RuntimeError)  # the hook's own error, chained
            assert "API Error: 500" in str(stopped.value.__cause__)
            assert agentevals_resume.phase.status == "budget_exhausted"

        @pytest.mark.resume("counter-2", until="progress>=0.6")
        def test_until(agentevals_resume):
            assert agentevals_resume.run_agent() is None  # the goal reached: the leg's normal end
            phase = agentevals_resume.phase
            assert phase.until_reached and phase.status == "ok" and phase.calls == 2
        """
    )
    project.runpytest().assert_outcomes(passed=2)
    traces = sorted((project.path / ".agentevals" / "traces").glob("*.trace.jsonl"))
    assert len(traces) == 2
    for trace in traces:
        events = ae.read_trace(trace)
        assert events[-1]["status"] in ("budget_exhausted", "ok")
        assert "error" not in events[-1]  # the stop's own guard event says why; no client error claimed
        (note,) = [event for event in events if event["type"] == "note"]  # what the hook raised, kept
        assert note["message"] == "the hook raised after the guard's stop"
        assert note["data"]["reason"] == "RuntimeError: API Error: 500 (the client gave up)"


def test_an_error_before_any_stop_is_still_the_hooks(project: pytest.Pytester) -> None:
    project.makeconftest(CLIENT_ERROR.replace("agent.run_counter(", "1/0 or agent.run_counter("))
    project.makepyfile(
        test_leg="""
        import pytest

        @pytest.mark.resume("counter-2", max_calls=1)
        def test_leg(agentevals_resume):
            with pytest.raises(RuntimeError, match="API Error: 500"):
                agentevals_resume.run_agent()
            assert agentevals_resume.phase.status == "error"
        """
    )
    project.runpytest().assert_outcomes(passed=1)


def test_a_drifted_declared_contract_fails_before_anything_runs(project: pytest.Pytester) -> None:
    project.makeconftest(
        CONFTEST.replace('{"counter.schema": 2}', '{"counter.schema": 3}') + "\nSTARTED = []\n"
    )
    project.makepyfile(
        test_leg="""
        import pytest

        @pytest.mark.resume("counter-2")
        def test_fails(agentevals_resume, tmp_path):
            raise AssertionError("never reached")

        @pytest.mark.resume("counter-2", contract_policy="warn")
        def test_warns(agentevals_resume):
            assert agentevals_resume.run_agent() == {"done": 6}
            assert [d.key for d in agentevals_resume.drifts] == ["counter.schema"]

        @pytest.mark.resume("counter-2", contract_tolerate=["counter.*"])
        def test_tolerated(agentevals_resume):
            assert agentevals_resume.run_agent() == {"done": 6}

        @pytest.mark.resume("counter-2", contract_policy="skip")
        def test_skipped(agentevals_resume):
            assert agentevals_resume.drifts == []
        """
    )
    result = project.runpytest("-W", "default::pytest_agentevals.contract.ContractDriftWarning")
    result.assert_outcomes(passed=3, errors=1)
    result.stdout.fnmatch_lines(
        [
            "E   ContractDrift: */fixtures/counter-2: the environment drifted from the checkpoint*contract:",
            "E     key            | recorded | now | severity",
            "E     ---------------+----------+-----+---------",
            "E     counter.schema | 2        | 3   | changed",
            "E   re-extract the fixture from a run recorded in this environment*agentevals resume bless "
            "counter-2 --reason*",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*ContractDriftWarning: *counter-2: the contract drifted:",
            "*counter.schema | 2        | 3   | changed",
        ]
    )
    # Nothing ran for the test that failed: its workspace was never restored.
    assert not list(project.path.glob("**/test_fails0/workspace"))


def test_a_drifted_request_is_refused_at_the_first_model_call(project: pytest.Pytester) -> None:
    project.makeconftest(
        CONFTEST.replace(
            "agent.run_counter(checkpoint.state, checkpoint.workspace)",
            "agent.run_counter(checkpoint.state, checkpoint.workspace, system='A new prompt.')",
        )
    )
    project.makepyfile(
        test_leg="""
        import pytest

        @pytest.mark.resume("counter-2")
        def test_leg(agentevals_resume):
            agentevals_resume.run_agent()
        """
    )
    result = project.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["E   ContractDrift: *", "E     system_sha256 | * | * | changed"])
    events = leg_trace(project)
    assert [e["type"] for e in events if e["type"] == "model_call"] == []  # nothing left the machine
    assert events[-1]["status"] == "error"


def test_a_harness_that_raises_fails_the_test_and_keeps_the_phase_trace(project: pytest.Pytester) -> None:
    project.makeconftest(
        CONFTEST.replace(
            "    return agent.run_counter(checkpoint.state, checkpoint.workspace)",
            "    raise RuntimeError('the harness could not read its state')",
        )
    )
    project.makepyfile(
        test_leg="""
        import pytest

        @pytest.mark.resume("counter-2")
        def test_leg(agentevals_resume):
            agentevals_resume.run_agent()
        """
    )
    result = project.runpytest("-rA")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["E * RuntimeError: the harness could not read its state", "*the leg ran 0 model calls*"]
    )
    end = leg_trace(project)[-1]
    assert end["status"] == "error"
    assert "the harness could not read its state" in end["error"]["message"]  # type: ignore[index]


def test_replayed_mode_runs_the_leg_offline_against_the_recording(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_leg="""
        import pytest
        from pytest_agentevals.replay import network

        @pytest.mark.resume("counter-2", mode="replayed")
        def test_leg(agentevals_resume):
            assert network.blocked()
            assert agentevals_resume.run_agent() == {"done": 6}
            assert agentevals_resume.phase.calls == 4
        """
    )
    project.runpytest().assert_outcomes(passed=1)
    assert leg_trace(project)[0]["resumed_from"]["mode"] == "replayed"  # type: ignore[index]


def test_replayed_mode_needs_the_recorded_continuation(project: pytest.Pytester) -> None:
    agent.make_fixture(project.path, "counter-live", continuation=False)
    project.makepyfile(
        test_leg="""
        import pytest

        @pytest.mark.resume("counter-live", mode="replayed")
        def test_leg(agentevals_resume):
            pass
        """
    )
    result = project.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*holds no recorded continuation*re-extract it with --continuation*"])


def test_an_unknown_fixture_lists_those_that_exist(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_leg="""
        import pytest

        @pytest.mark.resume("counter-9")
        def test_leg(agentevals_resume):
            pass
        """
    )
    result = project.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["E   CheckpointError: counter-9: no such checkpoint fixture in * (the fixtures there: counter-2)*"]
    )


@pytest.mark.parametrize(
    ("marker", "message"),
    [
        (
            'resume("counter-2", untill="progress>=0.6")',
            "*(untill=...): unknown keyword (did you mean until=? *",
        ),
        ('resume("counter-2", until="progress>>1")', "*(until=...): 'progress>>1' is not a condition*"),
        (
            'resume("counter-2", mode="recorded")',
            "*(mode=...): 'recorded' is not allowed (use one of: live, replayed)",
        ),
        ('resume("counter-2", max_calls=-1)', "*(max_calls=...): -1 is below 0*"),
        ('resume("counter-2", contract_policy="maybe")', "*(contract_policy=...): 'maybe' is not allowed*"),
        ('resume("counter-2", contract_tolerate=["python:tiny"])', "*'python:tiny' is not a tolerance*"),
    ],
)
def test_a_marker_mistake_stops_the_run_at_collection(
    project: pytest.Pytester, marker: str, message: str
) -> None:
    project.makepyfile(
        test_leg=f"""
        import pytest

        @pytest.mark.{marker}
        def test_leg(agentevals_resume):
            pass
        """
    )
    result = project.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*test_leg.py::test_leg: @pytest.mark.resume" + message])


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "agentevals_resume.phase",
            "*phase holds the metrics of the leg, which has not run: call run_agent() first",
        ),
        (
            "agentevals_resume.run_agent(); agentevals_resume.run_agent()",
            "*run_agent() already ran this leg*",
        ),
    ],
)
def test_a_misused_fixture_says_how_to_use_it(project: pytest.Pytester, body: str, message: str) -> None:
    project.makepyfile(
        test_leg=f"""
        import pytest

        @pytest.mark.resume("counter-2")
        def test_leg(agentevals_resume):
            {body}
        """
    )
    result = project.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([message])


def test_the_fixture_needs_a_named_marker_and_no_second_recorder(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_leg="""
        import pytest

        def test_unmarked(agentevals_resume):
            pass

        @pytest.mark.resume("counter-2")
        def test_two_recorders(agentevals_resume, agentevals_recorder):
            pass

        @pytest.mark.resume
        def test_a_bare_marker_only_tags_the_layer():
            pass
        """
    )
    result = project.runpytest()
    result.assert_outcomes(passed=1, errors=2)
    result.stdout.fnmatch_lines(
        [
            '*mark the test @pytest.mark.resume("NAME")*',
            "*agentevals_resume records the leg itself*drop the agentevals_recorder fixture*",
        ]
    )


def test_no_hook_for_the_agent_says_how_to_add_one(project: pytest.Pytester) -> None:
    project.makeconftest("")
    project.makepyfile(
        test_leg="""
        import pytest

        @pytest.mark.resume("counter-2", contract_policy="skip")
        def test_leg(agentevals_resume):
            agentevals_resume.run_agent()
        """
    )
    result = project.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*no pytest_agentevals_resume_agent hook took the checkpoint 'counter-2'*"])


def test_the_declared_contract_reaches_a_recorded_test(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_rec="""
        def test_rec(agentevals_recorder):
            pass
        """
    )
    project.runpytest().assert_outcomes(passed=1)
    assert leg_trace(project)[0]["contract"]["counter.schema"] == 2  # type: ignore[index]


def test_the_session_report_includes_the_resume_legs_it_recorded(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_leg="""
        import pytest

        @pytest.mark.resume("counter-2")
        def test_leg(agentevals_resume):
            agentevals_resume.run_agent()
        """
    )
    result = project.runpytest("--agentevals-report=report.html")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["agentevals report: wrote *report.html (1 run, *)"])
    html = (project.path / "report.html").read_text()
    assert html.count('<section class="run"') == 1
    assert "test_leg" in html


def test_a_replayed_leg_folds_what_replay_normalize_declares_and_lists_it(pytester: pytest.Pytester) -> None:
    # The recorded run's prompt carried its day; the resumed leg's carries another.
    from pytest_agentevals.resume import extract

    pytester.makepyfile(resume_support=Path(agent.__file__).read_text())
    day = agent.SYSTEM + " Today is {}."
    with ae.Recorder(
        pytester.path / "dated.trace.jsonl",
        agent="counter",
        seed=4,
        task=agent.TASK,
        contract={"counter.schema": 2},
    ):
        agent.run_counter({}, pytester.path / "ws", system=day.format("2026-12-01"))
    extract(pytester.path / "dated.trace.jsonl", 2, "dated-2", pytester.path / "fixtures", continuation=True)
    pytester.makeconftest(
        CONFTEST.replace("agent.run_counter(checkpoint.state, checkpoint.workspace)", "LEG").replace(
            "LEG",
            f"agent.run_counter(checkpoint.state, checkpoint.workspace, system={day.format('2026-12-02')!r})",
        )
    )
    pytester.makepyfile(
        test_leg="""
        import pytest

        # The contract's prompt hash is checked as it is (not folded): tolerated here.
        @pytest.mark.resume("dated-2", mode="replayed", contract_policy="warn")
        def test_leg(agentevals_resume):
            assert agentevals_resume.run_agent() == {"done": 6}
        """
    )
    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider --agentevals-history=off\n")
    without = pytester.runpytest("-rA")
    without.assert_outcomes(passed=1)  # sequential: the changed prompts are reported, not raised
    without.stdout.fnmatch_lines(
        ["replayed * (sequential): served 4 of 4 recorded HTTP exchanges*; 4 divergence(s)*"]
    )
    pytester.makepyprojecttoml('[tool.agentevals]\nreplay_normalize = ["dates"]\n')
    result = pytester.runpytest("-rA")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "resumed dated-2 * in replayed mode",
            "replayed * (sequential): served 4 of 4 recorded HTTP exchanges*; no divergence*",
            "normalized by [[]tool.agentevals[]] replay_normalize: 4 text(s) folded by 2 rule(s):",
            "  dates (stock rule dates v1): 4 text(s) in 4 request(s); 4 differed from the recording; at *",
            "  dates.date (stock rule dates v1): folded nothing*",
        ]
    )
