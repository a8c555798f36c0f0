"""The Node agent (on @anthropic-ai/sdk) up the pyramid's top two layers, through the model endpoint:

- resume: `agentevals record --checkpoint-every 1 -- node agent.mjs` writes a checkpoint at each
  model request (the conversation as the state, the agent's folder as the workspace); `agentevals
  resume extract` makes a fixture of the one before the third request; `@pytest.mark.resume` tests
  boot the agent from it (AGENT_MESSAGES) and run its next leg live against sim, replayed offline,
  and stopped by a budget;
- marathon: seeded runs of the agent (the seed chooses the notes it summarizes), one stopped by a
  budget.

One inner pytest session runs them all, against the session's simulated model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_agentevals.sim import SimServer
from pytest_agentevals.trace.reader import read_trace

from ..clients_support import agentevals, client_env, node_agent

pytest_plugins = ["pytester"]

NOTES = "alpha\nbeta\n"

CONFTEST = """
import json, subprocess
from pathlib import Path

import pytest_agentevals as ae
from pytest_agentevals import model_endpoint

NODE = {node!r}


def _run(args, workspace, extra=None):
    with model_endpoint() as endpoint:  # the hooks take no fixtures: an endpoint of their own
        env = {{**endpoint.env, **(extra or {{}})}}
        return subprocess.run(NODE + args, cwd=workspace, env=env, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=120)


def pytest_agentevals_resume_agent(checkpoint):
    \"\"\"A checkpoint the model endpoint wrote: boot the Node agent from its conversation.\"\"\"
    if checkpoint.state.get("format") != "agentevals-endpoint/1":
        return None
    saved = checkpoint.workspace.parent / "conversation.json"
    saved.write_text(json.dumps(checkpoint.state))
    return _run([], checkpoint.workspace, {{"AGENT_MESSAGES": str(saved)}})


def pytest_agentevals_run_agent(run):
    if run.layer != "marathon":
        return None
    workspace = run.marathon.workspace
    notes = "".join(f"seed {{run.seed}} line {{n}}\\n" for n in range(run.seed + 1))
    (workspace / "notes.txt").write_text(notes)
    done = _run(["summarize notes.txt into summary.txt"], workspace)
    summary = workspace / "summary.txt"
    ok = done.returncode == 0 and summary.is_file() and summary.read_text() == notes.upper()
    ae.verification("summary", ok, progress=1.0 if ok else 0.0)
    return done
"""

TESTS = """
import pytest
from pytest_agentevals import RunStopped


@pytest.mark.resume("node-at-2", max_calls=5)
def test_the_next_leg_runs_live(agentevals_resume):
    done = agentevals_resume.run_agent()
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Summary written to summary.txt."
    assert (agentevals_resume.workspace / "summary.txt").read_text() == {upper!r}
    assert agentevals_resume.phase.calls == 2
    assert agentevals_resume.phase.status == "ok"


@pytest.mark.resume("node-at-2", mode="replayed")
def test_the_next_leg_replays_offline(agentevals_resume):
    done = agentevals_resume.run_agent()
    assert done.returncode == 0, done.stderr
    assert (agentevals_resume.workspace / "summary.txt").read_text() == {upper!r}
    assert agentevals_resume.phase.calls == 2


@pytest.mark.resume("node-at-2", max_calls=1)
def test_a_budget_stops_the_resumed_leg(agentevals_resume):
    with pytest.raises(RunStopped) as stopped:
        agentevals_resume.run_agent()
    assert stopped.value.status == "budget_exhausted"
    assert agentevals_resume.phase.calls == 1
    assert agentevals_resume.phase.status == "budget_exhausted"


@pytest.mark.marathon(seeds=2, min_pass_rate=0.5)
def test_node_marathon(agentevals_marathon):
    assert agentevals_marathon.run_agent().returncode == 0


@pytest.mark.marathon(seeds=[5], max_calls=2, fail_on=["budget_exhausted"])
def test_node_marathon_over_budget(agentevals_marathon):
    agentevals_marathon.run_agent()
"""


def test_the_node_agent_is_resumed_and_run_as_a_marathon(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, model: SimServer, tmp_path: Path
) -> None:
    node = node_agent()
    env = client_env(model.url, tmp_path / "home")
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text(NOTES)
    trace = tmp_path / "node.trace.jsonl"
    before = len(model.exchanges)
    task = "summarize notes.txt into summary.txt"
    recorded = agentevals(
        "record", "-o", trace, "--checkpoint-every", "1", "--", *node, task, cwd=work, env=env
    )
    assert recorded.returncode == 0, recorded.explain()
    assert len(model.exchanges) - before == 4
    events = read_trace(trace)
    every_checkpoint = [e for e in events if e["type"] == "checkpoint"]
    # The first is the command's own start (its folder, for a promoted replay); then the endpoint's.
    assert every_checkpoint[0]["name"] == "command start"
    checkpoints = every_checkpoint[1:]
    # One before each of the four requests, each holding the conversation as sent and the folder.
    assert [c["step"] for c in checkpoints] == [0, 1, 2, 3]
    assert [len(c["state"]["request"]["messages"]) for c in checkpoints] == [1, 3, 5, 7]
    assert checkpoints[0]["state"]["request"]["system"] == "You are a careful file assistant."
    assert sorted(checkpoints[2]["workspace"]["files"]) == ["notes.txt"]
    assert "metadata" not in checkpoints[0]["state"]["request"]

    fixtures = pytester.path / "fixtures"
    extracted = agentevals(
        "resume", "extract", trace, "--at", "2", "--name", "node-at-2", "--continuation",
        "--fixtures-dir", fixtures, cwd=tmp_path, env=env,
    )  # fmt: skip
    assert extracted.returncode == 0, extracted.explain()
    manifest = json.loads((fixtures / "node-at-2" / "manifest.json").read_text())
    assert manifest["step"] == 2
    assert manifest["task"] == {"command": [*node, task]}

    for name, value in env.items():
        monkeypatch.setenv(name, value)  # ANTHROPIC_BASE_URL: the hooks' endpoints' upstream
    pytester.makeconftest(CONFTEST.format(node=node))
    pytester.makepyfile(test_node=TESTS.format(upper=NOTES.upper()))
    before = len(model.exchanges)
    result = pytester.runpytest("-p", "no:cacheprovider", "--agentevals-history=off", "-rA")
    result.assert_outcomes(passed=5, failed=1)
    result.stdout.fnmatch_lines(["FAILED test_node.py::test_node_marathon_over_budget*seed=5*"])
    # Live leg: 2 requests; replayed: none; the budgeted leg: 1 (its second refused); the marathon: 4
    # per seed; the budgeted seed: 2.
    assert len(model.exchanges) - before == 2 + 0 + 1 + 4 * 2 + 2
    seeds = sorted((pytester.path / ".agentevals" / "marathons").glob("*/seed-*.trace.jsonl"))
    ends = {path.parent.name.split("-")[-1] + "/" + path.stem: read_trace(path)[-1] for path in seeds}
    statuses = sorted(end["status"] for end in ends.values())
    assert statuses == ["budget_exhausted", "ok", "ok"], ends
