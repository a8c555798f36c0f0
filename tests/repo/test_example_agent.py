"""The example agent (examples/taskrunner) against the simulated model: its loop, compaction, budget,
watchdog, checkpoints and supervisor, its determinism, and what a recording of it holds."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import pytest
from hypothesis import given
from hypothesis import strategies as st

import pytest_agentevals
from examples.taskrunner import Checkpoint, HarnessConfig, ScriptedModel, make_tasks, run, run_agent
from examples.taskrunner.__main__ import main as taskrunner_main
from examples.taskrunner.harness import AgentState
from examples.taskrunner.prompts import COMPACT_REQUEST, parse_progress
from examples.taskrunner.supervisor import MARKER
from examples.taskrunner.tasks import parse_task
from examples.taskrunner.tools import Toolbox, ToolError
from examples.taskrunner.watchdog import Watchdog
from pytest_agentevals.sim import Fault, FaultPlan, SimServer

REPO = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def sim_client(
    seed: int = 0, faults: FaultPlan | None = None, max_retries: int = 2, **policy: Any
) -> Iterator[tuple[SimServer, anthropic.Anthropic]]:
    """The scripted model behind a sim, and a client for it: for tests that look at the requests."""
    with SimServer(ScriptedModel(seed, **policy), seed=seed, faults=faults) as sim:
        # Any key does for the sim; built at run time like every key in the tests.
        client = anthropic.Anthropic(base_url=sim.url, api_key="sim-" + "key", max_retries=max_retries)
        with client:
            yield sim, client


def events(path: Path, kind: str) -> list[dict[str, Any]]:
    return [event for event in pytest_agentevals.read_trace(path) if event["type"] == kind]


# -- the loop ------------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_completes_a_small_task_list(tmp_path: Path, stream: bool) -> None:
    result = run(6, seed=1, workspace=tmp_path, stream=stream)
    assert result.status == "ok"
    assert (result.tasks_done, result.tasks_total) == (6, 6)
    assert result.restarts == result.watchdog_fires == 0
    assert result.steps >= 13  # a write and a check per task, and the closing answer
    for task in make_tasks(6, seed=1):
        assert (tmp_path / task.path).read_text() == task.expected()


def test_a_long_streamed_run(tmp_path: Path) -> None:
    result = run(125, seed=1, workspace=tmp_path, stream=True)
    assert result.status == "ok"
    assert result.steps >= 280
    assert result.compactions >= 2


def test_same_seed_same_tool_calls(tmp_path: Path) -> None:
    first = run(12, seed=5, workspace=tmp_path / "a")
    again = run(12, seed=5, workspace=tmp_path / "b", stream=True)
    other = run(12, seed=6, workspace=tmp_path / "c")
    assert first.tool_calls == again.tool_calls
    assert (first.steps, first.tokens) == (again.steps, again.tokens)
    assert other.tool_calls != first.tool_calls
    assert any(call.startswith("read_file(") for call in first.tool_calls + other.tool_calls)


def test_injected_api_faults_do_not_change_the_run(tmp_path: Path) -> None:
    plan = FaultPlan(rate_limit=0.1, overloaded=0.1, seed=3, retry_after=0.001, max_in_a_row=2)
    calm = run(10, seed=3, workspace=tmp_path / "calm")
    stormy = run(10, seed=3, workspace=tmp_path / "stormy", faults=plan)
    assert stormy.status == "ok"
    assert stormy.restarts == 0  # the SDK's retries absorbed every fault
    assert stormy.tool_calls == calm.tool_calls


# -- compaction ----------------------------------------------------------------------------------


def test_compaction_fires_at_the_mark_and_restarts_the_context(tmp_path: Path) -> None:
    config = HarnessConfig(compact_at=1500)
    with sim_client(seed=2) as (sim, client):
        result = run_agent(client, make_tasks(8, seed=2), tmp_path, config)
    assert result.status == "ok"
    assert result.compactions >= 1
    asks = [i for i, request in enumerate(sim.requests) if COMPACT_REQUEST in request.last_text]
    assert len(asks) == result.compactions
    for i in asks:
        ask, after = sim.requests[i], sim.requests[i + 1]
        assert ask.body["tool_choice"] == {"type": "none"}
        assert sim.requests[i - 1].tokens > config.compact_at  # the call that crossed the mark
        summary = sim.exchanges[i].message
        assert summary is not None
        assert len(after.messages) == 1
        assert summary["content"][0]["text"] in after.last_text
        assert after.tokens < ask.tokens


# -- budget --------------------------------------------------------------------------------------


def test_token_budget_ends_the_run_with_budget_exhausted(tmp_path: Path) -> None:
    path = tmp_path / "run.trace.jsonl"
    with pytest_agentevals.Recorder(path, agent="taskrunner", seed=1):
        result = run(20, seed=1, workspace=tmp_path / "ws", token_budget=30_000)
    assert result.status == "budget_exhausted"
    assert result.tokens > 30_000
    assert 0 < result.tasks_done < 20
    assert result.error is not None
    assert "budget" in result.error
    assert events(path, "run_end")[0]["status"] == "budget_exhausted"


# -- watchdog ------------------------------------------------------------------------------------


def test_watchdog_catches_the_seeded_stall_and_the_restart_recovers(tmp_path: Path) -> None:
    path = tmp_path / "stall.trace.jsonl"
    with pytest_agentevals.Recorder(path, agent="taskrunner", seed=4):
        result = run(10, seed=4, workspace=tmp_path / "ws", stall_at=9)
    assert result.status == "ok"
    assert result.watchdog_fires == 2  # a nudge, then the abort
    assert result.restarts == 1
    notes = [(e["message"], e.get("data", {}).get("action")) for e in events(path, "note")]
    assert notes == [
        ("watchdog fired", "nudge"),
        ("watchdog fired", "abort"),
        ("restarting from the last checkpoint", None),
    ]
    fired = events(path, "note")[0]["data"]["reason"]
    assert "same call 4 times in a row: read_file" in fired
    repeated = [call for call in result.tool_calls if call.startswith("read_file")]
    assert len(repeated) >= 8


def test_a_stall_that_persists_escalates(tmp_path: Path) -> None:
    result = run(10, seed=4, workspace=tmp_path, stall_at=9, stall_persists=True, max_restarts=2)
    assert result.status == "escalated"
    assert result.restarts == 2
    assert result.error is not None
    assert result.error.startswith("WatchdogAbort")


def test_watchdog_rules() -> None:
    dog = Watchdog(no_progress_steps=3, repeat_limit=3)
    read = ("read_file", {"path": "a"})
    assert dog.observe([read], progressed=False) is None
    assert dog.observe([read], progressed=False) is None
    fired = dog.observe([read], progressed=True)
    assert fired is not None
    assert "3 times in a row" in fired
    dog.reset()
    assert dog.observe([("write_file", {"path": "a"})], progressed=False) is None
    assert dog.observe([read], progressed=False) is None
    assert dog.observe([], progressed=False) == "3 steps without a newly verified task"
    with pytest.raises(ValueError, match="repeat_limit"):
        Watchdog(repeat_limit=1)


# -- supervisor and checkpoints ------------------------------------------------------------------


def test_supervisor_restarts_from_the_last_checkpoint_after_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "crash.trace.jsonl"
    plan = FaultPlan(at={15: Fault.drop()})
    with (
        sim_client(seed=6, faults=plan, max_retries=0) as (sim, client),
        pytest_agentevals.Recorder(path, agent="taskrunner", seed=6),
    ):
        result = run_agent(client, make_tasks(8, seed=6), tmp_path / "ws")
    assert result.status == "ok"
    assert result.restarts == 1
    assert [e.outcome for e in sim.exchanges].count("drop") == 1
    restart = next(e for e in events(path, "note") if e["message"].startswith("restarting"))
    assert restart["data"]["reason"].startswith("APIConnectionError")
    verified_before = restart["data"]["verified"]
    assert verified_before == len([e for e in events(path, "checkpoint") if e["seq"] < restart["seq"]]) > 0
    # The first request after the crash starts a fresh context from the checkpoint's progress.
    resumed = sim.requests[16]
    assert len(resumed.messages) == 1
    assert parse_progress(resumed.last_text) == (verified_before, 8)


def test_a_step_timeout_crashes_the_attempt_and_it_is_restarted(tmp_path: Path) -> None:
    plan = FaultPlan(at={5: Fault.slow(60)})
    with sim_client(seed=7, faults=plan, max_retries=0) as (sim, client):
        result = run_agent(client, make_tasks(5, seed=7), tmp_path, HarnessConfig(step_timeout=0.2))
    assert result.status == "ok"
    assert result.restarts == 1
    assert sim.exchanges[5].outcome == "client_gone"


def test_crashes_beyond_the_restart_limit_fail_the_run(tmp_path: Path) -> None:
    plan = FaultPlan(drop=1.0)
    result = run(3, seed=1, workspace=tmp_path, faults=plan, max_retries=0, max_restarts=1)
    assert result.status == "failed"
    assert result.restarts == 1
    assert result.steps == 0


def test_checkpoint_restore_puts_back_state_and_files(tmp_path: Path) -> None:
    (tmp_path / MARKER).touch()
    (tmp_path / "t001.txt").write_text("rebma")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "note.txt").write_text("kept")
    saved = Checkpoint.capture(AgentState(verified=["T001"], summary="one done"), tmp_path)
    (tmp_path / "t001.txt").write_text("changed")
    (tmp_path / "t002.txt").write_text("not checkpointed")
    state = saved.restore(tmp_path)
    assert state == AgentState(verified=["T001"], summary="one done")
    assert state is not saved.state
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()) == [
        MARKER,
        "sub/note.txt",
        "t001.txt",
    ]
    assert (tmp_path / "t001.txt").read_text() == "rebma"


def test_resume_from_a_recorded_checkpoint(tmp_path: Path) -> None:
    path = tmp_path / "full.trace.jsonl"
    with pytest_agentevals.Recorder(path, agent="taskrunner", seed=8):
        run(8, seed=8, workspace=tmp_path / "first")
    fifth = events(path, "checkpoint")[4]
    resumed = run(8, seed=8, workspace=tmp_path / "second", resume=Checkpoint.from_event(fifth))
    assert resumed.status == "ok"
    done_before = fifth["state"]["verified"]
    assert len(done_before) == 5
    written = {call for call in resumed.tool_calls if call.startswith("write_file")}
    assert not any(f'"t00{n}.txt"' in call for call in written for n in range(1, 6))
    assert (tmp_path / "second" / "t001.txt").exists()  # restored from the snapshot


def test_a_fresh_context_lists_only_the_tasks_left(tmp_path: Path) -> None:
    with sim_client(seed=2) as (sim, client):
        run_agent(client, make_tasks(8, seed=2), tmp_path, HarnessConfig(compact_at=1500))
    openings = [request.blocks(request.messages[0])[0]["text"] for request in sim.requests]
    listed = [sum(parse_task(line) is not None for line in text.splitlines()) for text in openings]
    assert listed[0] == 8
    assert min(listed) < 8  # after a compaction, verified tasks are no longer listed
    assert all(a >= b for a, b in itertools.pairwise(listed))


def test_a_foreign_non_empty_workspace_is_refused(tmp_path: Path) -> None:
    (tmp_path / "precious.txt").write_text("do not delete")
    with pytest.raises(ValueError, match="not a taskrunner workspace"):
        run(2, workspace=tmp_path)
    assert (tmp_path / "precious.txt").exists()


# -- recording -----------------------------------------------------------------------------------


def test_a_recorded_run_holds_every_kind_of_event(tmp_path: Path) -> None:
    path = tmp_path / "run.trace.jsonl"
    task = {"tasks": 8, "seed": 1}
    with pytest_agentevals.Recorder(path, agent="taskrunner", seed=1, task=task):
        result = run(8, seed=1, workspace=tmp_path / "ws", stream=True, compact_at=1500)
    trace = pytest_agentevals.read_trace(path)
    kinds = {event["type"] for event in trace}
    assert {"model_call", "tool_call", "checkpoint", "verification", "compaction"} <= kinds
    assert trace[0]["type"] == "run_start"
    assert trace[0]["task"] == task
    assert trace[-1]["type"] == "run_end"
    assert trace[-1]["status"] == "ok"
    assert len(events(path, "model_call")) == result.steps
    assert {e["name"] for e in events(path, "tool_call")} <= {"read_file", "write_file", "run_check"}
    assert len(events(path, "tool_call")) == len(result.tool_calls)
    checks = events(path, "verification")
    assert checks[-1]["progress"] == 1.0
    assert sum(e["passed"] for e in checks) == 8
    checkpoint = events(path, "checkpoint")[-1]
    assert checkpoint["state"]["verified"][-1] == "T008"
    assert "t008.txt" in checkpoint["workspace"]["files"]
    compaction = events(path, "compaction")[0]
    assert compaction["tokens_before"] > 1500 > compaction["tokens_after"]
    assert compaction["summary"].startswith("Progress:")


# -- parts ---------------------------------------------------------------------------------------


@given(count=st.integers(1, 60), seed=st.integers(0, 2**32))
def test_task_lines_parse_back_to_their_tasks(count: int, seed: int) -> None:
    tasks = make_tasks(count, seed)
    assert [parse_task(task.describe()) for task in tasks] == tasks
    assert make_tasks(count, seed) == tasks


def test_tools_stay_in_the_workspace(tmp_path: Path) -> None:
    tasks = make_tasks(2, seed=0)
    tools = Toolbox(tmp_path, tasks)
    with pytest.raises(ToolError, match="outside the workspace"):
        tools.call("write_file", {"path": "../escape.txt", "content": "x"})
    with pytest.raises(ToolError, match="no such file"):
        tools.call("read_file", {"path": "missing.txt"})
    with pytest.raises(ToolError, match="unknown tool"):
        tools.call("delete_everything", {})
    with pytest.raises(ToolError, match="bad arguments"):
        tools.call("read_file", {"file": "a"})
    assert tools.call("run_check", {"task": "T001"})["passed"] is False
    tools.call("write_file", {"path": tasks[0].path, "content": tasks[0].expected()})
    assert tools.call("run_check", {"task": "T001"}) == {"task": "T001", "passed": True, "detail": "ok"}


def test_command_line(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    command = [sys.executable, "-m", "examples.taskrunner", "--tasks", "4", "--seed", "1", "--stream"]
    done = subprocess.run(
        [*command, "--workspace", str(tmp_path / "ws")], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("sim status=ok ")
    assert "tasks=4/4" in done.stdout


def test_command_line_exit_status_says_whether_the_run_finished(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert taskrunner_main(["--tasks", "4", "--budget", "1000"]) == 1
    assert "sim status=budget_exhausted" in capsys.readouterr().out
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sim-" + "key")  # --sim wins over a key in the environment
    assert taskrunner_main(["--tasks", "2", "--sim"]) == 0
    assert capsys.readouterr().out.startswith("sim status=ok")


def test_the_checked_in_checkpoint_fixtures_are_what_their_script_makes(tmp_path: Path) -> None:
    """`fixtures/make_examples.py` makes the example's fixtures again: same checkpoints, same state, the
    same workspace; so the checked-in ones are never stale."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_examples", REPO / "fixtures" / "make_examples.py")
    assert spec is not None
    assert spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.main(tmp_path / "fixtures", tmp_path / "source.trace.jsonl") == 0
    names = sorted(p.name for p in (tmp_path / "fixtures").iterdir())
    assert names == ["taskrunner-after-compaction", "taskrunner-before-stall", "taskrunner-early"]
    for name in names:
        made, kept = tmp_path / "fixtures" / name, REPO / "fixtures" / name
        for file in ("state.json", "workspace.index.json", "workspace.tar"):
            assert (made / file).read_bytes() == (kept / file).read_bytes(), f"{name}/{file}"
        made_manifest, kept_manifest = (json.loads((f / "manifest.json").read_text()) for f in (made, kept))
        for key in ("step", "checkpoint", "task", "seed", "workspace"):
            assert made_manifest[key] == kept_manifest[key], f"{name}: {key}"
        assert made_manifest["lineage"]["progress"] == kept_manifest["lineage"]["progress"]
        assert sorted(made_manifest["files"]) == sorted(kept_manifest["files"])
