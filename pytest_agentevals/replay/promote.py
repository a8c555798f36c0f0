"""Promoting an incident (`agentevals promote TRACE --name NAME`): a recorded run becomes a replay test.

The run (from `agentevals record`, a failing marathon, a test's trace) is copied into the cassette
directory as `NAME.trace.jsonl`, scrubbed of secrets, and `test_replay_NAME.py` is written beside
the tests: a replay test that starts the agent through the `pytest_agentevals_run_agent` hook (or,
for a run recorded by `agentevals record`, runs its program again). A run cut off mid-write keeps
every complete event and is closed with a run_end of status "interrupted". Nothing existing is
overwritten unless asked (`force`).
"""

from __future__ import annotations

import json
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import AgentEvalsError, CassetteError, TraceFormatError
from ..fileio import atomic_path, write_atomic
from ..settings import Settings
from ..settings.argv import Command, Program, allowed
from ..trace.fidelity import require
from ..trace.reader import TraceReader
from ..trace.writer import TraceWriter
from .loader import load_cassette

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")

TEST_TEMPLATE = '''"""Replay of the incident {name!r}, promoted from {source} by `agentevals promote`.

The replay serves the recorded model and tool responses ({mode} mode); the agent is started on the
recorded task by the `pytest_agentevals_run_agent(run)` hook in conftest.py (see
docs/replay.md). Add the assertions that say what must hold.
"""

import pytest


@pytest.mark.replay({name!r}, replay_mode={mode!r})
def test_replay_{ident}(agentevals_replay):
    agentevals_replay.run_agent()
'''

# A recorded command (`agentevals record -- COMMAND`) or Python program (`agentevals record agent.py`)
# needs no hook: it runs again by itself.
COMMAND_TEMPLATE = '''"""Replay of the incident {name!r}, promoted from {source} by `agentevals promote`.

The replay serves the recorded model responses ({mode} mode) to the recorded {kind}, run again in a
fresh copy of the folder it was recorded in: `{command}` (allowed by [tool.agentevals]
replay_programs; see docs/replay.md). Add the assertions that say what must hold.
"""

import pytest


@pytest.mark.replay({name!r}, replay_mode={mode!r})
def test_replay_{ident}(agentevals_replay):
    agentevals_replay.run_agent()
'''


@dataclass(frozen=True)
class Promoted:
    """The cassette a promotion wrote: `events` copied from the source, `closed` when a run_end was
    added, `redactions` secrets scrubbed on the way."""

    cassette: Path
    events: int
    closed: bool
    redactions: int
    task: Any = None  # the run's task (run_start.task)

    def text(self) -> str:
        notes = [f"{self.events} events"]
        if self.closed:
            notes.append("closed as interrupted")
        if self.redactions:
            notes.append(f"{self.redactions} secret(s) scrubbed")
        return f"agentevals promote: wrote {self.cassette} ({', '.join(notes)})"


@dataclass(frozen=True)
class PromotedTest:
    """The replay test of a promoted cassette; `existed` when a file was there and was left alone."""

    path: Path
    existed: bool

    def text(self) -> str:
        if self.existed:
            return f"agentevals promote: {self.path} exists; left it as it is"
        return f"agentevals promote: wrote {_shown(self.path)}"


def check_name(name: str) -> str:
    """A cassette's name: letters, digits, '-', '_' and '.', as a file name and a test id hold it."""
    if not _NAME.match(name):
        raise AgentEvalsError(f"--name {name!r}: use letters, digits, '-', '_' and '.' only")
    return name


def promote(source: Path, name: str, settings: Settings, *, force: bool = False) -> Promoted:
    """Copy the recorded run at `source` into `settings.cassettes_dir` as NAME.trace.jsonl, through a
    trace writer's scrubber, and check that it replays before it takes that name."""
    check_name(name)
    target = settings.cassettes_dir / f"{name}.trace.jsonl"
    if target.exists() and not force:
        raise AgentEvalsError(f"{target} exists: choose another --name, or --force to replace it")
    events, closed = complete_events(source)
    require(events[0], "promote", source)  # an `outline` import has no answers to serve
    if closed is not None:
        events.append(closed)
    target.parent.mkdir(parents=True, exist_ok=True)
    # Written through a trace writer, so through its scrubber (the same path as any recording), into
    # a temporary file beside the target that must replay before it takes the target's name.
    with atomic_path(target) as scratch:
        with TraceWriter(scratch) as writer:
            for event in events:
                writer.write(event)
        try:
            load_cassette(scratch)
        except CassetteError as exc:  # its lines are the source's: name the source's line
            raise CassetteError(source, exc.line, exc.problem, exc.fix) from None
    return Promoted(
        target,
        len(events) - (closed is not None),
        closed is not None,
        writer.scrubber.redactions,
        events[0].get("task"),
    )


def recorded_command(task: Any) -> Command | Program | None:
    """The command a run recorded by `agentevals record -- COMMAND` ran, or the Python program one
    recorded by `agentevals record agent.py` (`-m module`) ran (its task), else None."""
    argv = task.get("command") if isinstance(task, dict) else None
    if isinstance(argv, list) and argv and all(isinstance(word, str) and word for word in argv):
        return Command(tuple(argv))
    argv = task.get("argv") if isinstance(task, dict) else None
    if isinstance(argv, list):
        try:
            return Program.from_argv(argv)
        except AgentEvalsError:
            return None
    return None


def allow_hint(task: Any, settings: Settings) -> str | None:
    """What to add to pyproject.toml so the promoted test of a recorded command or program may run
    it, or None."""
    command = recorded_command(task)
    if command is None or allowed(command, settings.replay_programs, settings.rootdir):
        return None
    entries = [*settings.replay_programs, command.label]
    kind = "command" if isinstance(command, Command) else "program"
    return (
        f"agentevals promote: the test re-runs the recorded {kind} once the repository allows it: add "
        f"to pyproject.toml [tool.agentevals] replay_programs = {json.dumps(entries)}"
    )


def complete_events(source: Path) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The trace's complete events, and a run_end to append when the run never wrote one."""
    reader = TraceReader(source, workspaces=False)  # the writer stores workspace deltas as read
    events: list[dict[str, Any]] = []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for event in reader:
                events.append(event)
    except TraceFormatError as exc:
        raise AgentEvalsError(f"cannot promote {source}: {exc}") from None
    if events[-1].get("type") == "run_end":
        return events, None
    steps = max((e.get("step", 0) for e in events if isinstance(e.get("step"), int)), default=0)
    closed = {
        "type": "run_end",
        "seq": max((e.get("seq", 0) for e in events if isinstance(e.get("seq"), int)), default=0) + 1,
        "t": max((e.get("t", 0.0) for e in events if isinstance(e.get("t"), int | float)), default=0.0),
        "status": "interrupted",
        "totals": {
            "steps": steps,
            "model_calls": sum(1 for e in events if e.get("type") == "model_call"),
            "tool_calls": sum(1 for e in events if e.get("type") == "tool_call"),
        },
        "note": "closed by agentevals promote: the recording was cut off before its run_end",
    }
    return events, closed


def write_test(test_dir: Path, name: str, mode: str, source: Path, task: Any = None) -> PromotedTest:
    """`test_dir/test_replay_NAME.py`, replaying the cassette NAME in `mode`; an existing file is kept.
    A recorded command's (or Python program's) test says that it runs again by itself (no hook to
    write)."""
    ident = re.sub(r"\W", "_", name)
    path = test_dir / f"test_replay_{ident}.py"
    if path.exists():
        return PromotedTest(path, existed=True)
    test_dir.mkdir(parents=True, exist_ok=True)
    command = recorded_command(task)
    template = TEST_TEMPLATE if command is None else COMMAND_TEMPLATE
    label = command.label if command is not None else ""
    kind = "command" if isinstance(command, Command) else "program"
    text = template.format(name=name, mode=mode, ident=ident, source=source.name, command=label, kind=kind)
    write_atomic(path, text)
    return PromotedTest(path, existed=False)


def _shown(path: Path) -> Path:
    """`path` as a person at the current directory names it."""
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path
