"""`agentevals record harness.py`: a Python program recorded in-process whose subprocesses (a harness
spawning `claude`, the Claude Agent SDK) call the model too. Its environment is pointed at an
endpoint while it runs, so the child's calls are recorded and guarded, and its own calls once."""

from __future__ import annotations

import os
from pathlib import Path

from pytest_agentevals.sim import Reply, SimServer
from pytest_agentevals.trace.reader import read_trace
from tests.conftest import make_fake_key, run_agentevals

AGENT = Path(__file__).with_name("agent.py")

HARNESS = f"""
import os, subprocess, sys
import anthropic

# The harness's own call, in this process (its client made while the run records).
reply = anthropic.Anthropic(max_retries=0).messages.create(
    model="claude-sonnet-4-6", max_tokens=50, messages=[{{"role": "user", "content": "Plan."}}])
print("harness:", reply.content[0].text)
# Its worker, a subprocess given this process's environment, as harnesses start `claude`.
done = subprocess.run([sys.executable, {str(AGENT)!r}, sys.argv[1]], capture_output=True, text=True)
print("child:", done.returncode, done.stdout.strip(), done.stderr.strip()[-300:])
print("base:", os.environ["ANTHROPIC_BASE_URL"].split("/agentevals-")[0])
sys.exit(done.returncode)
"""


def test_a_python_harness_spawning_a_client_is_recorded_not_zero_steps(tmp_path: Path) -> None:
    (tmp_path / "harness.py").write_text(HARNESS)
    out = tmp_path / "harness.trace.jsonl"
    with SimServer([Reply.text(f"answer {i}") for i in range(4)]) as sim:
        env = {**os.environ, "ANTHROPIC_BASE_URL": sim.url, "ANTHROPIC_API_KEY": make_fake_key("h")}
        done = run_agentevals("record", "-o", out, "harness.py", "3", cwd=tmp_path, env=env)
        upstream, sim_url = len(sim.requests), sim.url
    assert done.returncode == 0, done.stdout + done.stderr
    assert "child: 0 answer 3" in done.stdout
    assert "base: http://127.0.0.1:" in done.stdout  # the child was pointed at the endpoint
    assert upstream == 4
    events = read_trace(out)
    calls = [e for e in events if e["type"] == "model_call"]
    # One call of the harness and three of its child: each once (the in-process recording leaves a
    # request to the endpoint to the endpoint), forwarded to the upstream the harness was given.
    assert len(calls) == 4
    assert all(call["request"]["url"].startswith(sim_url) for call in calls)
    assert events[-1]["status"] == "ok"
    assert events[-1]["totals"]["steps"] == 4
    assert "4 steps, ended ok" in done.stderr


def test_a_budget_stops_the_harnesss_child_with_exit_3(tmp_path: Path) -> None:
    (tmp_path / "harness.py").write_text(HARNESS)
    out = tmp_path / "stopped.trace.jsonl"
    with SimServer([Reply.text(f"answer {i}") for i in range(4)]) as sim:
        env = {**os.environ, "ANTHROPIC_BASE_URL": sim.url, "ANTHROPIC_API_KEY": make_fake_key("h")}
        done = run_agentevals(
            "record", "-o", out, "--budget", "max_calls=2", "harness.py", "3", cwd=tmp_path, env=env
        )
        upstream = len(sim.requests)
    assert upstream == 2  # the harness's call and the child's first; the second was refused
    assert done.returncode == 3, done.stdout + done.stderr
    assert "max_calls" in done.stderr
    events = read_trace(out)
    assert [e["status"] for e in events if e["type"] == "guard"] == ["budget_exhausted"]
    assert events[-1]["status"] == "budget_exhausted"


def test_the_harness_s_child_is_replayed_through_the_endpoint_as_it_was_recorded(tmp_path: Path) -> None:
    # `agentevals replay run.trace.jsonl harness.py` points the child at an endpoint answering from
    # the replay, as `record` pointed it at the recording one: nothing goes around it, no upstream.
    (tmp_path / "harness.py").write_text(HARNESS)
    out = tmp_path / "harness.trace.jsonl"
    with SimServer([Reply.text(f"answer {i}") for i in range(4)]) as sim:
        env = {**os.environ, "ANTHROPIC_BASE_URL": sim.url, "ANTHROPIC_API_KEY": make_fake_key("h")}
        assert run_agentevals("record", "-o", out, "harness.py", "3", cwd=tmp_path, env=env).returncode == 0
        gone = sim.url
    # The simulated server is gone: a request that went around the replay would fail to connect.
    done = run_agentevals("replay", out, "harness.py", "3", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "harness: answer 0" in done.stdout
    assert "child: 0 answer 3" in done.stdout
    assert "base: http://127.0.0.1:" in done.stdout
    assert gone not in done.stdout
    assert "served 4 of 4 recorded HTTP exchanges" in done.stderr
    assert "no divergence" in done.stderr
