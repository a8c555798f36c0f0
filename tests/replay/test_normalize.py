"""Declared normalization: volatile request content folded by named rules, every fold in the report.

The requests here have the shape the Claude Code CLI sends (read off captured requests of claude-cli
2.1.332: the billing header first in the system prompt, the environment block as a mid-conversation
system message, the working directory repeated in tool inputs and results); tests/clients/ replays
requests the real CLI sent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest

import pytest_agentevals as ae
from pytest_agentevals.errors import AgentEvalsError, ConfigError, ReplayDivergence
from pytest_agentevals.replay import Replayer
from pytest_agentevals.replay.profiles import CLAUDE_CODE, client_of
from pytest_agentevals.settings.normalize import rules
from pytest_agentevals.sim import Reply, SimServer

from ..conftest import make_fake_key

CLI = "claude-cli/2.1.332 (external, sdk-cli)"
SDK = "Anthropic/Python 1.0.0"
RECORDED_CWD = "/home/dev/project-a"
RECORDED_DAY = "2026-12-01"


def environment(cwd: str, day: str) -> str:
    return (
        "# Environment\nYou have been invoked in the following environment: \n"
        f" - Primary working directory: {cwd}\n - Is a git repository: false\n - Platform: linux\n"
        f" - Shell: bash\n - OS Version: Linux 6.1.0-{len(cwd)}\n\nToday's date is {day}."
    )


def memory(cwd: str) -> str:
    return f"/home/dev/.claude/projects/{cwd.replace('/', '-')}/memory/"


def claude_body(
    cwd: str, day: str, *, step: int = 0, prompt: str = "write hello.txt", tool: str = "Write"
) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": prompt}]},
        {"role": "system", "content": [{"type": "text", "text": environment(cwd, day)}]},
    ]
    if step:
        messages += [
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "toolu_01a", "name": tool, "input": {"file_path": "hello.txt"}}
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_01a",
                        "content": f"File created successfully at: {cwd}/hello.txt",
                    }
                ],
            },
        ]
    return {
        "model": "claude-opus-5-5",
        "messages": messages,
        "system": [
            {
                "type": "text",
                "text": "x-anthropic-billing-header: cc_version=2.1.332.8ff; cc_entrypoint=sdk-cli;",
            },
            {"type": "text", "text": "You are a Claude agent, built on Anthropic's Claude Agent SDK."},
            {"type": "text", "text": f"You have a persistent file-based memory at `{memory(cwd)}`. Use it."},
        ],
        "tools": [{"name": tool, "description": "Write a file.", "input_schema": {"type": "object"}}],
        "metadata": {"user_id": json.dumps({"device_id": "d" * 8, "session_id": f"s-{cwd}-{day}"})},
        "max_tokens": 1000,
    }


def post(body: dict[str, Any], agent: str, base: str = "http://127.0.0.1:9") -> httpx.Response:
    headers = {
        "user-agent": agent,
        "x-api-key": make_fake_key("normalize"),
        "anthropic-beta": "claude-code-20250219,per-turn-control-2026-07-01",
        "anthropic-version": "2023-06-01",
    }
    with httpx.Client() as client:
        return client.post(f"{base}/v1/messages?beta=true", json=body, headers=headers)


def record(path: Path, bodies: list[dict[str, Any]], agent: str = CLI) -> Path:
    replies = [Reply.tool_use("Write", {"file_path": "hello.txt"}), Reply.text("done")][: len(bodies)]
    with SimServer(replies, seed=3) as sim, ae.Recorder(path, task="write hello.txt", agent="cli"):
        for body in bodies:
            assert post(body, agent, sim.url).status_code == 200
    return path


def two_steps(cwd: str, day: str, **changes: Any) -> list[dict[str, Any]]:
    return [claude_body(cwd, day, **changes), claude_body(cwd, day, step=1, **changes)]


def test_a_claude_code_run_replays_in_another_folder_on_another_day(tmp_path: Path) -> None:
    trace = record(tmp_path / "cli.trace.jsonl", two_steps(RECORDED_CWD, RECORDED_DAY))
    with Replayer(trace) as replay:
        for body in two_steps("/tmp/ci/elsewhere", "2027-01-15"):
            assert post(body, CLI).status_code == 200
    report = replay.report
    assert replay.profile is CLAUDE_CODE
    assert report.divergences == []
    assert report.failure is None
    text = report.text()
    assert "normalized by the claude-code profile (claude-code 2.1.332)" in text
    folds = report.folds
    assert folds is not None
    cwd, date, kernel = folds.by_rule["cwd"], folds.by_rule["date"], folds.by_rule["os-version"]
    # The working directory: named in the environment block of both requests, and repeated in the
    # second one's tool result, where it is folded too (everywhere).
    assert (cwd.texts, cwd.requests, cwd.differed) == (3, 2, 2)
    assert cwd.places == ["/messages/1/content/0/text", "/messages/3/content/0/content"]
    assert (date.texts, date.requests, date.differed) == (2, 2, 2)
    assert kernel.differed == 2  # the kernel's version is another machine's
    assert folds.by_rule["billing-header"].differed == 0  # folded, and listed, though it did not differ
    # Every rule of the profile is listed, each with its count, places and why; and the built-in drop
    # of metadata (the session ids) too.
    lines = report.fold_lines()
    for rule in CLAUDE_CODE.rules:
        assert any(line.startswith(f"  {rule.name} (claude-code profile): ") for line in lines), rule.name
    assert "  cwd (claude-code profile): 3 text(s) in 2 request(s); 2 differed from the recording; " in text
    assert "metadata left out of the comparison (built in, every client): 2 request(s), 2 differed" in text
    assert report.summary().endswith(
        "no divergence; 11 volatile text(s) folded by the claude-code profile (claude-code 2.1.332)"
    )
    memory_dir = folds.by_rule["memory-dir"]
    assert (memory_dir.texts, memory_dir.differed, memory_dir.places) == (2, 2, ["/system/2/text"])


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"tool": "Edit"}, "tool 'Edit': added"),
        ({"prompt": "write other.txt"}, "messages[0].content[0].text"),
    ],
)
def test_what_the_profile_does_not_declare_still_diverges(
    tmp_path: Path, changes: dict[str, Any], expected: str
) -> None:
    trace = record(tmp_path / "cli.trace.jsonl", two_steps(RECORDED_CWD, RECORDED_DAY))
    with pytest.raises(AgentEvalsError) as failed, Replayer(trace):
        post(claude_body("/tmp/ci/elsewhere", "2027-01-15", **changes), CLI)
    assert expected in str(failed.value)
    # The folded values are shown as their placeholders, not as a difference.
    assert "Primary working directory" not in str(failed.value)


def test_sdk_traffic_without_a_rule_stays_byte_strict(tmp_path: Path) -> None:
    body = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 100,
        "messages": [{"role": "user", "content": "Today's date is 2026-12-01."}],
    }
    trace = record(tmp_path / "sdk.trace.jsonl", [body], agent=SDK)
    later = json.loads(json.dumps(body).replace("2026-12-01", "2026-12-02"))
    with (
        pytest.raises(ReplayDivergence, match=r"messages\[0\]\.content") as failed,
        Replayer(trace) as replay,
    ):
        post(later, SDK)
    assert replay.profile is None
    assert replay.report.folds is None
    assert "folded" not in replay.report.text()
    assert "2026-12-02" in str(failed.value)


def test_user_rules_fold_sdk_traffic_and_are_listed(tmp_path: Path) -> None:
    def body(build: str) -> dict[str, Any]:
        return {
            "model": "claude-sonnet-4-6",
            "max_tokens": 100,
            "system": f"You run in build {build}.",
            "messages": [{"role": "user", "content": "go"}],
        }

    trace = record(tmp_path / "sdk.trace.jsonl", [body("1a2b3c4")], agent=SDK)
    declared = rules(
        "[tool.agentevals] replay_normalize",
        [{"name": "build", "where": "/system", "pattern": "build ([0-9a-f]{7})"}],
    )
    with Replayer(trace, normalize=declared) as replay:
        assert post(body("9f8e7d6"), SDK).status_code == 200
    text = replay.report.text()
    assert "normalized by [tool.agentevals] replay_normalize" in text
    line = "  build ([tool.agentevals] replay_normalize): 1 text(s) in 1 request(s); 1 differed from"
    assert f"{line} the recording; at /system" in text


def test_a_claude_code_version_no_profile_covers_is_strict_and_says_so(tmp_path: Path) -> None:
    future = "claude-cli/3.0.0 (external, sdk-cli)"
    trace = record(tmp_path / "cli.trace.jsonl", two_steps(RECORDED_CWD, RECORDED_DAY)[:1], agent=future)
    with pytest.raises(AgentEvalsError), Replayer(trace) as replay:
        post(claude_body("/tmp/ci/elsewhere", RECORDED_DAY), future)
    assert replay.profile is None
    assert "recorded by claude-code 3.0.0" in replay.report.text()
    assert "compared byte-strict" in replay.report.text()


def test_profiles_off_compares_a_claude_code_run_byte_strict(tmp_path: Path) -> None:
    trace = record(tmp_path / "cli.trace.jsonl", two_steps(RECORDED_CWD, RECORDED_DAY)[:1])
    with (
        pytest.raises(AgentEvalsError, match="system prompt"),
        Replayer(trace, profile="off") as replay,
    ):
        post(claude_body("/tmp/ci/elsewhere", RECORDED_DAY), CLI)
    assert "profiles are off" in replay.report.text()


def test_the_trace_keeps_the_user_agent_that_names_the_client(tmp_path: Path) -> None:
    trace = record(tmp_path / "cli.trace.jsonl", two_steps(RECORDED_CWD, RECORDED_DAY)[:1])
    event = next(json.loads(line) for line in trace.read_text().splitlines() if '"model_call"' in line)
    assert event["request"]["headers"]["user-agent"] == CLI
    client = client_of(event["request"]["headers"], None)
    assert client is not None
    assert client.version == (2, 1, 332)
    # A recording without the header still names Claude Code by its billing header.
    by_body = client_of({}, claude_body(RECORDED_CWD, RECORDED_DAY))
    assert by_body is not None
    assert by_body.version_text == "2.1.332"
    assert client_of({"user-agent": SDK}, {"system": "x"}) is None


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"name": "x", "where": "/system", "pattern": "("}, r"\(x\)\.pattern.*not a regular expression"),
        ({"name": "x", "where": "/system", "pattern": "[0-9]*"}, "matches the empty text"),
        ({"name": "x", "where": "/system", "pattern": "a", "when": 1}, r"\[0\]\.when.*unknown key"),
        ({"name": "", "where": "/system", "pattern": "a"}, r"\.name.*not a rule name"),
        ({"name": "x", "where": "system/text", "pattern": "a"}, "neither a JSON pointer nor a field name"),
        ("no-at-sign", "write NAME@WHERE=PATTERN"),
        (
            [{"name": "x", "where": "", "pattern": "a"}, {"name": "x", "where": "", "pattern": "b"}],
            "two rules are named 'x'",
        ),
    ],
)
def test_a_bad_rule_is_one_error_naming_it(raw: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as failed:
        rules("[tool.agentevals] replay_normalize", raw)
    assert "[tool.agentevals] replay_normalize" in str(failed.value)


def test_the_setting_takes_tables_and_the_command_line_form(tmp_path: Path) -> None:
    from pytest_agentevals.settings import Settings

    table = [
        {
            "name": "build",
            "where": ["/system", "/messages/*/content"],
            "pattern": "build [0-9a-f]+",
            "why": "CI",
        }
    ]
    settings = Settings.resolve(tmp_path, pyproject={"replay_normalize": table, "replay_profile": "off"})
    (rule,) = settings.replay_normalize
    assert (rule.name, rule.where, rule.why, settings.replay_profile) == (
        "build",
        ("/system", "/messages/*/content"),
        "CI",
        "off",
    )
    cli = Settings.resolve(tmp_path, cli={"replay_normalize": "run@/system,user_id=run-[0-9]+"})
    assert cli.replay_normalize[0].where == ("/system", "user_id")
    with pytest.raises(ConfigError, match="--agentevals-replay-profile"):
        Settings.resolve(tmp_path, cli={"replay_profile": "loose"})


def test_stock_rules_fold_a_tool_result_s_pytest_output_and_kernel_and_are_listed(tmp_path: Path) -> None:
    from ..settings.test_stock import PYTEST_RUN_1, PYTEST_RUN_2, UNAME_HERE, UNAME_UBUNTU

    def body(pytest_output: str, uname: str) -> dict[str, Any]:
        result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": pytest_output}
        return {
            "model": "claude-sonnet-4-6",
            "max_tokens": 100,
            "system": f"You fix bugs. The machine: {uname}",
            "messages": [
                {"role": "user", "content": "run the tests"},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "toolu_1", "name": "sh", "input": {}}],
                },
                {"role": "user", "content": [result]},
            ],
        }

    trace = record(tmp_path / "sdk.trace.jsonl", [body(PYTEST_RUN_1, UNAME_HERE)], agent=SDK)
    later = body(PYTEST_RUN_2, UNAME_UBUNTU.replace(" x86_64 x86_64", ""))
    with pytest.raises(AgentEvalsError), Replayer(trace):  # strict without the rules
        post(later, SDK)
    stock = rules("[tool.agentevals] replay_normalize", ["pytest-timing", "uname"])
    with Replayer(trace, normalize=stock) as replay:
        assert post(later, SDK).status_code == 200
    lines = replay.report.fold_lines()
    assert lines[0] == "normalized by [tool.agentevals] replay_normalize: 5 text(s) folded by 5 rule(s):"
    assert lines[1].startswith(
        "  pytest-timing (stock rule pytest-timing v1): 1 text(s) in 1 request(s); 1 differed from the "
        "recording; at /messages/2/content/0/content"
    )
    assert lines[4].startswith("  uname (stock rule uname v1): 1 text(s) in 1 request(s); 1 differed")
    assert lines[5].startswith("  uname.release (stock rule uname v1): folded nothing")
