"""A run of `agentevals record`, replayed: what a replay test of a recorded command (`agentevals
record -- COMMAND`) or Python program (`agentevals record agent.py`) — a promoted incident, a
collected cassette — starts when no `pytest_agentevals_run_agent` hook of the user's takes its task,
and where `agentevals replay TRACE PROGRAM` runs the program. It runs again in a fresh copy of the
workspace it was recorded in (the trace's `command start` / `program start` checkpoint): a command
pointed at an endpoint that answers from the recording, a Python program in this process.

A trace never chooses the code it runs: the program must be allowed by the repository (a command by
its whole command line) in `[tool.agentevals] replay_programs`; a Python program's code is the
repository's file (found from the root), never the copy the trace holds.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ..errors import AgentEvalsError, CassetteError, CheckpointError
from ..recording import program as programs
from ..settings.argv import Command, Program, allowed
from ..trace.reader import TraceReader
from .command import children_pointed, run_command


def has_start_workspace(trace: Path) -> bool:
    """Whether the run in `trace` kept the folder it started in: a trace of `agentevals record` whose
    first checkpoint, before any model call, is its start. False for anything else (a test's trace, a
    vcrpy cassette, an unreadable file: the replay's loader says what is wrong with that)."""
    if not trace.name.endswith(".jsonl") or not trace.is_file():
        return False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for event in TraceReader(trace, resolve=False, workspaces=False):
                if event.get("type") == "model_call":
                    return False
                if event.get("type") == "checkpoint":
                    state = event.get("state")
                    return isinstance(state, dict) and state.get("format") in programs.START_STATES
    except AgentEvalsError:
        return False
    return False


@contextlib.contextmanager
def recorded_workspace(
    trace: Path, program: Program | Command, files_from: Path | None = None
) -> Iterator[Path]:
    """A fresh copy (in a temporary folder, removed afterwards) of the folder the recorded run of
    `program` in `trace` started in: its start checkpoint's workspace, restored entry by entry. A file
    the trace keeps only the hash of (over 256 KiB) is taken from `files_from` (the project: where a
    run is usually recorded) when its SHA-256 there is the recorded one."""
    from ..resume import resume_point_from_trace  # the resume engine loads with the first replay

    how = "-- COMMAND" if isinstance(program, Command) else "script.py (or -m module)"
    fix = f"a run recorded by `agentevals record {how}` keeps the folder it starts in; record it again"
    with tempfile.TemporaryDirectory(prefix="agentevals-replay-") as scratch:
        workspace = Path(scratch) / "workspace"
        try:
            point = resume_point_from_trace(trace, 0, workspace, files_from=files_from)
        except CheckpointError as exc:
            raise AgentEvalsError(
                f"{trace}: cannot restore the workspace to re-run `{program.label}` in: {exc} ({fix})"
            ) from None
        state = point.state
        if not isinstance(state, dict) or state.get("format") not in programs.START_STATES:
            raise AgentEvalsError(
                f"{trace}: cannot restore the workspace to re-run `{program.label}` in: its checkpoint "
                f"at step 0 is not the run's start ({fix})"
            )
        yield workspace


def replay_command(run: Any, argv: Sequence[Any]) -> int:
    """Re-run the recorded command `argv` of the replay `run` (a `ReplayRun`) in a fresh copy of its
    recorded workspace; its exit code, 0 (any other raises, the replay's own failure first)."""
    where = run.path or run.name
    if not argv or not all(isinstance(word, str) and word for word in argv):
        problem = f"run_start.task.command {list(argv)!r} is not a command line"
        raise CassetteError(where, 1, problem, "re-record it with `agentevals record -- COMMAND`")
    command = Command(tuple(argv))
    settings = run.settings
    if not allowed(command, settings.replay_programs, settings.rootdir):
        raise AgentEvalsError(
            f"{where}: this run was recorded from the command `{command.label}` (run_start.task.command), "
            "and a replay runs only a command the repository allows, never one a trace names. If that "
            "command is yours, allow it in pyproject.toml: [tool.agentevals] replay_programs = "
            f"[{json.dumps(command.label)}]; or start it yourself in a `pytest_agentevals_run_agent(run)` "
            "hook (see docs/replay.md)"
        )
    with recorded_workspace(Path(where), command, settings.rootdir) as workspace:
        code = run_command(command.argv, cwd=workspace)
    if code != 0:
        raise AgentEvalsError(f"the replayed command `{command.label}` exited with status {code}")
    return code


def replay_program(run: Any, argv: Any) -> int:
    """Re-run the recorded Python program `argv` (`run_start.task.argv`) of the replay `run` (a
    `ReplayRun`) in this process, in a fresh copy of its recorded workspace, its subprocesses pointed
    at an endpoint answering from the replay (as `agentevals record` pointed them); its exit code, 0
    (any other raises)."""
    where = run.path or run.name
    try:
        program = Program.from_argv(argv if isinstance(argv, list) else [])
    except AgentEvalsError as exc:
        raise CassetteError(
            where, 1, f"run_start.task.argv: {exc}", "re-record it with `agentevals record`"
        ) from None
    settings = run.settings
    root = settings.rootdir
    if not allowed(program, settings.replay_programs, root):
        raise AgentEvalsError(
            f"{where}: this run was recorded from `{program.label}` (run_start.task.argv), and "
            "a replay runs only a program the repository allows, never one a trace names. If that "
            "program is yours, allow it in pyproject.toml: [tool.agentevals] replay_programs = "
            f"[{json.dumps(program.label)}]; or start the agent yourself in a "
            "`pytest_agentevals_run_agent(run)` hook (see docs/replay.md)"
        )
    with recorded_workspace(Path(where), program, root) as workspace, children_pointed():
        code = programs.run(program, root, cwd=workspace)
    if code != 0:
        raise AgentEvalsError(f"the replayed program {program.label} exited with status {code}")
    return code
