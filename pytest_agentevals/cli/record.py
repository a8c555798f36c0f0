"""`agentevals record [-o OUT] script.py [args]` / `-m module [args]` / `-- COMMAND [args]`: run a
program, recording it.

The recording is `recording/program.py`'s; the program's words are taken as python takes them (see
`cli/program.py`); the trace keeps its real argv as the run's task, `{"argv": ["-m", "module", ...args]}`.
A command that is not a Python script (`-- node agent.js`, `-- claude -p ...`) runs as a subprocess
with `ANTHROPIC_BASE_URL` pointing at the model endpoint (`endpoint/`), for it and its children; its
task is `{"command": [...]}`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..endpoint.command import children_pointed, run_command
from ..errors import AgentEvalsError
from ..guards import guards_for
from ..recording.program import default_output, new_trace, record_program
from ..recording.verify import check_command
from ..settings import Settings
from ..settings.argv import Command
from . import program as words


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "record",
        help="run a program as python would, recording its model calls, tool calls and events",
        description="Run script.py [args] or -m module [args] (or -- COMMAND [args]) with recording on; "
        "the trace is written even if the program fails or is interrupted. Exit status: the program's "
        "own; 2 for an error of agentevals'; 3 when a guard stopped the run; 4 when the program exited "
        "0 but made no model call (the run checked nothing; --allow-no-model-calls lets its 0 stand).",
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        help="the trace file to write (default: under "
        "[tool.agentevals] traces_dir, named after the program and the time)",
    )
    parser.add_argument("--agent", help="the agent's name in the trace (default: the program's name)")
    parser.add_argument(
        "--seed",
        type=int,
        help="the run's seed, written to the trace (default: the program's own --seed N, when it has one)",
    )
    parser.add_argument("--force", action="store_true", help="replace the -o file if it exists")
    parser.add_argument(
        "--allow-no-model-calls",
        action="store_true",
        help="exit with the program's status even if it made no model call (default: exit 4, since a run "
        "that called no model checked nothing; the trace ends no_model_calls either way)",
    )
    parser.add_argument(
        "--budget",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a run budget over [tool.agentevals.budget], repeatable or comma-separated: max_calls=200, "
        "max_cost_usd=5, max_daily_cost_usd=50, stall_calls=20... (docs/guards.md)",
    )
    parser.add_argument(
        "--upstream",
        metavar="URL",
        help="where the model requests reaching the endpoint are forwarded (default: ANTHROPIC_BASE_URL, "
        "else the Anthropic API)",
    )
    parser.add_argument(
        "--checkpoint-every",
        type=int,
        metavar="N",
        help="with -- COMMAND: a checkpoint at every N-th model request (the conversation, and the "
        "working folder as its workspace), for agentevals resume extract (docs/endpoint.md)",
    )
    parser.add_argument(
        "--verify",
        metavar="CMD",
        help="a check of the work, run after the program in the current folder (e.g. 'python -m pytest "
        "-q'; split as a shell splits words, run without one): its exit code 0 or not is the run's "
        "verification event, so the report can tell a verified pass from a false claim",
    )
    words.add_program_arguments(parser)
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    program = words.program_of(args.program)
    verify = check_command("--verify", args.verify) if args.verify is not None else None
    # --budget is the budget setting's command-line form: laid over [tool.agentevals.budget] there.
    settings = Settings.for_command_line({"budget": args.budget or None})
    output = new_trace(
        Path(args.output) if args.output else default_output(program, settings), force=args.force
    )
    seed = args.seed if args.seed is not None else words.seed_in(program.argv)
    guards = guards_for(settings.budget, ledger=settings.ledger, unreachable=settings.ledger_unreachable)
    runner = around = None
    argv, upstream = program.argv, args.upstream
    if isinstance(program, Command):
        every = args.checkpoint_every
        runner = lambda: run_command(argv, upstream=upstream, checkpoint_every=every)  # noqa: E731
    elif args.checkpoint_every is not None:
        raise AgentEvalsError(
            "--checkpoint-every is for a command run through the model endpoint (-- COMMAND ...); a "
            "Python harness reports its own checkpoints (pytest_agentevals.checkpoint)"
        )
    else:
        # A Python program runs here, its subprocesses (a harness spawning `claude`) through an endpoint.
        around = lambda: children_pointed(upstream=upstream)  # noqa: E731
    done = record_program(
        program,
        output,
        settings,
        agent=args.agent,
        seed=seed,
        guards=guards,
        runner=runner,
        around=around,
        verify=verify,
        allow_no_model_calls=args.allow_no_model_calls,
    )
    print(done.text(), file=sys.stderr)
    return done.code
