"""The atif reader on a trajectory written per the ATIF RFC (Harbor's docs/rfcs/0001-trajectory-format.md,
v1.4): steps become model calls and tool calls, metrics become usage and cost; a malformed file is
named by file and key."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_agentevals.imports import SourceFormatError, import_file
from pytest_agentevals.step.extract import extract

from ..schema_support import read_valid


def trajectory(**changes: Any) -> dict[str, Any]:
    """A terminal task: a system prompt, the user's ask, a turn with two tool calls observed, an answer."""
    data: dict[str, Any] = {
        "schema_version": "ATIF-v1.4",
        "session_id": "run-7f3a",
        "agent": {"name": "terminus", "version": "2.0.1", "model_name": "claude-x"},
        "steps": [
            {"step_id": 1, "source": "system", "message": "You operate a Linux terminal."},
            {
                "step_id": 2,
                "source": "user",
                "message": "How big is /var/log?",
                "timestamp": "2026-01-02T03:04:05Z",
            },
            {
                "step_id": 3,
                "source": "agent",
                "message": "Checking.",
                "reasoning_content": "du and df answer this",
                "tool_calls": [
                    {"tool_call_id": "c1", "function_name": "bash", "arguments": {"cmd": "du -sh /var/log"}},
                    {"tool_call_id": "c2", "function_name": "bash", "arguments": {"cmd": "df -h /var"}},
                ],
                "observation": {
                    "results": [
                        {"source_call_id": "c1", "content": "412M\t/var/log"},
                        {"source_call_id": "c2", "content": "/dev/sda1 40G 31G"},
                    ]
                },
                "metrics": {
                    "prompt_tokens": 900,
                    "cached_tokens": 300,
                    "completion_tokens": 40,
                    "cost_usd": 0.002,
                    "extra": {"cache_creation_input_tokens": 50},
                },
            },
            {
                "step_id": 4,
                "source": "agent",
                "model_name": "claude-y",
                "message": "/var/log holds 412M.",
                "metrics": {"prompt_tokens": 1000, "completion_tokens": 9},
            },
        ],
        "final_metrics": {"total_prompt_tokens": 1900, "total_completion_tokens": 49, "total_steps": 4},
    }
    data.update(changes)
    return data


def write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data, indent=2))
    return path


def test_a_trajectory_becomes_model_and_tool_calls(tmp_path: Path) -> None:
    done = import_file("atif", write(tmp_path / "t.json", trajectory()), tmp_path / "t.trace.jsonl")
    assert (done.model_calls, done.fidelity.tier) == (2, "content")
    assert "tools" in done.fidelity.missing
    start, first, du, df, second, end = read_valid(tmp_path / "t.trace.jsonl")
    assert (start["run_id"], start["agent"], start["task"]) == (
        "run-7f3a",
        "terminus 2.0.1",
        {"prompt": "How big is /var/log?"},
    )
    assert first["request"]["body"]["system"] == [{"type": "text", "text": "You operate a Linux terminal."}]
    assert first["request"]["body"]["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "How big is /var/log?"}]}
    ]
    assert [b["type"] for b in first["response"]["json"]["content"]] == ["text", "tool_use", "tool_use"]
    assert first["usage"] == {
        "input_tokens": 600,
        "cache_read_input_tokens": 300,
        "output_tokens": 40,
        "cache_creation_input_tokens": 50,
    }
    assert first["cost_usd"] == 0.002
    assert (du["name"], du["input"], du["output"]) == ("bash", {"cmd": "du -sh /var/log"}, "412M\t/var/log")
    assert df["output"] == "/dev/sda1 40G 31G"
    assert second["model"] == "claude-y"
    assert [m["role"] for m in second["request"]["body"]["messages"]] == ["user", "assistant", "user"]
    assert [b["tool_use_id"] for b in second["request"]["body"]["messages"][2]["content"]] == ["c1", "c2"]
    assert end["totals"]["tokens"]["output_tokens"] == 49
    (point,) = extract(tmp_path / "t.trace.jsonl", kinds=["trajectory"])  # two tool calls at once
    assert [call.name for call in point.decision.tool_calls] == ["bash", "bash"]


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        ({"schema_version": "v2"}, "schema_version is 'v2', not an ATIF v1 version"),
        ({"session_id": 7}, "session_id must be a string"),
        ({"steps": {}}, "steps must be an array of steps"),
        (
            {"steps": [{"step_id": 2, "source": "user", "message": "x"}]},
            "steps[0].step_id is 2; steps are numbered",
        ),
        (
            {"steps": [{"step_id": 1, "source": "bot", "message": "x"}]},
            "steps[0].source is 'bot', not one of system, user, agent",
        ),
        (
            {
                "steps": [
                    {
                        "step_id": 1,
                        "source": "agent",
                        "message": "",
                        "tool_calls": [{"tool_call_id": "a", "function_name": "f", "arguments": []}],
                    }
                ]
            },
            "steps[0].tool_calls[0].arguments must be an object",
        ),
        (
            {"steps": [{"step_id": 1, "source": "agent", "message": "", "metrics": {"prompt_tokens": -1}}]},
            "steps[0].metrics.prompt_tokens must be a whole number of tokens",
        ),
    ],
)
def test_a_malformed_trajectory_is_named_by_file_and_key(
    tmp_path: Path, edit: dict[str, Any], problem: str
) -> None:
    path = write(tmp_path / "t.json", trajectory(**edit))
    with pytest.raises(SourceFormatError) as raised:
        import_file("atif", path, tmp_path / "t.trace.jsonl")
    assert str(raised.value).startswith(f"{path}: {problem}")
    assert not (tmp_path / "t.trace.jsonl").exists()
