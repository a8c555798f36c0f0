"""A recorded command, replayed: what a replay test of an `agentevals record -- COMMAND` run (a
promoted incident, a collected cassette) starts when no `pytest_agentevals_run_agent` hook of the
user's takes its task. The command runs again in a fresh copy of the workspace it was recorded in
(the trace's `command start` checkpoint), pointed at an endpoint that answers from the recording.

A trace never chooses the code it runs: the command must be allowed by the repository, by its whole
command line, in `[tool.agentevals] replay_programs`.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import AgentEvalsError, CassetteError, CheckpointError
from ..settings.argv import Command, allowed
from .command import run_command


def replay_command(run: Any, argv: Sequence[Any]) -> int:
    """Re-run the recorded command `argv` of the replay `run` (a `ReplayRun`) in a fresh copy of its
    recorded workspace; its exit code, 0 (any other raises, the replay's own failure first)."""
    from ..resume import resume_point_from_trace  # the resume engine loads with the first replay

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
    with tempfile.TemporaryDirectory(prefix="agentevals-replay-") as scratch:
        workspace = Path(scratch) / "workspace"
        try:
            resume_point_from_trace(Path(where), 0, workspace)
        except CheckpointError as exc:
            raise AgentEvalsError(
                f"{where}: cannot restore the workspace to re-run `{command.label}` in: {exc} (a run "
                "recorded by `agentevals record -- COMMAND` keeps the folder it starts in; record it again)"
            ) from None
        code = run_command(command.argv, cwd=workspace)
    if code != 0:
        raise AgentEvalsError(f"the replayed command `{command.label}` exited with status {code}")
    return code
