"""`agentevals promote TRACE --name NAME`: an incident becomes a replay test.

Copies a recorded run (from `agentevals record`, a failing marathon, a test's trace) into the
cassette directory as `NAME.trace.jsonl`, scrubbed of secrets, and writes `test_replay_NAME.py`,
a replay test that starts the agent through the `pytest_agentevals_run_agent` hook (or, for a run
recorded by `agentevals record`, runs its program again). A run cut off mid-write keeps every
complete event and is closed with a run_end of status "interrupted". Nothing existing is
overwritten unless `--force` says so.
"""

from __future__ import annotations

import argparse
import re
import sys
import warnings
from pathlib import Path
from typing import Any

from ..errors import AgentEvalsError, CassetteError, TraceFormatError
from ..fileio import atomic_path, write_atomic
from ..replay import MODES, load_cassette
from ..settings import Settings
from ..trace.reader import TraceReader
from ..trace.writer import TraceWriter

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")

TEST_TEMPLATE = '''"""Replay of the incident {name!r}, promoted from {source} by `agentevals promote`.

The replay serves the recorded model and tool responses ({mode} mode); the agent is started on the
recorded task by the `pytest_agentevals_run_agent(run)` hook in conftest.py (see
docs/replay.md). Add the assertions that say what must hold.
"""

import pytest


@pytest.mark.replay({name!r}, mode={mode!r})
def test_replay_{ident}(agentevals_replay):
    agentevals_replay.run_agent()
'''


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "promote",
        help="copy a recorded run into the cassettes, scrubbed, and write a replay test for it",
        description="Turn a recorded run (an incident) into a regression test: TRACE is copied, scrubbed "
        "of secrets, to CASSETTE_DIR/NAME.trace.jsonl, and TEST_DIR/test_replay_NAME.py replays it.",
    )
    parser.add_argument("trace", help="the recorded run (.trace.jsonl)")
    parser.add_argument("--name", required=True, help="the cassette's name (letters, digits, - _ .)")
    parser.add_argument(
        "--mode", choices=MODES, help="the test's replay mode (default: [tool.agentevals] replay_mode)"
    )
    parser.add_argument(
        "--cassette-dir",
        help="default: [tool.agentevals] cassette_dir; a relative path is taken from the project root "
        "(the folder of the nearest pyproject.toml), as the setting's is",
    )
    parser.add_argument(
        "--test-dir", default="tests", help="where the test file goes, from the project root (default: tests)"
    )
    parser.add_argument(
        "--no-test", action="store_true", help="copy the cassette only (it is collected anyway)"
    )
    parser.add_argument("--force", action="store_true", help="replace an existing cassette of that name")
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    if not _NAME.match(args.name):
        raise AgentEvalsError(f"--name {args.name!r}: use letters, digits, '-', '_' and '.' only")
    settings = Settings.for_command_line({"cassette_dir": args.cassette_dir, "replay_mode": args.mode})
    target = settings.cassette_dir / f"{args.name}.trace.jsonl"
    if target.exists() and not args.force:
        raise AgentEvalsError(f"{target} exists: choose another --name, or --force to replace it")
    source = Path(args.trace)
    events, closed = complete_events(source)
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
    notes = [f"{len(events) - (closed is not None)} events"]
    if closed:
        notes.append("closed as interrupted")
    if writer.scrubber.redactions:
        notes.append(f"{writer.scrubber.redactions} secret(s) scrubbed")
    print(f"agentevals promote: wrote {target} ({', '.join(notes)})")
    if not args.no_test:
        _write_test(settings.rootdir / args.test_dir, args.name, settings.replay_mode, source)
    return 0


def complete_events(source: Path) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The trace's complete events, and a run_end to append when the run never wrote one."""
    reader = TraceReader(source)
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


def _write_test(test_dir: Path, name: str, mode: str, source: Path) -> None:
    ident = re.sub(r"\W", "_", name)
    path = test_dir / f"test_replay_{ident}.py"
    if path.exists():
        print(f"agentevals promote: {path} exists; left it as it is", file=sys.stderr)
        return
    test_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(path, TEST_TEMPLATE.format(name=name, mode=mode, ident=ident, source=source.name))
    print(f"agentevals promote: wrote {_shown(path)}")


def _shown(path: Path) -> Path:
    """`path` as a person at the current directory names it."""
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path
