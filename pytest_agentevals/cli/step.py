"""`agentevals step extract TRACE --steps 12,40 --out goldens/x.yaml` (or `--kind ...`): freeze the
context at those decisions of a recorded run as golden step cases. `agentevals step points TRACE`
lists the decision points a trace has."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..errors import AgentEvalsError
from ..step import render
from ..step.extract import extract, points_in
from ..step.kinds import KIND_NAMES
from ..step.write import default_out, write_cases
from .common import add_output, settings_of


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "step",
        help="golden step cases: extract them from a recorded run, list a run's decision points",
        description="Golden step cases for the step layer (pytest -m step).",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    extract_parser = actions.add_parser(
        "extract",
        help="freeze the context at decisions of a recorded run as step cases",
        description="Freeze the context at the given steps (or at every decision of the given kinds) of a "
        "recorded run as golden step cases, the recorded decision as the starting expectation, and seed "
        "their recorded model exchanges so the cases replay offline at once.",
    )
    extract_parser.add_argument("trace", help="a recorded run (*.trace.jsonl), an incident's included")
    extract_parser.add_argument("--steps", type=_steps, default=(), help="steps to take, e.g. 12,40 or 10-15")
    extract_parser.add_argument(
        "--kind",
        action="append",
        choices=KIND_NAMES,
        default=[],
        help="take every decision of this kind (repeatable); with --steps, only these kinds at those steps",
    )
    add_output(
        extract_parser, "the goldens file to write (default: <goldens_dir>/<trace name>.yaml)", old=["--out"]
    )
    extract_parser.add_argument("--append", action="store_true", help="add the cases to an existing --output")
    extract_parser.add_argument("--scenario", help="the scenario's name (default: the file's name)")
    extract_parser.set_defaults(func=main_extract)
    points_parser = actions.add_parser(
        "points",
        help="list the decision points of a recorded run",
        description="List the decisions a recorded run holds (tool choices, compactions, escalations), "
        "with their step and line, to choose what to extract as step cases.",
    )
    points_parser.add_argument("trace", help="a recorded run (*.trace.jsonl)")
    points_parser.set_defaults(func=main_points)
    parser.set_defaults(func=lambda args: _usage(parser))


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def _steps(raw: str) -> tuple[int, ...]:
    steps: list[int] = []
    try:
        for part in raw.split(","):
            part = part.strip()
            if "-" in part:
                first, last = (int(x) for x in part.split("-", 1))
                steps.extend(range(first, last + 1))
            elif part:
                steps.append(int(part))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{raw!r} is not a list of steps (write 12,40 or 10-15)") from None
    return tuple(steps)


def main_extract(args: argparse.Namespace) -> int:
    trace = Path(args.trace)
    if not args.steps and not args.kind:
        raise AgentEvalsError("say which decisions to take: --steps 12,40 and/or --kind tool_choice|...")
    settings = settings_of(args)
    out = Path(args.output) if args.output else default_out(trace, settings.goldens_dir)
    points = extract(trace, args.steps, args.kind)
    print(render.written(write_cases(out, points, str(trace), args.scenario, args.append), points))
    return 0


def main_points(args: argparse.Namespace) -> int:
    print(render.points_table(args.trace, points_in(args.trace)))
    return 0
