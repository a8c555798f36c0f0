"""The supervisor: runs attempts of the loop and, when one crashes (the SDK gave up, a stream broke,
the watchdog aborted), restores the last checkpoint, state and workspace both, and starts again, up
to a number of restarts (`should_restart`). A run the framework's guards stopped is not restarted:
it ends with their status. It also sets how the run ended on the recorder, when one records.

With `let_it_crash` a crash (anything but the harness's own budget and watchdog stops) is raised
instead: the run is left to a supervisor above this one — the marathon layer's, which restarts it
from the last checkpoint in its trace through the `pytest_agentevals_resume_agent` hook.
"""

from __future__ import annotations

import copy
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anthropic

import pytest_agentevals
from pytest_agentevals.recording import current_recorder
from pytest_agentevals.trace.paths import path_problem

from .harness import (
    AgentState,
    Attempt,
    BudgetExhausted,
    HarnessConfig,
    RunResult,
    Totals,
    WatchdogAbort,
    should_restart,
)
from .tasks import Task

# Marks a directory as this agent's workspace, so restoring a checkpoint never wipes anything else.
MARKER = ".taskrunner-workspace"


@dataclass
class Checkpoint:
    """A resumable point: the agent's state and the workspace's files (path -> text)."""

    state: AgentState = field(default_factory=AgentState)
    files: dict[str, str] = field(default_factory=dict)

    @classmethod
    def capture(cls, state: AgentState, workspace: Path) -> Checkpoint:
        files = {
            path.relative_to(workspace).as_posix(): path.read_text(encoding="utf-8")
            for path in sorted(workspace.rglob("*"))
            if path.is_file() and path.name != MARKER
        }
        return cls(copy.deepcopy(state), files)

    @classmethod
    def from_event(cls, event: Mapping[str, Any]) -> Checkpoint:
        """A checkpoint event of a trace (its state, and its workspace snapshot's file texts).

        A trace is untrusted data: a path that would leave the workspace is refused here, and again
        by `restore`.
        """
        snapshot = event.get("workspace") or {}
        files: dict[str, str] = {}
        for path, entry in snapshot.get("files", {}).items():
            _check_path(path)
            if isinstance(entry, Mapping) and isinstance(entry.get("text"), str):
                files[path] = entry["text"]
        return cls(AgentState.from_dict(dict(event.get("state", {}))), files)

    def restore(self, workspace: Path) -> AgentState:
        """Make the workspace hold exactly this checkpoint's files; a fresh copy of its state.

        Every path is checked before anything is removed or written: nothing lands outside the
        workspace, nothing is written through a link.
        """
        root = workspace.resolve()
        targets = [(_inside(root, relative), text) for relative, text in self.files.items()]
        for entry in workspace.iterdir():
            if entry.name == MARKER:
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
        for target, text in targets:
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.parent.resolve() != target.parent or target.is_symlink():
                raise ValueError(f"{target}: a link in the way; refused to restore through it")
            target.write_text(text, encoding="utf-8")
        return copy.deepcopy(self.state)


def _check_path(relative: str) -> None:
    problem = path_problem(relative)
    if problem is not None:
        raise ValueError(f"checkpoint file {relative!r} {problem}; refused to restore it")


def _inside(root: Path, relative: str) -> Path:
    """`root / relative`, refusing a path that is not plainly inside the workspace."""
    _check_path(relative)
    target = root / relative
    if not target.is_relative_to(root):
        raise ValueError(f"checkpoint file {relative!r} lands outside {root}; refused to restore it")
    return target


def prepare_workspace(workspace: str | Path) -> Path:
    """Create the workspace, or accept an empty one or one of ours; refuse any other directory."""
    root = Path(workspace)
    root.mkdir(parents=True, exist_ok=True)
    if not (root / MARKER).exists() and any(root.iterdir()):
        raise ValueError(
            f"{root} is not empty and is not a taskrunner workspace; give an empty or new directory "
            "(the agent replaces the workspace's files when it restores a checkpoint)"
        )
    (root / MARKER).touch()
    return root.resolve()


def run_agent(
    client: anthropic.Anthropic,
    tasks: list[Task],
    workspace: str | Path,
    config: HarnessConfig | None = None,
    resume: Checkpoint | None = None,
) -> RunResult:
    """Run the agent on `tasks` until done, out of budget, or out of restarts."""
    config = config or HarnessConfig()
    root = prepare_workspace(workspace)
    totals = Totals()
    last = resume or Checkpoint()
    restarts = 0
    status: str | None = None
    error: str | None = None
    started = time.perf_counter()

    def keep(state: AgentState) -> None:
        nonlocal last
        last = Checkpoint.capture(state, root)

    state = last.restore(root)
    while status is None:
        try:
            Attempt(client, tasks, root, config, totals, keep).run(state)
            status = "ok"
        except BudgetExhausted as exc:
            status, error = "budget_exhausted", str(exc)
        except pytest_agentevals.RunStopped as exc:
            # The framework's guards stopped the run (budget_exhausted, stalled, loop): no restart.
            status, error = exc.status, str(exc)
        except Exception as exc:
            if config.let_it_crash and not isinstance(exc, WatchdogAbort):
                raise  # "let it crash": the supervisor above this one (a marathon's) restarts the run
            why = f"{type(exc).__name__}: {exc}"
            if not should_restart(config, restarts, exc):
                status = "escalated" if isinstance(exc, WatchdogAbort) else "failed"
                error = why
                pytest_agentevals.note("giving up", reason=why, restarts=restarts)
                break
            restarts += 1
            pytest_agentevals.note(
                "restarting from the last checkpoint",
                reason=why,
                restarts=restarts,
                verified=len(last.state.verified),
            )
            state = last.restore(root)
    assert status is not None
    recorder = current_recorder()
    if recorder is not None:
        recorder.end(status)
    return RunResult(
        status=status,
        steps=totals.steps,
        tokens=totals.tokens,
        restarts=restarts,
        tasks_done=len(last.state.verified),
        tasks_total=len(tasks),
        compactions=totals.compactions,
        watchdog_fires=totals.watchdog_fires,
        tool_calls=totals.tool_calls,
        error=error,
        seconds=time.perf_counter() - started,
    )
