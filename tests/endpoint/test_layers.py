"""The `agentevals_endpoint` fixture and `model_endpoint()` under the layers, in real pytest runs: a
subprocess agent recorded and replayed by the replay layer, and a marathon seed stopped by a budget."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_agentevals.sim import Reply, SimServer
from tests.conftest import make_fake_key

pytest_plugins = ["pytester"]

AGENT = Path(__file__).with_name("agent.py")


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("ANTHROPIC_API_KEY", make_fake_key("layers"))
    pytester.makeini("[pytest]\naddopts = --agentevals-collect-cassettes=false\n")
    return pytester


def test_a_subprocess_agent_is_recorded_then_replayed_by_the_replay_layer(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.makepyfile(
        test_sub=f"""
        import subprocess, sys
        import pytest

        @pytest.mark.replay("sub")
        def test_sub(agentevals_replay, agentevals_endpoint):
            done = subprocess.run([sys.executable, {str(AGENT)!r}, "3"], env=agentevals_endpoint.env,
                                  capture_output=True, text=True)
            assert done.returncode == 0, done.stderr
            assert done.stdout.strip() == "answer 2"
        """
    )
    with SimServer([Reply.text(f"answer {i}") for i in range(3)]) as sim:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", sim.url)  # the endpoint's upstream
        recorded = project.runpytest("--agentevals-record=once")
        recorded.assert_outcomes(passed=1)
        cassette = project.path / "cassettes" / "sub.trace.jsonl"
        events = [json.loads(line) for line in cassette.read_text().splitlines()]
        assert [e["type"] for e in events].count("model_call") == 3
        assert events[-1]["status"] == "ok"
        assert len(sim.requests) == 3
        replayed = project.runpytest("-rA")
        assert len(sim.requests) == 3  # the replay went nowhere
    replayed.assert_outcomes(passed=1)
    replayed.stdout.fnmatch_lines(["*served 3 of 3 recorded HTTP exchanges; no divergence"])


def test_a_marathon_seed_in_a_subprocess_is_stopped_by_its_budget(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.makeconftest(
        f"""
        import subprocess, sys
        from pytest_agentevals import model_endpoint

        def pytest_agentevals_run_agent(run):
            with model_endpoint() as endpoint:
                done = subprocess.run([sys.executable, {str(AGENT)!r}, "5"], env=endpoint.env,
                                      capture_output=True, text=True)
            print("requests", endpoint.requests, "code", done.returncode)
            return done.returncode
        """
    )
    project.makepyfile(
        test_long="""
        import pytest

        @pytest.mark.marathon(seeds=1, max_calls=2, fail_on=["budget_exhausted"])
        def test_long(agentevals_marathon):
            agentevals_marathon.run_agent()
        """
    )
    with SimServer([Reply.text(f"answer {i}") for i in range(5)]) as sim:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", sim.url)
        result = project.runpytest("-s", "-m", "marathon")
        assert len(sim.requests) == 2
    result.assert_outcomes(failed=1)
    # Two forwarded, the third refused once and not retried; the seed fails as fail_on says.
    result.stdout.fnmatch_lines(["*requests 3 code 1", "*the run ended budget_exhausted*"])
    (trace,) = (project.path / ".agentevals").rglob("seed-*.trace.jsonl")
    end = json.loads(trace.read_text().splitlines()[-1])
    assert end["status"] == "budget_exhausted"
