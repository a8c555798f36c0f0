"""`agentevals marathon`: the verdict table from stored results, two commits compared, CI jobs merged.

    agentevals marathon report [RESULTS...] [--pool] [--format text|json|markdown | --json]  # 1: below
    agentevals marathon compare --base REF --head REF [RESULTS...] [--format ...]            # 1: regressed
    agentevals marathon merge IN... --out OUT [--json]

RESULTS are results files or folders holding them (default: `[tool.agentevals] marathons_dir`). A REF
is a commit (or its first characters), a branch the results name, a git ref, or a results file or
folder of its own.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path
from typing import Any

from ..errors import ConfigError, MarathonError
from ..marathon import compare as comparing
from ..marathon import render, stored
from ..marathon.merge import merge
from ..marathon.results import SeedResult
from .common import add_format, add_output, add_setting, settings_of

BELOW_EXIT = 1  # a verdict below its bar (report), a regression (compare)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "marathon",
        help="marathon verdicts from stored results, compare two commits, merge CI jobs",
        description="The marathon layer's results (JSON Lines written by pytest -m marathon): the verdict "
        "over each test's seeds, two commits' runs compared seed by seed, several CI jobs merged into one.",
    )
    commands = parser.add_subparsers(dest="marathon_command", metavar="ACTION", required=True)

    report = commands.add_parser(
        "report",
        help="the verdict table over each marathon test's seeds (exit 1 when one is below its bar)",
        description="The verdict over each test's seeds at each commit: n, the verified-pass rate with its "
        "Wilson 95%% interval, pass@k and pass^k, mean progress-AUC, loop rate and cost with bootstrap "
        "intervals, the exit statuses, and each bar judged on its interval. Exit code 1 when a whole "
        "interval is on the wrong side of its bar (the night fails), 0 otherwise.",
    )
    _results(report)
    report.add_argument(
        "--pool",
        action="store_true",
        help="pool every commit's runs of a test into one verdict (several nights of unchanged code)",
    )
    add_setting(report, "budget_stops", metavar="exclude|fail")
    add_format(report, ("text", "json", "markdown"))
    report.set_defaults(func=run_report)

    compare = commands.add_parser(
        "compare",
        help="two commits' runs paired by test and seed: regressed, improved, or no difference detectable",
        description="Pairs the runs of each marathon test at two commits by seed: the exact McNemar test on "
        "verified pass, a paired bootstrap on progress-AUC and cost. Exit code 1 when the head regressed.",
    )
    compare.add_argument("--base", required=True, metavar="REF", help="the commit to compare against")
    compare.add_argument("--head", required=True, metavar="REF", help="the commit under test")
    _results(compare)
    add_format(compare, ("text", "json", "markdown"))
    compare.set_defaults(func=run_compare)

    merging = commands.add_parser(
        "merge",
        help="the results and traces of several CI jobs, in one folder",
        description="Reads every results file given, or found under the folders given (a downloaded "
        "artifact's .agentevals/marathons/ included), and writes OUTPUT/results.jsonl with each seed's trace "
        "beside it. Never drops a seed; refuses two results of one seed and commit that disagree.",
    )
    merging.add_argument("inputs", nargs="+", metavar="IN", help="results files, or folders holding them")
    add_output(merging, "the folder to write the merged night into (required)", old=["--out"], type=Path)
    add_format(merging, ("text", "json"))
    merging.set_defaults(func=run_merge)


def _results(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "results",
        nargs="*",
        metavar="RESULTS",
        help="results files, or folders holding them (default: [tool.agentevals] marathons_dir)",
    )
    add_setting(parser, "marathons_dir", metavar="DIR")


def _load(args: argparse.Namespace) -> list[SeedResult]:
    given = list(args.results) or [str(settings_of(args).marathons_dir)]
    results, problems = stored.load(given)
    for problem in problems:
        print(f"agentevals marathon: warning: {problem}", file=sys.stderr)
    return results


def run_report(args: argparse.Namespace) -> int:
    verdicts = stored.verdicts_of(_load(args), pool=args.pool, budget_stops=settings_of(args).budget_stops)
    if args.format == "json":
        print(render.as_json(verdicts))
    elif args.format == "markdown":
        print(render.markdown(verdicts, stored.trace_of), end="")
    else:
        print(render.text(verdicts, stored.trace_of))
    return BELOW_EXIT if any(verdict.fails for verdict in verdicts) else 0


# -- compare -------------------------------------------------------------------------------------------------


def run_compare(args: argparse.Namespace) -> int:
    needs_pool = not (Path(args.base).exists() and Path(args.head).exists())
    pool = _load(args) if needs_pool else []
    base_name, base = stored.runs_named(args.base, pool, "--base")
    head_name, head = stored.runs_named(args.head, pool, "--head")
    try:
        comparisons = comparing.compare(base, head)
    except ValueError as exc:
        raise MarathonError(str(exc)) from None
    if args.format == "json":
        print(comparing.as_json(comparisons, base_name, head_name))
    elif args.format == "markdown":
        print(comparing.markdown(comparisons, base_name, head_name), end="")
    else:
        print(comparing.text(comparisons, base_name, head_name))
    nothing = comparing.nothing_paired(comparisons, base_name, head_name)
    if nothing is not None:
        raise MarathonError(nothing)
    return BELOW_EXIT if any(c.regressed for c in comparisons) else 0


# -- merge ---------------------------------------------------------------------------------------------------


def _output(args: argparse.Namespace) -> Path:
    if args.output is None:
        raise ConfigError("-o/--output", "is missing", "give the folder to write the merged night into")
    return Path(args.output)


def run_merge(args: argparse.Namespace) -> int:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        done = merge(args.inputs, _output(args))
    for warning in caught:
        print(f"agentevals marathon merge: warning: {warning.message}", file=sys.stderr)
    print(done.text(args.format))
    return 0
