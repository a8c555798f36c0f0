"""`agentevals triage rank|fork|shrink`: from a failing run to the step that caused it, and to the
smallest test that still fails (`pytest_agentevals.triage`, docs/triage.md)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..errors import TriageError
from ..guards import Budget
from ..trace.loaders import load_json
from ..trace.naming import TRACE_SUFFIX, trace_files
from ..triage import fork, load_run, load_runs, rank, shrink, write_case
from ..triage.render import fork_shown, ranking_shown, shrunk_text
from .common import add_format, named_object


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "triage",
        help="why a run failed: rank its steps over seeds, fork and re-drive at one, shrink it to a test",
        description="Triage a failing run: `rank` the steps that separate failing seeds from passing "
        "ones, `fork` at a step (replay strictly to it, change the decision there, re-drive live N "
        "times), `shrink` the decisive step's context to the smallest test that still fails.",
    )
    commands = parser.add_subparsers(dest="triage_command", metavar="STEP")
    ranked = commands.add_parser(
        "rank",
        help="rank the steps of the failing runs by how much they separate failing from passing runs",
        description="Each TRACE is a run (a folder: every *.trace.jsonl under it); a run that is not a "
        "verified pass counts as failing. Prints each failing run's most suspicious steps with the "
        "features that make them so. Exit 0.",
    )
    ranked.add_argument("traces", nargs="+", metavar="TRACE", help="trace files or folders of them")
    ranked.add_argument("--top", type=int, default=3, help="candidates shown per failing run (default: 3)")
    add_format(ranked, ("text", "json"))
    ranked.set_defaults(func=rank_main)
    forked = commands.add_parser(
        "fork",
        help="re-drive a failing run from a step with another decision there: is it where it failed?",
        description="Replay TRACE strictly up to step K, put another decision at K (the closest passing "
        "run's at the same point of its work, or --decision), run forward live N times against the "
        "simulated model, seeded, under the run's budget, and print the recovery rate with its 95%% "
        "interval: 'fixed at K', 'not at K' or 'cannot tell'. Exit 0.",
    )
    forked.add_argument("trace", help="the failing run (.trace.jsonl)")
    forked.add_argument("--step", type=int, required=True, help="the step to fork at (from rank)")
    forked.add_argument(
        "--drive",
        required=True,
        metavar="MODULE:FUNCTION",
        help="runs the agent: FUNCTION(base_url, task, workspace), task as the trace's run_start holds it",
    )
    forked.add_argument(
        "--model",
        required=True,
        metavar="MODULE:FUNCTION",
        help="the live model after the step: FUNCTION(seed) returns a policy of the simulated server",
    )
    forked.add_argument(
        "--passing",
        nargs="+",
        default=[],
        metavar="TRACE",
        help="passing runs (files or folders) to take the decision from",
    )
    forked.add_argument(
        "--decision",
        metavar="JSON",
        help='the decision to put at the step instead: content blocks, e.g. \'[{"type": "tool_use", '
        '"name": "read_file", "input": {"path": "t008.txt"}}]\'',
    )
    forked.add_argument("-n", type=int, default=10, help="re-drives (default: 10)")
    forked.add_argument("--seed", type=int, default=0, help="the first re-drive's seed (default: 0)")
    forked.add_argument(
        "--budget",
        action="append",
        metavar="KEY=VALUE",
        help="the guards' budget of each re-drive (default: the one the run was recorded under)",
    )
    forked.add_argument(
        "--min-rate", type=float, default=0.5, help="the recovery rate that says 'fixed' (default: 0.5)"
    )
    forked.add_argument(
        "--keep",
        metavar="DIR",
        help="keep each re-drive's trace in DIR (default: a temporary folder, removed after)",
    )
    add_format(forked, ("text", "json"))
    forked.set_defaults(func=fork_main)
    shrunk = commands.add_parser(
        "shrink",
        help="cut a failing run's decisive step down to the smallest test that still fails",
        description="ddmin over the context of step K of TRACE (the earlier steps, then their tool "
        "answers) while the agent's DECIDE function still makes the decision recorded at K; writes "
        "test_triage_NAME.py, NAME.triage.json (the case and its provenance) and "
        "NAME.original.trace.jsonl (the run) into the output folder. Exit 0.",
    )
    shrunk.add_argument("trace", help="the failing run (.trace.jsonl)")
    shrunk.add_argument("--step", type=int, required=True, help="the decisive step (from rank, or fork)")
    shrunk.add_argument(
        "--decide",
        required=True,
        metavar="MODULE:FUNCTION",
        help="the agent's decision on one request body (content blocks back), imported as python -m "
        "would from the working directory, e.g. examples.taskrunner.planted:decide",
    )
    shrunk.add_argument("--name", required=True, help="the test's name (letters, digits, - and _)")
    shrunk.add_argument("-o", "--output", default="tests", help="the folder to write to (default: tests)")
    shrunk.add_argument("--force", action="store_true", help="replace files of that name")
    shrunk.set_defaults(func=shrink_main)
    parser.set_defaults(func=lambda args: _help(parser))


def _help(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def traces_in(paths: list[str]) -> list[Path]:
    """The traces named, as `agentevals report` finds them (`trace_files`), refusing a name that is
    neither a file nor a folder and a folder holding no trace: triage of nothing is a mistake."""
    for name in paths:
        path = Path(name)
        if not path.is_dir() and not path.is_file():
            raise TriageError(f"{path}: no such trace file or folder")
        if path.is_dir() and not trace_files([path]):
            raise TriageError(f"{path}: no *{TRACE_SUFFIX} in this folder")
    return trace_files(paths)


def rank_main(args: argparse.Namespace) -> int:
    if args.top < 1:
        raise TriageError(f"--top {args.top}: show at least one candidate (--top 3)")
    ranking = rank(load_runs(traces_in(args.traces)))
    print(ranking_shown(ranking, args.top, args.format))
    return 0


def imported(name: str, flag: str) -> Any:
    """The function a `module:function` flag names, imported from the working directory as python -m
    would import it."""
    found = named_object(name, f"{flag} {name!r}", "name it as module:function", TriageError)
    if not callable(found):
        raise TriageError(f"{flag} {name!r}: not a function")
    return found


def shrink_main(args: argparse.Namespace) -> int:
    decide = imported(args.decide, "--decide")
    shrunk = shrink(load_run(args.trace), args.step, decide)
    written = write_case(shrunk, args.output, args.name, args.decide, force=args.force)
    print(shrunk_text(shrunk, written))
    return 0


def decision_of(text: str) -> list[dict[str, Any]]:
    """--decision's JSON: a list of content blocks, or one block."""
    value = load_json(text, lambda line, problem: TriageError(f"--decision: {problem}"))
    blocks = [value] if isinstance(value, dict) else value
    if not isinstance(blocks, list) or not blocks or not all(isinstance(b, dict) for b in blocks):
        raise TriageError('--decision: give content blocks, e.g. [{"type": "text", "text": "..."}]')
    return blocks


def fork_main(args: argparse.Namespace) -> int:
    drive = imported(args.drive, "--drive")
    model = imported(args.model, "--model")
    run = load_run(args.trace)
    passing = [r for r in load_runs(traces_in(args.passing)) if r.passed] if args.passing else []
    result = fork(
        run,
        args.step,
        drive=drive,
        model=model,
        replacement=decision_of(args.decision) if args.decision else None,
        passing=passing,
        n=args.n,
        seed=args.seed,
        budget=Budget.parse("--budget", args.budget) if args.budget else None,
        min_rate=args.min_rate,
        workdir=args.keep,
    )
    print(fork_shown(result, args.format))
    return 0
