"""The real clients against the simulated model server directly: what they send is what sim answers.

These are the ground the endpoint tests stand on: a `claude -p` run that completes against sim, its
Write tool run locally, and the Node agent's loop of tool calls.
"""

from __future__ import annotations

from pathlib import Path

from pytest_agentevals.sim import SimServer

from ..clients_support import WRITTEN, claude, claude_command, client_env, node_agent, run


def test_claude_p_runs_a_tool_against_sim(model: SimServer, tmp_path: Path) -> None:
    _, version = claude()
    work = tmp_path / "work"
    work.mkdir()
    before = len(model.exchanges)
    ran = run(claude_command("write hello.txt"), work, client_env(model.url, tmp_path / "home"))
    assert ran.returncode == 0, ran.explain()
    assert (work / "hello.txt").read_text() == WRITTEN  # the CLI's own Write tool ran, in its cwd
    assert "Done: 1 tool result(s) seen." in ran.stdout
    exchanges = model.exchanges[before:]
    assert [e.outcome for e in exchanges] == ["reply", "reply"], [e.error for e in exchanges]
    first = exchanges[0].request
    assert first.headers["user-agent"].startswith(f"claude-cli/{version} ")
    assert first.stream
    # The environment block travels as a mid-conversation system message, under its beta.
    assert any(m.get("role") == "system" for m in first.messages)
    assert "per-turn-control-" in first.headers["anthropic-beta"]


def test_node_agent_walks_its_tools_against_sim(model: SimServer, tmp_path: Path) -> None:
    command = node_agent()
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("ship on friday\n")
    ran = run([*command, "summarize notes.txt"], work, client_env(model.url, tmp_path / "home"))
    assert ran.returncode == 0, ran.explain()
    assert (work / "summary.txt").read_text() == "SHIP ON FRIDAY\n"
    assert "Summary written to summary.txt." in ran.stdout
