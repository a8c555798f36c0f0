"""The Claude Agent SDK's Python `query()` (which drives the Claude Code CLI in a subprocess) through
the model endpoint: recorded with the endpoint's env in `ClaudeAgentOptions(env=...)`, then replayed
offline in another folder, with the profile's folds in the report; and `query()` as the resume hook of
legs booted from an endpoint checkpoint, stopped by a budget or by `until`."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_agentevals import Recorder, Replayer
from pytest_agentevals.endpoint.server import ModelEndpoint
from pytest_agentevals.resume import extract
from pytest_agentevals.sim import SimServer
from pytest_agentevals.trace.reader import read_trace

from ..clients_support import WRITTEN, agent_sdk, client_env, query_once

pytest_plugins = ["pytester"]


def test_query_is_recorded_and_replayed_offline_through_the_endpoint(
    model: SimServer, tmp_path: Path
) -> None:
    sdk = agent_sdk()
    trace = tmp_path / "query.trace.jsonl"
    recorded_in, replayed_in = tmp_path / "recorded", tmp_path / "replayed"
    recorded_in.mkdir()
    replayed_in.mkdir()
    env = client_env(model.url, tmp_path / "home")
    before = len(model.exchanges)
    with Recorder(trace, http=False), ModelEndpoint(upstream=model.url, environ=env) as endpoint:
        messages = query_once("write hello.txt", recorded_in, endpoint.env)
    assert isinstance(messages[-1], sdk.ResultMessage)
    assert messages[-1].is_error is False
    assert (recorded_in / "hello.txt").read_text() == WRITTEN
    calls = [e for e in read_trace(trace) if e["type"] == "model_call"]
    assert len(calls) == len(model.exchanges) - before == 2
    assert "sdk-py" in calls[0]["request"]["headers"]["user-agent"]

    upstream = len(model.exchanges)
    with Replayer(trace) as replay, ModelEndpoint(environ=env) as endpoint:
        replayed = query_once("write hello.txt", replayed_in, endpoint.env)
    assert len(model.exchanges) == upstream  # offline
    assert replayed[-1].is_error is False
    assert (replayed_in / "hello.txt").read_text() == WRITTEN
    assert replay.report.divergences == []
    assert replay.report.folds is not None
    assert replay.report.folds.by_rule["cwd"].differed == 2


# The resume hook drives `query()` and lets whatever it raises through: a stop reaches the CLI as the
# endpoint's final 500, and the SDK raises its own `ResultError` about it, which the leg turns back
# into the stop (`RunStopped`, the SDK's error its cause) — or, for `until`, into the leg's normal end.
CONFTEST = """
import anyio
import claude_agent_sdk as sdk
from pytest_agentevals import model_endpoint
from pytest_agentevals.endpoint import write_claude_session


def pytest_agentevals_resume_agent(checkpoint):
    if checkpoint.state.get("format") != "agentevals-endpoint/1":
        return None
    config = checkpoint.workspace.parent / "claude-config"
    session = write_claude_session(checkpoint.state, checkpoint.workspace, config)
    with model_endpoint() as endpoint:
        options = sdk.ClaudeAgentOptions(
            cwd=str(checkpoint.workspace), resume=session, allowed_tools=["Write"],
            env={**endpoint.env, "CLAUDE_CONFIG_DIR": str(config)}, setting_sources=[],
            extra_args={"strict-mcp-config": None},
        )

        async def collect():
            return [m async for m in sdk.query(prompt="Go on from where you stopped.", options=options)]

        return anyio.run(collect)
"""

TESTS = """
import claude_agent_sdk as sdk
import pytest
from pytest_agentevals import RunStopped

TOLERATE = ["system_sha256"]  # the CLI's system prompt carries a digest of the prompt


@pytest.mark.resume("query-at-1", max_calls=1, contract_tolerate=TOLERATE)
def test_a_budget_stop_raises_run_stopped(agentevals_resume):
    with pytest.raises(RunStopped) as stopped:
        agentevals_resume.run_agent()
    assert (stopped.value.status, stopped.value.guard) == ("budget_exhausted", "budget")
    assert isinstance(stopped.value.__cause__, sdk.ClaudeSDKError)  # the SDK's own error, chained
    assert agentevals_resume.phase.status == "budget_exhausted" and agentevals_resume.phase.calls == 1


@pytest.mark.resume("query-at-1", until="calls>=1", contract_tolerate=TOLERATE)
def test_the_goal_reached_ends_the_leg(agentevals_resume):
    assert agentevals_resume.run_agent() is None
    phase = agentevals_resume.phase
    assert phase.until_reached and phase.status == "ok" and phase.calls == 1


@pytest.mark.resume("query-at-1", max_calls=6, contract_tolerate=TOLERATE)
def test_an_unstopped_leg_returns_what_query_yielded(agentevals_resume):
    messages = agentevals_resume.run_agent()
    assert isinstance(messages[-1], sdk.ResultMessage) and messages[-1].is_error is False
    assert agentevals_resume.phase.status == "ok" and agentevals_resume.phase.calls == 2
"""


def test_a_resumed_query_leg_raises_the_stop_not_the_sdks_error(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, model: SimServer, tmp_path: Path
) -> None:
    agent_sdk()
    env = client_env(model.url, tmp_path / "home")
    work = tmp_path / "work"
    work.mkdir()
    trace = tmp_path / "query.trace.jsonl"
    with (
        Recorder(trace, http=False),
        ModelEndpoint(upstream=model.url, environ=env, checkpoints=work, checkpoint_every=1) as endpoint,
    ):
        query_once("write hello.txt", work, endpoint.env)
    extract(trace, 1, "query-at-1", pytester.path / "fixtures")

    for name, value in env.items():
        monkeypatch.setenv(name, value)  # ANTHROPIC_BASE_URL: the hook's endpoint's upstream
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_query=TESTS)
    before = len(model.exchanges)
    result = pytester.runpytest("-p", "no:cacheprovider", "--agentevals-history=off")
    result.assert_outcomes(passed=3)
    assert len(model.exchanges) > before + 3  # every leg ran live against sim
    legs = sorted((pytester.path / ".agentevals" / "traces").glob("*.trace.jsonl"))
    ends = sorted(read_trace(path)[-1]["status"] for path in legs)
    assert ends == ["budget_exhausted", "ok", "ok"]
    assert all("error" not in read_trace(path)[-1] for path in legs)  # no SDK error claimed by a trace
