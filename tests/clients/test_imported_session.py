"""A real Claude Code session, imported: `claude -p` runs against the simulated model and keeps its
session file as it always does; `agentevals import claude-code` makes it a `content` trace, and
`agentevals promote` and `agentevals step extract` make it a replay test (the CLI run again through
the endpoint, answered from the import, matched on messages, system and tools) and a step case; both
pass in a real pytest run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_agentevals import read_trace
from pytest_agentevals.sim import SimServer

from ..clients_support import WRITTEN, agentevals, claude_command, client_env, run
from ..conftest import make_fake_key

pytest_plugins = ["pytester"]

CONFTEST = """
import subprocess, tempfile
from pathlib import Path

import anthropic
import pytest
from pytest_agentevals import model_endpoint

COMMAND = {command!r}


def pytest_agentevals_run_agent(run):
    # The promoted incident: the CLI again, on the recorded prompt, in a folder of its own.
    work = Path(tempfile.mkdtemp())
    with model_endpoint() as endpoint:
        done = subprocess.run([COMMAND[0], "-p", run.task["prompt"], *COMMAND[3:]], cwd=work,
                              env=endpoint.env, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (work / "hello.txt").read_text() == {written!r}
    return done


@pytest.fixture
def agentevals_decide():
    client = anthropic.Anthropic(base_url="http://127.0.0.1:9", api_key={key!r}, max_retries=0)

    def decide(case):
        request = {{k: v for k, v in case.request.items() if k != "stream"}}
        with client.messages.stream(**request) as stream:
            return stream.get_final_message()

    return decide
"""


def test_a_real_claude_code_session_becomes_a_passing_replay_test_and_step_case(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, model: SimServer, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    env = client_env(model.url, home)
    work = tmp_path / "work"
    work.mkdir()
    ran = run(claude_command("write hello.txt"), work, env)
    assert ran.returncode == 0, ran.explain()
    (session,) = (home / ".claude" / "projects").glob("*/*.jsonl")  # where the CLI keeps it

    incident = tmp_path / "incident.trace.jsonl"
    imported = agentevals("import", "claude-code", session, "-o", incident, cwd=tmp_path, env=env)
    assert imported.returncode == 0, imported.explain()
    assert "(5 events, 2 model calls)" in imported.stdout
    assert (
        "fidelity `content` (imported from claude-code; missing: the exact request bytes" in imported.stdout
    )
    events = read_trace(incident)
    assert events[0]["fidelity"]["tier"] == "content"
    assert [e["type"] for e in events] == ["run_start", "model_call", "tool_call", "model_call", "run_end"]
    assert events[2]["name"] == "Write"
    assert events[2]["input"] == {"file_path": "hello.txt", "content": WRITTEN}
    assert events[-1]["totals"]["model_calls"] == 2
    assert make_fake_key("client") not in incident.read_text()

    pytester.makefile(".toml", pyproject="[tool.agentevals]\n")
    promoted = agentevals("promote", incident, "--name", "claude-incident", cwd=pytester.path, env=env)
    assert promoted.returncode == 0, promoted.explain()
    extracted = agentevals(
        "step", "extract", incident, "--kind", "tool_choice", "-o", "goldens/claude-incident.yaml",
        cwd=pytester.path, env=env,
    )  # fmt: skip
    assert extracted.returncode == 0, extracted.explain()
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    pytester.makeconftest(
        CONFTEST.format(command=claude_command("unused"), written=WRITTEN, key=make_fake_key("decide"))
    )
    before = len(model.exchanges)
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "--agentevals-history=off", "-rA", "tests", "goldens"
    )
    assert len(model.exchanges) == before  # both answered from the import, offline
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "*served 2 of 2 recorded HTTP exchanges; no divergence*",
            "*a trace of fidelity `content` (imported from claude-code; *): requests were matched on "
            "their messages, system, tools, not on their bytes",
        ]
    )
    case = json.dumps(read_trace(pytester.path / "cassettes" / "claude-incident.trace.jsonl")[0])
    assert '"tier": "content"' in case
