"""A marker mistake cannot reach the network: a typo, a missing marker, a wrong keyword or value, or a
missing cassette stops before any request is sent. Each test body aims at a simulated server that
counts the requests reaching it, and none may.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

import pytest_agentevals as ae
from pytest_agentevals.sim import SimServer

from .. import replay_support as agent


@pytest.fixture
def server() -> Iterator[SimServer]:
    with agent.sim() as sim:
        yield sim


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(replay_support=Path(agent.__file__).read_text())
    agent.record(pytester.path / "cassettes" / "fix.trace.jsonl")
    pytester.makeini("[pytest]\naddopts = --agentevals-collect-cassettes=false\n")
    return pytester


def live_test(server: SimServer, marker: str, body: str = "agentevals_replay.task") -> str:
    """A test whose body would reach the simulated server: with `marker` above it."""
    return f"""
import pytest
import replay_support as agent

{marker}
def test_it(agentevals_replay):
    agent.run_agent(agent.client({server.url!r}), {body})
"""


def test_a_typo_in_the_marker_stops_the_run_at_collection(
    project: pytest.Pytester, server: SimServer
) -> None:
    project.makepyfile(test_typo=live_test(server, "@pytest.mark.replya('fix')", '"Fix the bug in a.txt"'))
    result = project.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: agentevals: test_typo.py::test_it: @pytest.mark.replya: is not a marker (did you mean "
            "@pytest.mark.replay? (or register 'replya' under markers in your pytest configuration))"
        ]
    )
    assert server.requests == []


def test_the_fixture_without_a_replay_refuses_replay_only_attributes(
    project: pytest.Pytester, server: SimServer
) -> None:
    # A registered look-alike passes collection; the fixture still refuses, naming the marker.
    project.makeini(
        "[pytest]\naddopts = --agentevals-collect-cassettes=false\nmarkers =\n    replya: a look-alike\n"
    )
    project.makepyfile(
        test_typo=live_test(server, "@pytest.mark.replya('fix')"),
        test_none=live_test(server, "", "agentevals_replay.run_agent()"),
    )
    result = project.runpytest()
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "E   AgentEvalsError: test_none.py::test_it: `run_agent()` belongs to a replay, and none is "
            "active, so nothing is answered from a recording (the network would be reached): mark the test "
            '@pytest.mark.replay (its own cassette) or @pytest.mark.replay("NAME"), or call the fixture '
            'with a cassette first: agentevals_replay("NAME")',
            "E   AgentEvalsError: test_typo.py::test_it: `task` belongs to a replay, and none is active, so "
            "nothing is answered from a recording (the network would be reached): this test is marked "
            "@pytest.mark.replya: did you mean @pytest.mark.replay?",
        ]
    )
    assert server.requests == []


@pytest.mark.parametrize(
    ("marker", "message"),
    [
        (
            "@pytest.mark.replay('fix', mdoe='sequential')",
            "@pytest.mark.replay(mdoe=...): unknown keyword (did you mean replay_mode=? allowed: cassette, "
            "from_step, task, replay_mode, record)",
        ),
        (
            "@pytest.mark.replay('fix', replay_mode='loose')",
            "@pytest.mark.replay(replay_mode=...): 'loose' is not allowed (use one of: strict, sequential)",
        ),
        (
            "@pytest.mark.replay('fix', record='sometimes')",
            "@pytest.mark.replay(record=...): 'sometimes' is not allowed (use one of: none, once, new, all)",
        ),
        (
            "@pytest.mark.replay('fix', from_step=-1)",
            "@pytest.mark.replay(from_step=...): -1 is not a step number (give an int >= 0)",
        ),
        (
            "@pytest.mark.replay('fix', 'strict')",
            "@pytest.mark.replay('fix', 'strict'): takes at most 1 positional argument(s) (cassette) (give "
            "the others as keywords: cassette, from_step, task, replay_mode, record)",
        ),
        (
            "@pytest.mark.replay(42)",
            "@pytest.mark.replay(cassette=...): 42 is not a name or a path (give a cassette name or a "
            "file path)",
        ),
    ],
)
def test_a_bad_marker_argument_stops_the_run_at_collection(
    project: pytest.Pytester, server: SimServer, marker: str, message: str
) -> None:
    project.makepyfile(
        test_bad=live_test(server, marker),
        test_fine="def test_fine():\n    pass\n",
    )
    result = project.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: agentevals: test_bad.py::test_it: {message}"])
    assert "passed" not in result.stdout.str()  # not even the other tests ran
    assert server.requests == []


def test_under_xdist_a_bad_marker_stops_the_run_with_the_message(
    project: pytest.Pytester, server: SimServer
) -> None:
    project.makepyfile(test_bad=live_test(server, "@pytest.mark.replay('fix', mdoe='strict')"))
    result = project.runpytest("-n", "2")
    assert result.ret == pytest.ExitCode.INTERRUPTED  # a worker cannot raise a usage error: it stops
    result.stdout.fnmatch_lines(
        ["*Interrupted: agentevals: test_bad.py::test_it: @pytest.mark.replay(mdoe=...): unknown keyword*"]
    )
    assert "INTERNALERROR" not in result.stdout.str()
    assert server.requests == []


def test_a_bad_module_level_marker_is_caught_too(project: pytest.Pytester, server: SimServer) -> None:
    project.makepyfile(
        test_module="import pytest\n\npytestmark = pytest.mark.replay(replay_mode='fast')\n\n"
        + live_test(server, "@pytest.mark.replay('fix')")
    )
    result = project.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*test_module.py::test_it: @pytest.mark.replay(replay_mode=...): 'fast' is not*"]
    )


def test_a_bare_marker_without_its_cassette_fails_before_the_body_runs(
    project: pytest.Pytester, server: SimServer
) -> None:
    # No fixture requested either: the marker alone replays (as @pytest.mark.vcr does).
    project.makepyfile(
        test_bare=f"""
        import pytest
        import replay_support as agent

        @pytest.mark.replay
        def test_it():
            agent.run_agent(agent.client({server.url!r}), "Fix the bug in a.txt")
        """
    )
    result = project.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "E   CassetteError: */cassettes/test_bare/test_it.trace.jsonl: no such cassette (record it with "
            "`pytest 'test_bare.py::test_it' --agentevals-record=once`*"
        ]
    )
    assert server.requests == []


def yaml_cassette(trace: Path) -> str:
    """The recorded run as pytest-recording would have stored it (a vcrpy YAML cassette)."""
    interactions = []
    for event in ae.read_trace(trace):
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
    return json.dumps({"interactions": interactions, "version": 1})


def test_a_bare_marker_finds_pytest_recordings_cassettes(project: pytest.Pytester) -> None:
    # Moving from @pytest.mark.vcr changes only the marker: the YAML cassettes stay where they are.
    project.makeini("[pytest]\naddopts = --agentevals-collect-cassettes=false\npythonpath = .\n")
    folder = project.path / "tests" / "cassettes" / "test_moved"
    folder.mkdir(parents=True)
    text = yaml_cassette(project.path / "cassettes" / "fix.trace.jsonl")
    (folder / "test_fix.yaml").write_text(text)
    (folder / "TestFix.test_fix[a-b].yaml").write_text(text)
    (project.path / "tests" / "test_moved.py").write_text(
        """
import pytest
import replay_support as agent

ORIGINAL = dict(agent.FILES)


@pytest.fixture(autouse=True)
def _files():  # a YAML cassette records HTTP only: its tools run for real
    agent.FILES.clear()
    agent.FILES.update(ORIGINAL)


@pytest.mark.replay  # was: @pytest.mark.vcr
def test_fix():
    assert agent.run_agent(agent.client(), "Fix the bug in a.txt") == "Fixed: add() now adds."


class TestFix:
    @pytest.mark.replay
    @pytest.mark.parametrize("name", ["a-b"])
    def test_fix(self, name):
        assert agent.run_agent(agent.client(), "Fix the bug in a.txt") == "Fixed: add() now adds."
"""
    )
    result = project.runpytest("tests")
    result.assert_outcomes(passed=2)
