"""Terminal-safe output of the replay layer (issue 17): a cassette's name and content, from a pull
request, never reach the terminal as raw control characters — `agentevals replay`'s divergence
report (its stderr, as a user sees it) and a pytest session's failure, report section and warning."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from .. import replay_support as agent
from ..conftest import run_agentevals
from ..terminal_support import HOSTILE, unsafe

pytest_plugins = ["pytester"]

SCRIPT = """
import sys
import replay_support as agent

print(agent.run_agent(agent.client(), sys.argv[1]))
"""
NAME = "run" + HOSTILE.replace("/", "") + ".trace.jsonl"  # a file name holds no slash


def test_the_divergence_report_of_agentevals_replay_is_escaped(tmp_path: Path) -> None:
    (tmp_path / "replay_support.py").write_text(Path(agent.__file__).read_text())
    (tmp_path / "fix_it.py").write_text(SCRIPT)
    agent.record(tmp_path / "run.trace.jsonl", task="Fix the bug in a.txt" + HOSTILE)
    shutil.move(tmp_path / "run.trace.jsonl", tmp_path / NAME)
    done = run_agentevals("replay", NAME, "fix_it.py", "Fix the bug in b.txt", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert unsafe(done.stdout + done.stderr) == [], done.stderr
    first = done.stderr.splitlines()[0]
    assert first.startswith("agentevals replay: ReplayDivergence: replay diverged at model call 1")
    assert "of run\\x1b[2J\\x1b[1A\\x1b[2K\\x0d\\x1b]8;;https:evil.example\\x07click" in first  # readable


def test_a_replay_in_pytest_shows_the_cassette_escaped(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(replay_support=Path(agent.__file__).read_text())
    agent.record(pytester.path / "cassettes" / NAME)
    pytester.makeini("[pytest]\naddopts = --agentevals-collect-cassettes=false\n")
    path = str(pytester.path / "cassettes" / NAME)
    pytester.makepyfile(
        test_fix=f"""
        import replay_support as agent

        def test_diverges(agentevals_replay):
            with agentevals_replay({path!r}):
                agent.run_agent(agent.client(), "Fix the bug in b.txt")

        def test_sequential(agentevals_replay):
            with agentevals_replay({path!r}, mode="sequential"):
                agent.run_agent(agent.client(), "Fix the bug, please")
        """
    )
    result = pytester.runpytest("-rA")
    result.assert_outcomes(passed=1, failed=1, warnings=1)
    out = result.stdout.str()
    assert unsafe(out) == [], out
    assert "ReplayDivergence: replay diverged at model call 1" in out  # the failure
    assert "- Captured agentevals replay call -" in out  # the report section
    assert "ReplayDivergenceWarning: replayed " in out  # the warning
    assert out.count("run\\x1b[2J") >= 3
