"""`agentevals record [-o OUT] script.py [args]` / `-m module [args]`: run a program, recording it.

The program's words are taken as python takes them (see `cli/program.py`); the trace keeps its real
argv as the run's task, `{"argv": ["-m", "module", ...args]}`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import traceback
from pathlib import Path
from typing import Any

from ..errors import AgentEvalsError, RunStopped
from ..guards import guards_for
from ..recording import program as program_runner
from ..recording.factory import recorder_for
from ..settings import Settings
from ..trace.summary import summarize
from . import program as words


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "record",
        help="run a program as python would, recording its model calls, tool calls and events",
        description="Run script.py [args] or -m module [args] with recording on; the trace is written "
        "even if the program fails or is interrupted.",
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        help="the trace file to write (default: under "
        "[tool.agentevals] trace_dir, named after the program and the time)",
    )
    parser.add_argument("--agent", help="the agent's name in the trace (default: the program's name)")
    parser.add_argument("--seed", type=int, help="the run's seed, written to the trace")
    parser.add_argument(
        "--budget",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a run budget over [tool.agentevals.budget], repeatable or comma-separated: max_calls=200, "
        "max_cost_usd=5, max_daily_cost_usd=50, stall_calls=20... (docs/guards.md)",
    )
    words.add_program_arguments(parser)
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    program = words.program_of(args.program)
    # --budget is the budget setting's command-line form: laid over [tool.agentevals.budget] there.
    settings = Settings.for_command_line({"budget": args.budget or None})
    if args.output:
        output = Path(args.output)
    else:
        stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        output = settings.trace_dir / f"{program.stem}-{stamp}.trace.jsonl"
    if output.exists():
        # Appending a second run to a trace would corrupt it; overwriting would lose the first.
        print(
            f"agentevals record: error: {output} exists; choose another -o or move it away", file=sys.stderr
        )
        return 2
    recorder = recorder_for(
        output,
        settings,
        agent=args.agent or program.stem,
        seed=args.seed,
        task={"argv": program.argv},
        guards=guards_for(settings.budget, ledger=settings.ledger),
    )
    try:
        with recorder:
            code = program_runner.run(program)
            if recorder.status is None:  # the program may have said how its run ended
                recorder.end("ok" if code == 0 else "failed")
    except KeyboardInterrupt:
        code = 130
    except RunStopped as exc:
        # A guard stopped the run (or refused to start it): said plainly, not as a traceback.
        print(f"agentevals record: {exc}", file=sys.stderr)
        code = 3
    except AgentEvalsError as exc:
        # Ours (a model with no price under a cost budget, an unreadable ledger): the message is the fix.
        print(f"agentevals record: error: {exc}", file=sys.stderr)
        code = 2
    except Exception:
        # The program's own failure: shown as python shows it; the trace keeps it too.
        traceback.print_exc()
        code = 1
    summary = summarize(output)
    print(
        f"agentevals record: wrote {output} ({summary.steps} steps, ended {summary.status}, "
        f"${summary.cost_usd:.4f}); `agentevals show {output}` tells more",
        file=sys.stderr,
    )
    return code
