"""Real clients through the model endpoint, end to end, as a user runs them: `agentevals record --
claude -p ...` and `-- node agent.mjs ...` against the simulated model as the upstream, `agentevals
replay TRACE -- ...` offline (the upstream sees nothing), and `--budget max_calls=N` stopping each
with exit 3 and no retry storm. The Claude Code run replays in another folder, "the next day" (its
recording's date moved back a day), with every fold in the report.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from pytest_agentevals import Recorder
from pytest_agentevals.endpoint.server import ModelEndpoint
from pytest_agentevals.guards import guards_for
from pytest_agentevals.settings.budgets import Budget
from pytest_agentevals.sim import SimServer
from pytest_agentevals.trace.reader import read_trace

from ..clients_support import WRITTEN, Ran, agentevals, claude, claude_command, client_env, node_agent, run

PROMPT = "write hello.txt"


def model_calls(trace: Path) -> list[dict[str, Any]]:
    return [event for event in read_trace(trace) if event["type"] == "model_call"]


def fresh(root: Path, name: str) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    return folder


@pytest.fixture(scope="module")
def claude_recording(model: SimServer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One `claude -p` run recorded through the endpoint, for the tests of this module to replay."""
    claude()
    root = tmp_path_factory.mktemp("claude")
    work = fresh(root, "recorded-here")
    trace = root / "claude.trace.jsonl"
    before = len(model.exchanges)
    env = client_env(model.url, root / "home")
    ran = agentevals("record", "-o", trace, "--", *claude_command(PROMPT), cwd=work, env=env)
    return {"ran": ran, "trace": trace, "work": work, "upstream": len(model.exchanges) - before}


def test_a_claude_code_run_is_recorded_through_the_endpoint(claude_recording: dict[str, Any]) -> None:
    ran: Ran = claude_recording["ran"]
    assert ran.returncode == 0, ran.explain()
    assert (claude_recording["work"] / "hello.txt").read_text() == WRITTEN
    calls = model_calls(claude_recording["trace"])
    assert len(calls) == claude_recording["upstream"] == 2
    _, version = claude()
    assert calls[0]["request"]["headers"]["user-agent"].startswith(f"claude-cli/{version} ")
    assert calls[0]["request"]["url"].endswith("/v1/messages?beta=true")
    assert all(call["stream"] for call in calls)
    assert read_trace(claude_recording["trace"])[-1]["status"] == "ok"
    text = claude_recording["trace"].read_text()
    assert "fakeclient" not in text  # the fake key never reached the trace


def test_a_claude_code_run_replays_offline_in_another_folder_the_next_day(
    claude_recording: dict[str, Any], model: SimServer, tmp_path: Path
) -> None:
    assert claude_recording["ran"].returncode == 0, claude_recording["ran"].explain()
    recorded = claude_recording["trace"].read_text()
    (day,) = set(re.findall(r"Today's date is (\d{4}-\d{2}-\d{2})", recorded))
    yesterday = tmp_path / "yesterday.trace.jsonl"  # as if recorded the day before, elsewhere
    yesterday.write_text(recorded.replace(f"Today's date is {day}", "Today's date is 2020-02-29"))
    work = fresh(tmp_path, "another-folder")
    before = len(model.exchanges)
    env = client_env(model.url, tmp_path / "home")
    ran = agentevals("replay", yesterday, "--", *claude_command(PROMPT), cwd=work, env=env)
    assert ran.returncode == 0, ran.explain()
    assert len(model.exchanges) == before  # offline: the upstream saw nothing
    assert (work / "hello.txt").read_text() == WRITTEN  # the CLI ran its tool here, from the recording
    report = ran.stderr
    assert "served 2 of 2 recorded HTTP exchanges; no divergence" in report
    assert "normalized by the claude-code profile (claude-code " in report
    folds = {
        line.split(" (claude-code profile): ")[0].strip(): line
        for line in report.splitlines()
        if "(claude-code profile): " in line
    }
    assert set(folds) == {"billing-header", "memory-dir", "cwd", "date", "os-version"}
    assert "2 differed from the recording" in folds["date"]
    assert "differed from the recording" in folds["cwd"]
    assert "none differed" in folds["os-version"]  # the same machine
    assert "metadata left out of the comparison (built in, every client): 2 request(s), 2 differed" in report


def test_a_changed_prompt_still_diverges(
    claude_recording: dict[str, Any], model: SimServer, tmp_path: Path
) -> None:
    work = fresh(tmp_path, "work")
    env = client_env(model.url, tmp_path / "home")
    ran = agentevals(
        "replay", claude_recording["trace"], "--", *claude_command("write other.txt"), cwd=work, env=env
    )
    assert ran.returncode != 0
    assert "replay diverged at model call 1" in ran.stderr
    assert "write other.txt" in ran.stderr
    assert not (work / "other.txt").exists()


def test_a_budget_stops_claude_code_with_exit_3_and_no_retry_storm(model: SimServer, tmp_path: Path) -> None:
    work = fresh(tmp_path, "work")
    trace = tmp_path / "stopped.trace.jsonl"
    before = len(model.exchanges)
    env = client_env(model.url, tmp_path / "home")
    ran = agentevals(
        "record", "-o", trace, "--budget", "max_calls=1", "--", *claude_command(PROMPT), cwd=work, env=env
    )
    assert ran.returncode == 3, ran.explain()
    assert len(model.exchanges) - before == 1  # the one call the budget allowed
    events = read_trace(trace)
    guards = [e for e in events if e["type"] == "guard"]
    assert [(g["action"], g["status"]) for g in guards] == [("stop", "budget_exhausted")]
    assert events[-1]["status"] == "budget_exhausted"


def test_a_stopped_claude_code_run_is_refused_once(model: SimServer, tmp_path: Path) -> None:
    # The endpoint refuses with a 500 carrying `x-should-retry: false`, which the CLI honours (no
    # backoff loop); a 400 it would re-send with fewer betas (its beta fallback), a 403 it reports as a
    # failed login.
    work = fresh(tmp_path, "work")
    before = len(model.exchanges)
    guards = guards_for(Budget(max_calls=1))
    with (
        Recorder(tmp_path / "t.trace.jsonl", http=False, guards=guards),
        ModelEndpoint(upstream=model.url, environ=client_env(model.url, tmp_path / "home")) as endpoint,
    ):
        ran = run(claude_command(PROMPT), work, endpoint.env)
    assert ran.returncode != 0
    assert "the budget guard stopped the run" in ran.stdout
    assert endpoint.forwarded == len(model.exchanges) - before == 1
    assert endpoint.requests - endpoint.forwarded == 1, endpoint.requests  # refused once, not re-sent


@pytest.fixture(scope="module")
def node_recording(model: SimServer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    command = node_agent()
    root = tmp_path_factory.mktemp("node")
    work = fresh(root, "work")
    (work / "notes.txt").write_text("ship on friday\n")
    trace = root / "node.trace.jsonl"
    env = client_env(model.url, root / "home")
    ran = agentevals("record", "-o", trace, "--", *command, "summarize notes.txt", cwd=work, env=env)
    return {"ran": ran, "trace": trace, "command": command, "work": work}


def test_a_node_agent_is_recorded_and_replayed_offline(
    node_recording: dict[str, Any], model: SimServer, tmp_path: Path
) -> None:
    ran: Ran = node_recording["ran"]
    assert ran.returncode == 0, ran.explain()
    calls = model_calls(node_recording["trace"])
    assert len(calls) == 4
    assert calls[0]["request"]["headers"]["user-agent"].startswith("Anthropic/JS ")
    work = fresh(tmp_path, "work")
    (work / "notes.txt").write_text("ship on friday\n")
    before = len(model.exchanges)
    replayed = agentevals(
        "replay",
        node_recording["trace"],
        "--",
        *node_recording["command"],
        "summarize notes.txt",
        cwd=work,
        env=client_env(model.url, tmp_path / "home"),
    )
    assert replayed.returncode == 0, replayed.explain()
    assert len(model.exchanges) == before
    assert "served 4 of 4 recorded HTTP exchanges; no divergence" in replayed.stderr
    assert "normalized" not in replayed.stderr  # SDK traffic: byte-strict, nothing folded
    assert (work / "summary.txt").read_text() == "SHIP ON FRIDAY\n"


def test_a_node_agent_that_reads_other_notes_diverges(
    node_recording: dict[str, Any], model: SimServer, tmp_path: Path
) -> None:
    work = fresh(tmp_path, "work")
    (work / "notes.txt").write_text("ship on monday\n")  # the tool result differs: strict says so
    replayed = agentevals(
        "replay",
        node_recording["trace"],
        "--",
        *node_recording["command"],
        "summarize notes.txt",
        cwd=work,
        env=client_env(model.url, tmp_path / "home"),
    )
    assert replayed.returncode != 0
    assert "replay diverged at model call 3" in replayed.stderr
    assert "monday" in replayed.stderr


def test_a_budget_stops_the_node_agent_with_exit_3(model: SimServer, tmp_path: Path) -> None:
    command = node_agent()
    work = fresh(tmp_path, "work")
    (work / "notes.txt").write_text("ship on friday\n")
    trace = tmp_path / "stopped.trace.jsonl"
    before = len(model.exchanges)
    ran = agentevals(
        "record",
        "-o",
        trace,
        "--budget",
        "max_calls=2",
        "--",
        *command,
        "summarize notes.txt",
        cwd=work,
        env=client_env(model.url, tmp_path / "home"),
    )
    assert ran.returncode == 3, ran.explain()
    assert len(model.exchanges) - before == 2
    assert read_trace(trace)[-1]["status"] == "budget_exhausted"
    assert json.loads(json.dumps(read_trace(trace)[-1]["totals"]))["model_calls"] == 2
