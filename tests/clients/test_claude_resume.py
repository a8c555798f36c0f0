"""`claude -p` under the resume and marathon layers: recorded through the endpoint with a checkpoint
at each model request, a fixture extracted from the one after its Write ran, and
`@pytest.mark.resume` tests that boot the CLI from it — the checkpoint's conversation written as a
session of the CLI's own (`write_claude_session`, `claude --resume ID`) in a config folder of the
test's — and run its next leg live against sim, in another folder, one leg stopped by a budget; and
two seeds of a marathon of `claude -p`, one stopped by a budget."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_agentevals.sim import SimServer
from pytest_agentevals.trace.reader import read_trace

from ..clients_support import agentevals, claude_command, client_env

pytest_plugins = ["pytester"]

CONFTEST = """
import subprocess
from pytest_agentevals import model_endpoint
from pytest_agentevals.endpoint import write_claude_session

import pytest_agentevals as ae

COMMAND = {command!r}
CLAUDE = COMMAND[0]
FLAGS = COMMAND[3:]  # --allowedTools Write and the profile's flags, after `-p PROMPT`


def pytest_agentevals_resume_agent(checkpoint):
    if checkpoint.state.get("format") != "agentevals-endpoint/1":
        return None
    config = checkpoint.workspace.parent / "claude-config"
    session = write_claude_session(checkpoint.state, checkpoint.workspace, config)
    with model_endpoint() as endpoint:
        env = {{**endpoint.env, "CLAUDE_CONFIG_DIR": str(config)}}
        return subprocess.run(COMMAND + ["--resume", session], cwd=checkpoint.workspace, env=env,
                              capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)


def pytest_agentevals_run_agent(run):
    if run.layer != "marathon":
        return None
    name = f"seed-{{run.seed}}.txt"  # the seed chooses the file the CLI is asked to write
    with model_endpoint() as endpoint:
        done = subprocess.run([CLAUDE, "-p", f"write {{name}}", *FLAGS], cwd=run.marathon.workspace,
                              env=endpoint.env, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=120)
    ok = done.returncode == 0 and (run.marathon.workspace / name).is_file()
    ae.verification("file written", ok, progress=1.0 if ok else 0.0)
    return done
"""

TESTS = """
import pytest
from pytest_agentevals import RunStopped, read_trace

# The CLI's system prompt carries a digest of the prompt (the billing header): a new prompt, a new hash.
TOLERATE = ["system_sha256"]


@pytest.mark.resume("claude-at-1", max_calls=6, contract_tolerate=TOLERATE)
def test_the_cli_goes_on_from_the_checkpoint(agentevals_resume):
    assert (agentevals_resume.workspace / "hello.txt").is_file()  # written before the checkpoint
    done = agentevals_resume.run_agent()
    assert done.returncode == 0, done.stdout + done.stderr
    phase = agentevals_resume.phase
    assert phase.status == "ok" and phase.calls >= 1
    first = next(e for e in read_trace(phase.trace) if e["type"] == "model_call")
    sent = [block for message in first["request"]["body"]["messages"]
            for block in (message["content"] if isinstance(message["content"], list) else [])]
    # The leg's first request carries the checkpoint's history: the recorded Write and its result.
    assert any(b.get("type") == "tool_use" and b.get("name") == "Write" for b in sent)
    assert any(b.get("type") == "tool_result" for b in sent)
    assert any("Go on from where you stopped." in str(b.get("text")) for b in sent)


@pytest.mark.resume("claude-at-1", max_calls=1, contract_tolerate=TOLERATE)
def test_a_budget_stops_the_resumed_cli(agentevals_resume):
    with pytest.raises(RunStopped) as stopped:
        agentevals_resume.run_agent()
    assert stopped.value.status == "budget_exhausted"
    assert agentevals_resume.phase.calls == 1


@pytest.mark.marathon(seeds=[3], min_pass_rate=0.5)
def test_cli_marathon(agentevals_marathon):
    assert agentevals_marathon.run_agent().returncode == 0


@pytest.mark.marathon(seeds=[4], max_calls=1, fail_on=["budget_exhausted"])
def test_cli_marathon_over_budget(agentevals_marathon):
    agentevals_marathon.run_agent()
"""


def test_claude_code_is_resumed_from_an_endpoint_checkpoint(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, model: SimServer, tmp_path: Path
) -> None:
    env = client_env(model.url, tmp_path / "home")
    work = tmp_path / "work"
    work.mkdir()
    trace = tmp_path / "claude.trace.jsonl"
    command = claude_command("write hello.txt")
    recorded = agentevals("record", "-o", trace, "--checkpoint-every", "1", "--", *command, cwd=work, env=env)
    assert recorded.returncode == 0, recorded.explain()
    every_checkpoint = [e for e in read_trace(trace) if e["type"] == "checkpoint"]
    # The first is the command's own start (its folder, for a promoted replay); then the endpoint's.
    assert every_checkpoint[0]["name"] == "command start"
    checkpoints = every_checkpoint[1:]
    assert [c["step"] for c in checkpoints] == [0, 1]
    assert sorted(checkpoints[1]["workspace"]["files"]) == ["hello.txt"]
    fixtures = pytester.path / "fixtures"
    extracted = agentevals(
        "resume", "extract", trace, "--at", "1", "--name", "claude-at-1", "--fixtures-dir", fixtures,
        cwd=tmp_path, env=env,
    )  # fmt: skip
    assert extracted.returncode == 0, extracted.explain()

    for name, value in env.items():
        monkeypatch.setenv(name, value)  # ANTHROPIC_BASE_URL: the hook's endpoint's upstream
    pytester.makeconftest(CONFTEST.format(command=claude_command("Go on from where you stopped.")))
    pytester.makepyfile(test_cli=TESTS)
    before = len(model.exchanges)
    result = pytester.runpytest("-p", "no:cacheprovider", "--agentevals-history=off")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["FAILED test_cli.py::test_cli_marathon_over_budget*seed=4*"])
    assert len(model.exchanges) > before + 4  # both legs and both seeds ran live against sim
    seeds = sorted((pytester.path / ".agentevals" / "marathons").glob("*/seed-*.trace.jsonl"))
    assert sorted(read_trace(path)[-1]["status"] for path in seeds) == ["budget_exhausted", "ok"]
    verified = [e for path in seeds for e in read_trace(path) if e["type"] == "verification"]
    # The CLI's Write ran in seed 3's workspace; seed 4's second request was refused before it ended.
    assert sorted(e["passed"] for e in verified) == [False, True]
