"""The agentevals command, run as a subprocess the way a user runs it."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from pytest_agentevals import __version__, read_trace

from ..conftest import REPO
from ..conftest import run_agentevals as agentevals

SCRIPT = """
import sys
import pytest_agentevals as ae

@ae.tool
def shout(text):
    if text == "boom":
        raise ValueError("cannot shout boom")
    return text.upper()

print("args", sys.argv[1:])
shout("hello")
try:
    shout("boom")
except ValueError:
    pass
ae.checkpoint({"done": 1})
ae.compaction(tokens_before=900, tokens_after=100, summary="kept the plan")
ae.verification("shouted", True, progress=0.5)
if "--fail" in sys.argv:
    raise RuntimeError("the agent fell over")
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 0)
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "agent.py").write_text(SCRIPT)
    package = tmp_path / "myagent"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "__main__.py").write_text(SCRIPT)
    return tmp_path


def test_version_and_help(tmp_path: Path) -> None:
    result = agentevals("--version", cwd=tmp_path)
    assert result.stdout.strip() == f"agentevals {__version__}"
    result = agentevals("--help", cwd=tmp_path)
    assert result.returncode == 0
    for command in ("record", "show"):
        assert command in result.stdout


def test_record_a_script_then_show_it(project: Path) -> None:
    result = agentevals(
        "record", "-o", "run.trace.jsonl", "--seed", "4", "agent.py", "x", "--flag", cwd=project
    )
    # The agent calls no model: a recorded program that checked nothing is never `ok`, and the
    # command says so by its exit status (4) and why, though the program itself exited 0.
    assert result.returncode == 4, result.stderr
    assert "args ['x', '--flag']" in result.stdout
    assert (
        "agentevals record: error: no model call, so the run checked nothing (exit status 4): the run "
        "made no model call that was recorded: neither the agent in this process" in result.stderr
    )
    assert "If the program legitimately calls no model, give --allow-no-model-calls" in result.stderr
    assert (
        "wrote run.trace.jsonl (0 steps, ended no_model_calls, $0.0000); `agentevals show run.trace.jsonl`"
        in result.stderr
    )
    events = read_trace(project / "run.trace.jsonl")
    kinds = [event["type"] for event in events]
    assert kinds == [
        "run_start",
        "checkpoint",  # the folder the program started in, what a replay runs it in a copy of
        "tool_call",
        "tool_call",
        "checkpoint",
        "compaction",
        "verification",
        "run_end",
    ]
    assert events[0]["seed"] == 4
    assert events[0]["task"] == {"argv": ["agent.py", "x", "--flag"]}
    assert events[1]["name"] == "program start"
    assert events[3]["error"] == {"type": "ValueError", "message": "cannot shout boom"}
    assert events[-1]["status"] == "no_model_calls"
    assert "not pointed at the endpoint" in events[-1]["reason"]

    shown = agentevals("show", "run.trace.jsonl", cwd=project)
    assert shown.returncode == 0
    assert "ended      no_model_calls — the run made no model call that was recorded" in shown.stdout
    assert "tools      2 calls (1 errors): shout 2" in shown.stdout
    assert "harness    2 checkpoints · 1 compactions · 0 notes" in shown.stdout  # the start's, the script's
    assert "verified   1/1 passed, progress 50% (of no model call: not the agent's work)" in shown.stdout
    assert "problems\n  - no model call was recorded: the run checked nothing" in shown.stdout
    # No verdict, AUC or loop rate beside that problem: over 0 steps they say nothing.
    assert (
        "metrics    no verdict: the run called no model, so nothing the agent did was checked" in shown.stdout
    )
    assert "AUC" not in shown.stdout
    assert "verified pass" not in shown.stdout
    as_json = json.loads(agentevals("show", "--json", "run.trace.jsonl", cwd=project).stdout)
    assert as_json["tool_errors"] == 1
    assert as_json["status"] == "no_model_calls"
    assert as_json["checkpoints"] == 2


def test_allow_no_model_calls_lets_the_programs_exit_status_stand(project: Path) -> None:
    result = agentevals("record", "-o", "ok.trace.jsonl", "--allow-no-model-calls", "agent.py", cwd=project)
    assert result.returncode == 0, result.stderr
    assert "agentevals record: the run made no model call (allowed by --allow-no-model-calls" in result.stderr
    assert "error" not in result.stderr
    assert read_trace(project / "ok.trace.jsonl")[-1]["status"] == "no_model_calls"  # still never `ok`
    # A program that fails keeps its own status, allowed or not.
    assert agentevals("record", "-o", "f.trace.jsonl", "agent.py", "5", cwd=project).returncode == 5


def test_record_a_module_with_its_exit_code(project: Path) -> None:
    # As with python -m, everything after the module is the module's, options included.
    result = agentevals("record", "-o", "m.trace.jsonl", "-m", "myagent", "3", "--seed", "x", cwd=project)
    assert result.returncode == 3
    events = read_trace(project / "m.trace.jsonl")
    assert events[0]["agent"] == "myagent"
    assert events[-1]["status"] == "failed"


def test_a_crashing_program_keeps_its_trace(project: Path) -> None:
    result = agentevals("record", "-o", "c.trace.jsonl", "agent.py", "--fail", cwd=project)
    assert result.returncode == 1
    assert "RuntimeError: the agent fell over" in result.stderr
    end = read_trace(project / "c.trace.jsonl")[-1]
    assert end["status"] == "error"
    assert end["error"]["message"] == "the agent fell over"


def test_record_default_output_goes_to_traces_dir(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.agentevals]\ntraces_dir = "runs"\n')
    # The script calls no model (exit status 4, test_record_a_script_then_show_it): beside the point here.
    assert agentevals("record", "agent.py", cwd=project).returncode == 4
    (trace,) = (project / "runs").glob("agent-*.trace.jsonl")
    assert read_trace(trace)[-1]["status"] == "no_model_calls"  # the agent calls no model


def test_record_never_overwrites(project: Path) -> None:
    (project / "old.trace.jsonl").write_text("precious\n")
    result = agentevals("record", "-o", "old.trace.jsonl", "agent.py", cwd=project)
    assert result.returncode == 2
    assert (
        "old.trace.jsonl exists; choose another -o, move it away, or give --force to replace it"
        in result.stderr
    )
    assert (project / "old.trace.jsonl").read_text() == "precious\n"


def test_record_force_replaces_the_trace_and_takes_the_programs_own_seed(project: Path) -> None:
    (project / "old.trace.jsonl").write_text("precious\n")
    result = agentevals("record", "--force", "-o", "old.trace.jsonl", "agent.py", "--seed", "7", cwd=project)
    assert result.returncode == 4, result.stderr  # replaced, and recorded: its script calls no model
    events = read_trace(project / "old.trace.jsonl")
    assert events[0]["seed"] == 7  # given once, to the program
    assert events[0]["task"] == {"argv": ["agent.py", "--seed", "7"]}
    (project / "real").mkdir()
    (project / "link.trace.jsonl").symlink_to(project / "real")
    linked = agentevals("record", "--force", "-o", "link.trace.jsonl", "agent.py", cwd=project)
    assert linked.returncode == 2
    assert "link.trace.jsonl is a link; choose another -o" in linked.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["record", "missing.py"],
            "missing.py: no such script (give a path to a Python file, or use -m module)",
        ),
        (["record"], "nothing to run: give a script"),
        (["record", "-m"], "-m needs a module name: -m module [args]"),
        (["show", "missing.trace.jsonl"], "missing.trace.jsonl:0: the file does not exist"),
    ],
)
def test_bad_input_is_one_clear_line(project: Path, args: list[str], message: str) -> None:
    result = agentevals(*args, cwd=project)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_bad_pyproject_is_named(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.agentevals]\nrecord_mode = "x"\n')
    result = agentevals("record", "agent.py", cwd=project)
    assert result.returncode == 2
    assert "[tool.agentevals] record_mode: unknown key" in result.stderr


def test_show_lists_problems_of_a_killed_run(project: Path) -> None:
    # The script calls no model (exit status 4): the run was recorded, then "killed" below.
    assert agentevals("record", "-o", "k.trace.jsonl", "agent.py", cwd=project).returncode == 4
    path = project / "k.trace.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:-1]) + lines[-1][:20])  # killed while writing run_end
    shown = agentevals("show", "k.trace.jsonl", cwd=project)
    assert shown.returncode == 0
    assert "ended      unknown (no run_end)" in shown.stdout
    assert (
        textwrap.dedent("""\
        problems
          - k.trace.jsonl:8: the last line is incomplete (a crash mid-write?); ignored it
          - no run_end event: the run was killed or is still going""")
        in shown.stdout
    )


def test_the_programs_own_status_wins(project: Path) -> None:
    (project / "budget.py").write_text(
        "import sys\nfrom pytest_agentevals.recording import current_recorder\n"
        "current_recorder().end('budget_exhausted')\nsys.exit(1)\n"
    )
    result = agentevals("record", "-o", "b.trace.jsonl", "budget.py", cwd=project)
    assert result.returncode == 1
    assert read_trace(project / "b.trace.jsonl")[-1]["status"] == "budget_exhausted"
    # A run its budget stopped is not a clean run: `show` lists it as a problem, never "none".
    shown = agentevals("show", "b.trace.jsonl", cwd=project)
    assert "  - the run ended budget_exhausted, not ok" in shown.stdout
    assert "problems   none" not in shown.stdout


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_show_a_trace_damaged_in_the_middle_exits_1_showing_what_was_read(tmp_path: Path, fmt: str) -> None:
    source = (REPO / "cassettes" / "taskrunner-3-tasks.trace.jsonl").read_text().splitlines(keepends=True)
    damaged = tmp_path / "d.trace.jsonl"
    damaged.write_text("".join(source[:5]) + '{"type": "model_call", "seq": \n' + "".join(source[6:]))
    shown = agentevals("show", "--format", fmt, damaged, cwd=tmp_path)
    assert shown.returncode == 1
    assert shown.stderr.startswith(f"agentevals show: error: {damaged}:6: ")
    assert "the summary covers the events before that line" in shown.stderr
    assert "Traceback" not in shown.stderr
    if fmt == "json":
        data = json.loads(shown.stdout)
        assert data["run_id"]
        assert data["unreadable"].startswith(f"{damaged}:6:")
    else:
        assert shown.stdout.startswith(f"trace      {damaged}")
        assert f"  - {damaged}:6: " in shown.stdout
