"""Terminal-safe output of the step layer (issue 17): what a goldens file or a recorded run holds
reaches the terminal escaped — `agentevals step points` and `extract` (their stdout), and a pytest
session's side-by-side table and its re-blessed diff."""

from __future__ import annotations

import json
from pathlib import Path

import anthropic
import pytest

from pytest_agentevals import Recorder
from pytest_agentevals.sim import Reply, SimServer

from ..conftest import run_agentevals
from ..terminal_support import HOSTILE, unsafe
from .test_extract import ask
from .test_pytest import GOLDENS, HARNESS_CONFTEST, run

pytest_plugins = ["pytester"]


def test_step_points_and_extract_escape_what_the_run_holds(tmp_path: Path) -> None:
    path = tmp_path / "run.trace.jsonl"
    replies = [Reply.tool_use("read" + HOSTILE, {"path": HOSTILE}), Reply.text("done")]
    with SimServer(replies) as sim, Recorder(path, agent="a") as recorder:
        client = anthropic.Anthropic(base_url=sim.url, api_key="test-" + "k" * 12, max_retries=0)
        ask(client, [{"role": "user", "content": "go"}])
        recorder.end("ok")
    points = run_agentevals("step", "points", path, cwd=tmp_path)
    assert points.returncode == 0, points.stderr
    assert unsafe(points.stdout) == [], points.stdout
    assert "read\\x1b[2J" in points.stdout  # readable, escaped
    done = run_agentevals("step", "extract", path, "--steps", "1", "-o", tmp_path / "g.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert unsafe(done.stdout + done.stderr) == [], done.stdout


def test_a_failing_case_and_its_rebless_are_escaped(pytester: pytest.Pytester) -> None:
    folder = pytester.mkdir("goldens")
    (folder / "conftest.py").write_text(HARNESS_CONFTEST)
    hostile = json.dumps("read_file please src/b.txt" + HOSTILE.replace("\r", ""))
    (folder / "refactor.yaml").write_text(GOLDENS.replace('"read_file please src/b.txt"', hostile))
    failed = run(pytester, "goldens", "-k", "step-13")
    failed.assert_outcomes(failed=1)
    assert unsafe(failed.stdout.str()) == [], failed.stdout.str()
    assert "\\x9b31m" in failed.stdout.str()  # the one JSON left as it was, escaped
    blessed = run(pytester, "goldens", "-k", "step-13", "--agentevals-update-goldens")
    out = blessed.stdout.str()
    assert "= agentevals step cases =" in out
    assert unsafe(out) == [], out
    assert "evil.example" in out.split("= agentevals step cases =")[1]  # YAML escapes the rest
