"""`agentevals replay TRACE [--mode strict|sequential] script.py [args]` (or `-m module [args]`, or
`-- COMMAND [args]`): run a program with a recorded run's model and tool responses, offline — the
counterpart of `record`. A command runs as a subprocess pointed at the model endpoint, with a
placeholder key; a Python program's own subprocesses are pointed at one too, as `record` points them.

The replay is `replay/program.py`'s, through the engine's `ReplayRun` as in pytest; the program's
words are taken as python takes them (see `cli/program.py`).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path
from typing import Any

from ..endpoint.command import children_pointed, run_command
from ..endpoint.replayed import has_start_workspace, recorded_workspace
from ..replay import MODES
from ..replay.program import replay_program
from ..settings.argv import Command
from . import program as words
from .common import add_output, add_renamed, settings_of


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "replay",
        help="run a program against a recorded run's responses: offline, no key, loud on divergence",
        description="Run script.py [args] or -m module [args] with the model and @tool responses of "
        "TRACE. The network is blocked except loopback. strict (default) stops at the first request "
        "that differs from the recording with a diff; sequential serves the recorded responses in "
        "order and reports the differences.",
    )
    parser.add_argument("trace", help="a .trace.jsonl trace, or a vcrpy/pytest-recording .yaml cassette")
    parser.add_argument(
        "--replay-mode", choices=MODES, help="strict or sequential (default: [tool.agentevals] replay_mode)"
    )
    add_renamed(parser, "--replay-mode", ["--mode"], dest="replay_mode", choices=MODES)
    parser.add_argument(
        "--from-step", type=int, metavar="N", help="start after the last checkpoint at or before step N"
    )
    add_output(parser, "also record the replayed run into this trace", metavar="OUT")
    parser.add_argument(
        "--no-contract-check", action="store_true", help="replay even if the cassette looks stale"
    )
    words.add_program_arguments(parser)
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    program = words.program_of(args.program)
    argv = program.argv if isinstance(program, Command) else None
    settings = settings_of(args)
    trace = Path(args.trace)
    with contextlib.ExitStack() as stack:
        # A Python program's run of `agentevals record` re-runs in a fresh copy of the folder it
        # started in (a replay from a later checkpoint leaves the harness to restore its own state,
        # in the current folder). A command runs in the current folder, set up as the user wants it
        # (the promoted test of one runs it in the copy: endpoint/replayed.py).
        cwd = None
        if argv is None and args.from_step is None and has_start_workspace(trace):
            cwd = stack.enter_context(recorded_workspace(trace, program, Path.cwd()))
        done = replay_program(
            program,
            args.trace,
            settings,
            from_step=args.from_step,
            # (the program runs in another folder: its trace is named from this one)
            output=(Path(args.output).resolve() if cwd else Path(args.output)) if args.output else None,
            check_contract=not args.no_contract_check,
            runner=(lambda: run_command(argv)) if argv is not None else None,
            # A Python program's subprocesses (a harness spawning `claude`) are answered from the replay
            # through an endpoint, as `record` records them: none goes around it to a live API.
            around=children_pointed if argv is None else None,
            cwd=cwd,
        )
    if done.text():
        print(done.text(), file=sys.stderr)
    return done.code
