"""The Claude Agent SDK's Python `query()` (which drives the Claude Code CLI in a subprocess) through
the model endpoint: recorded with the endpoint's env in `ClaudeAgentOptions(env=...)`, then replayed
offline in another folder, with the profile's folds in the report."""

from __future__ import annotations

from pathlib import Path

from pytest_agentevals import Recorder, Replayer
from pytest_agentevals.endpoint.server import ModelEndpoint
from pytest_agentevals.sim import SimServer
from pytest_agentevals.trace.reader import read_trace

from ..clients_support import WRITTEN, agent_sdk, client_env, query_once


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
