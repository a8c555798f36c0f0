"""The foundation's acceptance run: 300 streamed steps of the example agent, recorded with a fake key
in the environment and in the client, read back by `agentevals show`, and no key anywhere on disk."""

from __future__ import annotations

import json
from pathlib import Path

import anthropic
import pytest

import pytest_agentevals as ae
from examples.taskrunner import HarnessConfig, ScriptedModel, make_tasks, run_agent
from pytest_agentevals.sim import SimServer

from ..conftest import make_fake_key, run_agentevals


def record_run(path: Path, workspace: Path, steps: int, key: str) -> None:
    config = HarnessConfig(stream=True, max_steps=steps)
    with SimServer(ScriptedModel(1), seed=1) as sim, ae.Recorder(path, agent="taskrunner", seed=1):
        client = anthropic.Anthropic(base_url=sim.url, api_key=key, max_retries=config.max_retries)
        result = run_agent(client, make_tasks(130, 1), workspace, config)
    assert result.steps == steps


def test_300_streamed_steps_read_back_and_hold_no_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env_key, client_key = make_fake_key("env"), make_fake_key("client")
    monkeypatch.setenv("ANTHROPIC_API_KEY", env_key)
    sizes = {}
    for steps in (100, 300):
        path = tmp_path / f"run-{steps}.trace.jsonl"
        record_run(path, tmp_path / f"ws-{steps}", steps, client_key)
        sizes[steps] = path.stat().st_size / steps

    # Linear growth: the bytes a step costs do not grow with the run's length.
    assert sizes[300] < sizes[100] * 1.15

    shown = run_agentevals("show", "--json", "run-300.trace.jsonl", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    summary = json.loads(shown.stdout)
    assert summary["steps"] == 300
    assert summary["streamed_calls"] == summary["model_calls"] == 300
    assert summary["status"] == "budget_exhausted"  # the step cap ended it
    assert summary["checkpoints"] > 100
    assert summary["compactions"] >= 2
    assert summary["problems"] == ["the run ended budget_exhausted, not ok"]  # said, never "none"

    for file in tmp_path.rglob("*"):
        if file.is_file():
            text = file.read_text(errors="replace")
            assert env_key not in text
            assert client_key not in text
