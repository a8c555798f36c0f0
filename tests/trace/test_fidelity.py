"""Fidelity tiers: stated in an imported trace's run_start, read back (absent: exact), and each use
of a trace refusing what its tier cannot feed in one sentence naming the tier and what is missing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_agentevals.cli import main
from pytest_agentevals.errors import AgentEvalsError
from pytest_agentevals.trace.fidelity import CONTENT, EXACT, OUTLINE, Fidelity, fidelity_of, require


def imported_trace(path: Path, tier: str, missing: list[str]) -> Path:
    """A two-step imported trace of `tier`: a tool use, then an answer."""
    request: dict[str, Any] = {
        "method": "POST",
        "url": "https://api.anthropic.com/v1/messages",
        "body": {"model": "m", "messages": [{"role": "user", "content": "list the files"}]},
    }
    answer = {
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [{"type": "tool_use", "id": "t1", "name": "ls", "input": {"path": "."}}],
        "stop_reason": "tool_use",
    }
    events = [
        {
            "type": "run_start",
            "v": 1,
            "run_id": "r",
            "agent": "a",
            "started_at": "2026-01-01T00:00:00+00:00",
            "contract": {},
            "fidelity": {"tier": tier, "source": "otlp", "missing": missing},
        },
        {
            "type": "model_call",
            "seq": 1,
            "t": 0.0,
            "step": 1,
            "provider": "anthropic",
            "request": request,
            "response": {"status": 200, "json": answer} if tier != OUTLINE else {"status": 200},
        },
        {"type": "run_end", "seq": 2, "t": 0.0, "status": "ok", "totals": {}},
    ]
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


def test_a_run_start_without_fidelity_is_exact_and_a_malformed_one_the_lowest() -> None:
    assert fidelity_of({"type": "run_start"}) == Fidelity()
    assert fidelity_of({"fidelity": "high"}).tier == OUTLINE
    assert fidelity_of({"fidelity": {"tier": "perfect"}}).tier == OUTLINE
    stated = fidelity_of({"fidelity": {"tier": "content", "source": "otlp", "missing": ["system"]}})
    assert (stated.tier, stated.source, stated.missing) == (CONTENT, "otlp", ("system",))
    assert Fidelity().describe() == f"`{EXACT}` (recorded by pytest-agentevals)"


def test_require_names_the_tier_and_what_is_missing() -> None:
    start = {"fidelity": {"tier": "outline", "source": "otlp", "missing": ["message content"]}}
    with pytest.raises(AgentEvalsError) as raised:
        require(start, "promote", "x.trace.jsonl")
    message = str(raised.value)
    assert message.startswith("x.trace.jsonl: cannot promote a trace of fidelity `outline`")
    assert "(imported from otlp; missing: message content)" in message
    assert "needs fidelity `exact` or `content`" in message
    assert message.count(". ") == 0  # one sentence
    assert require({"fidelity": {"tier": "content"}}, "promote", "x").tier == CONTENT


@pytest.mark.parametrize(
    ("argv", "tier", "words"),
    [
        (["promote", "{trace}", "--name", "x", "--no-test"], OUTLINE, "cannot promote"),
        (
            ["step", "extract", "{trace}", "--kind", "tool_choice", "-o", "{out}/g.yaml"],
            OUTLINE,
            "cannot step extract",
        ),
        (["resume", "extract", "{trace}", "--at", "1", "--name", "x"], CONTENT, "cannot resume extract"),
    ],
)
def test_each_command_refuses_what_the_tier_cannot_feed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], tier: str, words: str
) -> None:
    trace = imported_trace(tmp_path / "in.trace.jsonl", tier, ["message content"])
    (tmp_path / "pyproject.toml").write_text("[tool.agentevals]\n")
    words_in = [w.format(trace=trace, out=tmp_path) for w in argv]
    assert main([*words_in]) == 2
    err = capsys.readouterr().err
    assert f"{words} a trace of fidelity `{tier}` (imported from otlp; missing: message content)" in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "cassettes").exists()
    assert not (tmp_path / "g.yaml").exists()


def test_a_content_trace_is_taken_where_its_tier_can_feed(tmp_path: Path) -> None:
    from pytest_agentevals.step.extract import extract

    trace = imported_trace(tmp_path / "in.trace.jsonl", CONTENT, ["system", "tools"])
    (point,) = extract(trace, kinds=["tool_choice"])
    assert point.decision.tool_calls[0].name == "ls"
