"""`agentevals step extract TRACE --steps 12,40 --out goldens/x.yaml` (or `--kind ...`): freeze the
context at those decisions of a recorded run as golden step cases. `agentevals step points TRACE`
lists the decision points a trace has."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..errors import AgentEvalsError, GoldenError, TraceError
from ..step.extract import decision_points, extract
from ..step.kinds import KIND_NAMES
from ..step.write import write_cases
from ..trace.reader import read_trace
from .common import settings_of


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
    extract_parser.add_argument(
        "--out", help="the goldens file to write (default: <goldens_dir>/<trace name>.yaml)"
    )
    extract_parser.add_argument("--append", action="store_true", help="add the cases to an existing --out")
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


def _trace_name(trace: Path) -> str:
    name = trace.name
    for suffix in (".trace.jsonl", ".jsonl"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return trace.stem


def main_extract(args: argparse.Namespace) -> int:
    trace = Path(args.trace)
    if not args.steps and not args.kind:
        raise AgentEvalsError("say which decisions to take: --steps 12,40 and/or --kind tool_choice|...")
    settings = settings_of(args)
    out = Path(args.out) if args.out else settings.goldens_dir / f"{_trace_name(trace)}.yaml"
    points = extract(trace, args.steps, args.kind)
    written = write_cases(out, points, str(trace), args.scenario, args.append)
    print(f"wrote {len(written.case_ids)} step case(s) to {written.path}:")
    for case_id, point in zip(written.case_ids, points, strict=True):
        print(f"  {case_id}  ({point.kind}, from line {point.line}: {point.what})")
    if written.exchanges:
        print(f"seeded {written.store} with their recorded model exchanges ({written.exchanges} in all)")
    print(f"edit the expectations, then run: pytest {written.path} -m step")
    return 0


def main_points(args: argparse.Namespace) -> int:
    try:
        events = read_trace(args.trace)
    except TraceError as exc:
        raise GoldenError(
            args.trace, f"cannot be read: {exc}", "give a trace recorded by agentevals"
        ) from None
    points = decision_points(events)
    if not points:
        print(f"{args.trace}: no decision points")
        return 0
    print(f"{'step':>5}  {'kind':<12} {'line':>5}  what")
    for point in points:
        print(f"{point.step:>5}  {point.kind:<12} {point.line:>5}  {point.what}: {_decision_line(point)}")
    return 0


def _decision_line(point: Any) -> str:
    decision = point.decision
    if decision.tool_calls:
        return ", ".join(f"{call.name}({json.dumps(dict(call.input))[:60]})" for call in decision.tool_calls)
    if decision.escalation is not None:
        return f"{decision.escalation.action} ({decision.escalation.kind})"
    if point.kind == "escalation":
        return "carried on (no escalation)"
    return repr(decision.summary_text[:60])
