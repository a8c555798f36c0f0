"""The replay layer in real pytest runs: the marker, the fixture, record modes, collected cassettes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import pytest_agentevals as ae
from pytest_agentevals import errors, replay

from .. import replay_support as agent

pytest_plugins = ["pytester"]

RUNNER = """
import replay_support as agent

def pytest_agentevals_run_agent(run):
    return agent.run_agent(agent.client(), run.task)
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A pytester folder with the sample agent and a recorded cassette `cassettes/fix.trace.jsonl`."""
    pytester.makepyfile(replay_support=Path(agent.__file__).read_text())
    agent.record(pytester.path / "cassettes" / "fix.trace.jsonl")
    # Tests that use other cassettes do not want this one collected on its own; the collection
    # tests turn it back on.
    pytester.makeini("[pytest]\naddopts = --agentevals-collect-cassettes=false\n")
    return pytester


def test_a_marked_test_replays_its_cassette_offline(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_fix="""
        import pytest
        import replay_support as agent

        @pytest.mark.replay("fix")
        def test_fix(agentevals_replay):
            assert agentevals_replay.task == "Fix the bug in a.txt"
            assert agent.run_agent(agent.client(), agentevals_replay.task) == "Fixed: add() now adds."
            assert agent.EXECUTED == []
        """
    )
    result = project.runpytest("-rA")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*- Captured agentevals replay call -*",
            "replayed */cassettes/fix.trace.jsonl (strict): served 4 of 4 recorded HTTP exchanges, "
            "3 of 3 tool calls; no divergence",
        ]
    )


def test_a_divergence_fails_the_test_with_the_diff(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_fix="""
        import pytest
        import replay_support as agent

        @pytest.mark.replay("fix")
        def test_changed_prompt():
            agent.run_agent(agent.client(), "Fix the bug in b.txt")
        """
    )
    result = project.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "E*ReplayDivergence: replay diverged at model call 1 of the run: the request differs from "
            "recorded model call 1 (step 1, line 2) of */cassettes/fix.trace.jsonl in message 0 (user), "
            "field content",
            "E*  messages[[]0].content:",
            "E*    recorded: 'Fix the bug in a.txt'",
            "E*    now:      'Fix the bug in b.txt'",
            "E*nearest recorded requests:",
        ]
    )
    assert "APIConnectionError" not in result.stdout.str()


def test_a_divergence_the_harness_swallows_still_fails_the_test(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_fix="""
        import pytest
        import replay_support as agent

        @pytest.mark.replay("fix")
        def test_supervised():
            try:
                agent.run_agent(agent.client(), "Fix the bug in b.txt")
            except Exception:
                pass  # a supervisor that logs and carries on
        """
    )
    result = project.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["E*ReplayDivergence: replay diverged at model call 1 of the run*"])


def test_a_missing_cassette_names_the_file_and_how_to_record_it(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_missing="""
        import pytest

        @pytest.mark.replay("nope")
        def test_it():
            pass
        """
    )
    result = project.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "E*CassetteError: */cassettes/nope.trace.jsonl: no such cassette (record it with "
            "`pytest 'test_missing.py::test_it' --agentevals-record=once`, copy an incident in with "
            "`agentevals promote TRACE --name NAME`, or check the name in @pytest.mark.replay(...))"
        ]
    )


def test_a_corrupt_cassette_names_the_line(project: pytest.Pytester) -> None:
    cassette = project.path / "cassettes" / "fix.trace.jsonl"
    lines = cassette.read_text().splitlines(keepends=True)
    cassette.write_text("".join([*lines[:3], "garbage\n", *lines[4:]]))
    project.makepyfile(
        test_fix="""
        import pytest

        @pytest.mark.replay("fix")
        def test_it():
            pass
        """
    )
    result = project.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["E*CassetteError: */cassettes/fix.trace.jsonl:4: the line is not valid JSON*"]
    )


def test_a_stale_cassette_lists_the_differences_and_the_command(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_stale="""
        import pytest
        import replay_support as agent

        @pytest.mark.replay("fix")
        def test_new_tool_schema():
            tools = [agent.TOOLS[0]]  # write_file was dropped
            agent.run_agent(agent.client(), "Fix the bug in a.txt", tools=tools)
        """
    )
    result = project.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "E*StaleCassette: */cassettes/fix.trace.jsonl: the cassette is stale: it was recorded against "
            "another environment:",
            "E*  - tool schemas: sha256 * recorded, * now",
            "E*  - tool 'write_file': removed",
            "E*Re-record it: pytest 'test_stale.py::test_new_tool_schema' --agentevals-record=all",
        ]
    )


def test_sequential_mode_reports_divergences_without_failing(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_fix="""
        import pytest
        import replay_support as agent

        @pytest.mark.replay("fix", replay_mode="sequential")
        def test_changed_harness(agentevals_replay):
            assert agent.run_agent(agent.client(), "Fix the bug, please") == "Fixed: add() now adds."
            assert len(agentevals_replay.report.divergences) == 4
        """
    )
    result = project.runpytest()
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(
        [
            "*ReplayDivergenceWarning: replayed */cassettes/fix.trace.jsonl (sequential): served 4 of 4 "
            "recorded HTTP exchanges, 3 of 3 tool calls; 4 divergence(s)",
            "*model call 1: the request differs from recorded model call 1 (step 1, line 2) in message 0 "
            "(user), field content; served the recorded response",
        ]
    )


def test_any_trace_file_passed_to_the_fixture_replays(project: pytest.Pytester, tmp_path: Path) -> None:
    elsewhere = agent.record(tmp_path / "incident.trace.jsonl")
    project.makepyfile(
        test_any=f"""
        import replay_support as agent

        def test_it(agentevals_replay):
            with agentevals_replay({str(elsewhere)!r}) as replay:
                agent.run_agent(agent.client(), replay.cassette.task)
            assert replay.report.served_http == 4
        """
    )
    project.runpytest().assert_outcomes(passed=1)


def test_record_once_records_a_missing_cassette_then_replays_it(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_rec="""
        import pytest
        import replay_support as agent

        @pytest.mark.replay(task="Fix the bug in a.txt")
        def test_fix(agentevals_replay):
            with agent.sim() as server:
                base = server.url if agentevals_replay.recording else "https://api.anthropic.com"
                assert agent.run_agent(agent.client(base), agentevals_replay.task) == "Fixed: add() now adds."
                assert len(server.requests) == (4 if agentevals_replay.recording else 0)
        """
    )
    cassette = project.path / "cassettes" / "test_rec" / "test_fix.trace.jsonl"
    project.runpytest("--agentevals-record=once").assert_outcomes(passed=1)
    events = ae.read_trace(cassette)
    assert events[0]["task"] == "Fix the bug in a.txt"
    assert sum(e["type"] == "model_call" for e in events) == 4
    project.runpytest().assert_outcomes(passed=1)  # record=none: replayed, the sim saw nothing


def test_from_step_replays_from_a_checkpoint(project: pytest.Pytester) -> None:
    trace = project.path / "cassettes" / "long.trace.jsonl"
    with agent.sim() as server, ae.Recorder(trace, task="Fix the bug in a.txt"):
        model = agent.client(server.url)
        agent.run_agent(model, "Fix the bug in a.txt", max_steps=1)
        ae.checkpoint({"phase": 2})
        model.messages.create(model=agent.MODEL, max_tokens=5, messages=[{"role": "user", "content": "next"}])
    project.makepyfile(
        test_resume="""
        import pytest
        import replay_support as agent

        @pytest.mark.replay("long", from_step=1)
        def test_phase_two(agentevals_replay):
            assert agentevals_replay.checkpoint == {"phase": 2}
            agent.client().messages.create(
                model=agent.MODEL, max_tokens=5, messages=[{"role": "user", "content": "next"}]
            )
        """
    )
    project.runpytest().assert_outcomes(passed=1)


def test_a_cassette_without_a_test_is_collected_as_a_replay_test(project: pytest.Pytester) -> None:
    project.makeconftest(RUNNER)
    (project.path / "tests").mkdir()
    (project.path / "tests" / "test_other.py").write_text("def test_other():\n    pass\n")
    project.makeini("[pytest]\ntestpaths = tests\n")
    result = project.runpytest("-v", "-m", "replay")
    result.assert_outcomes(passed=1, deselected=1)
    result.stdout.fnmatch_lines(["cassettes/fix.trace.jsonl::replay PASSED*"])
    assert project.runpytest("--agentevals-collect-cassettes=false").parseoutcomes() == {"passed": 1}


def test_a_collected_cassette_that_diverges_fails_with_the_replay_message(project: pytest.Pytester) -> None:
    project.makeconftest(
        RUNNER.replace("run_agent(agent.client(), run.task)", "run_agent(agent.client(), run.task + '!')")
    )
    result = project.runpytest("--agentevals-collect-cassettes=true")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*replay diverged at model call 1 of the run: the request differs from recorded model call 1*",
            "E       now:      'Fix the bug in a.txt!'",
        ]
    )


def test_a_collected_cassette_without_a_runner_says_how_to_add_one(project: pytest.Pytester) -> None:
    result = project.runpytest("--agentevals-collect-cassettes=true")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*/cassettes/fix.trace.jsonl: no agent runner took this run's task 'Fix the bug in a.txt': add a "
            "hook `def pytest_agentevals_run_agent(run): ...` to a conftest.py*"
        ]
    )


def test_a_cassette_used_by_a_test_is_not_collected_twice(project: pytest.Pytester) -> None:
    project.makeconftest(RUNNER)
    project.makepyfile(
        test_fix="""
        import pytest

        @pytest.mark.replay("fix")
        def test_fix(agentevals_replay):
            agentevals_replay.run_agent()
        """
    )
    project.makeini("[pytest]\ntestpaths = test_fix.py\n")
    result = project.runpytest("-v")
    result.assert_outcomes(passed=1)


def test_a_vcrpy_yaml_cassette_replays_under_the_marker(project: pytest.Pytester) -> None:
    interactions = []
    for event in ae.read_trace(project.path / "cassettes" / "fix.trace.jsonl"):
        if event["type"] == "model_call":
            interactions.append(
                {
                    "request": {
                        "method": "POST",
                        "uri": "https://api.anthropic.com/v1/messages",
                        "body": json.dumps(event["request"]["body"]),
                        "headers": {"content-type": ["application/json"]},
                    },
                    "response": {
                        "status": {"code": 200, "message": "OK"},
                        "headers": {"content-type": ["application/json"]},
                        "body": {"string": json.dumps(event["response"]["json"])},
                    },
                }
            )
    (project.path / "cassettes" / "legacy.yaml").write_text(
        json.dumps({"interactions": interactions, "version": 1})
    )
    project.makepyfile(
        test_legacy="""
        import pytest
        import replay_support as agent

        @pytest.mark.replay("legacy")
        def test_it():
            assert agent.run_agent(agent.client(), "Fix the bug in a.txt") == "Fixed: add() now adds."
        """
    )
    project.runpytest().assert_outcomes(passed=1)


def test_record_all_re_records_keeping_the_task(project: pytest.Pytester) -> None:
    cassette = project.path / "cassettes" / "fix.trace.jsonl"
    before = ae.read_trace(cassette)[0]["run_id"]
    project.makepyfile(
        test_rec="""
        import pytest
        import replay_support as agent

        @pytest.mark.replay("fix")
        def test_fix(agentevals_replay):
            assert agentevals_replay.recording
            with agent.sim() as server:
                agent.run_agent(agent.client(server.url), agentevals_replay.task)
        """
    )
    project.runpytest("--agentevals-record=all").assert_outcomes(passed=1)
    events = ae.read_trace(cassette)
    assert events[0]["run_id"] != before
    assert events[0]["task"] == "Fix the bug in a.txt"
    assert sorted(p.name for p in cassette.parent.iterdir()) == ["fix.trace.jsonl"]


def test_record_new_replays_what_is_recorded_and_adds_the_rest(project: pytest.Pytester) -> None:
    cassette = project.path / "cassettes" / "short.trace.jsonl"
    agent.record(cassette, max_steps=2)  # the recording stops after two model calls
    project.makepyfile(
        test_rec="""
        import pytest
        import replay_support as agent

        @pytest.mark.replay("short")
        def test_fix(agentevals_replay):
            with agent.sim(agent.script()[2:]) as server:  # the live model picks up at call 3
                answer = agent.run_agent(agent.client(server.url), agentevals_replay.task)
            assert answer == "Fixed: add() now adds."
        """
    )
    project.runpytest("--agentevals-record=new").assert_outcomes(passed=1)
    events = ae.read_trace(cassette)
    assert sum(e["type"] == "model_call" for e in events) == 4
    assert sorted(p.name for p in cassette.parent.iterdir()) == ["fix.trace.jsonl", "short.trace.jsonl"]
    project.runpytest().assert_outcomes(passed=1)  # now all of it replays


def test_the_tests_own_trace_records_the_replayed_run_and_its_divergences(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_traced="""
        import pytest
        import replay_support as agent

        @pytest.mark.replay("fix", replay_mode="sequential")
        def test_it(agentevals_recorder, agentevals_replay):
            agent.run_agent(agent.client(), "Fix the bug, please")
        """
    )
    project.runpytest("--agentevals-traces-dir=traces").assert_outcomes(passed=1, warnings=1)
    (trace,) = (project.path / "traces").glob("*.trace.jsonl")
    events = ae.read_trace(trace)
    assert sum(e["type"] == "model_call" for e in events) == 4
    assert sum(e["type"] == "tool_call" for e in events) == 3
    assert [e["data"]["call"] for e in events if e["type"] == "note"] == [1, 2, 3, 4]


def test_the_fixture_has_a_public_type_and_the_errors_users_meet_are_exported(
    project: pytest.Pytester,
) -> None:
    # The fixture's type at the root; the errors a user meets, and the run's report, in their tier-2
    # homes (docs/api.md).
    for module, name in [
        (ae, "ReplayRun"),
        (errors, "GoldenError"),
        (errors, "StaleGolden"),
        (errors, "HistoryError"),
        (replay, "ReplayReport"),
    ]:
        assert name in module.__all__
        assert getattr(module, name).__module__.startswith("pytest_agentevals.")
    assert "record" not in ae.__all__  # Recorder and Replayer, once each
    assert "replay" not in ae.__all__
    project.makepyfile(
        test_typed="""
        import pytest
        import replay_support as agent
        from pytest_agentevals import ReplayRun

        @pytest.mark.replay("fix")
        def test_it(agentevals_replay: ReplayRun):
            assert isinstance(agentevals_replay, ReplayRun)
            agent.run_agent(agent.client(), agentevals_replay.task)
        """
    )
    project.runpytest().assert_outcomes(passed=1)


@pytest.mark.parametrize("how", ["the folder named", "no paths named"])
def test_a_cassette_link_that_loops_or_dangles_is_reported_not_skipped(
    project: pytest.Pytester, how: str
) -> None:
    # pytest's own walk passes over a link that is no file (it loops or points nowhere): without an
    # item of its own, `pytest cassettes` said "no tests ran" and the cassettes were never replayed.
    project.makeconftest(RUNNER)
    (project.path / "cassettes" / "fix.trace.jsonl").unlink()
    (project.path / "cassettes" / "gone.trace.jsonl").symlink_to("nowhere.trace.jsonl")
    (project.path / "cassettes" / "loop-a.trace.jsonl").symlink_to("loop-b.trace.jsonl")
    (project.path / "cassettes" / "loop-b.trace.jsonl").symlink_to("loop-a.trace.jsonl")
    project.makeini("[pytest]\n")
    result = project.runpytest(*(["cassettes"] if how == "the folder named" else []))
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(
        ["*gone.trace.jsonl*is a symbolic link that loops or points nowhere*"], consecutive=False
    )
