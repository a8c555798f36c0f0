"""`agentevals marathon`: the verdict table from stored results, two commits compared, CI jobs merged.

    agentevals marathon report [RESULTS...] [--pool] [--format text|json|markdown | --json]  # 1: below
    agentevals marathon compare --base REF --head REF [RESULTS...] [--format ...]            # 1: regressed
    agentevals marathon merge IN... --out OUT [--json]

RESULTS are results files or folders holding them (default: `[tool.agentevals] marathon_dir`). A REF
is a commit (or its first characters), a branch the results name, a git ref, or a results file or
folder of its own.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

from ..errors import MarathonError
from ..marathon import compare as comparing
from ..marathon import render, stored
from ..marathon.merge import gather, merge
from ..marathon.results import SeedResult, results_in
from .common import add_format, add_setting, settings_of

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
        "artifact's .agentevals/marathons/ included), and writes OUT/results.jsonl with each seed's trace "
        "beside it. Never drops a seed; refuses two results of one seed and commit that disagree.",
    )
    merging.add_argument("inputs", nargs="+", metavar="IN", help="results files, or folders holding them")
    merging.add_argument("--out", required=True, type=Path, help="the folder to write the merged night into")
    add_format(merging, ("text", "json"))
    merging.set_defaults(func=run_merge)


def _results(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "results",
        nargs="*",
        metavar="RESULTS",
        help="results files, or folders holding them (default: [tool.agentevals] marathon_dir)",
    )
    add_setting(parser, "marathon_dir", metavar="DIR")


def _load(args: argparse.Namespace) -> list[SeedResult]:
    given = list(args.results) or [str(settings_of(args).marathon_dir)]
    results, problems = stored.load(given)
    for problem in problems:
        print(f"agentevals marathon: warning: {problem}", file=sys.stderr)
    return results


def run_report(args: argparse.Namespace) -> int:
    verdicts = stored.verdicts_of(_load(args), pool=args.pool)
    if args.format == "json":
        print(render.as_json(verdicts))
    elif args.format == "markdown":
        print(render.markdown(verdicts, stored.trace_of), end="")
    else:
        print(render.text(verdicts, stored.trace_of))
    return BELOW_EXIT if any(verdict.fails for verdict in verdicts) else 0


# -- compare -------------------------------------------------------------------------------------------------


def _side(ref: str, pool: list[SeedResult], flag: str) -> tuple[str, list[SeedResult]]:
    """The runs a REF names: a results file or folder, else a commit, its prefix, a branch or a git ref."""
    path = Path(ref)
    if path.exists():
        runs = [result for result, _ in gather(results_in([path]))[0].values()]
        return ref, runs
    commits = {r.commit for r in pool if r.commit}
    named = {c for c in commits if c == ref or (len(ref) >= 4 and c.startswith(ref))}
    if not named:
        named = {r.commit for r in pool if r.commit and r.branch == ref}
    if not named:
        sha = _git_sha(ref)
        named = {c for c in commits if sha is not None and c.split("+", 1)[0] == sha}
    if not named:
        raise MarathonError(f"{flag} {ref}: no marathon result names that commit, branch or git ref")
    if len(named) > 1:
        raise MarathonError(
            f"{flag} {ref}: names {len(named)} commits "
            f"({', '.join(sorted(c[:12] for c in named))}): give one sha"
        )
    (commit,) = named
    return commit[:12], [r for r in pool if r.commit == commit]


def _git_sha(ref: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return (done.stdout.strip() or None) if done.returncode == 0 else None


def run_compare(args: argparse.Namespace) -> int:
    needs_pool = not (Path(args.base).exists() and Path(args.head).exists())
    pool = _load(args) if needs_pool else []
    base_name, base = _side(args.base, pool, "--base")
    head_name, head = _side(args.head, pool, "--head")
    try:
        comparisons = comparing.compare(base, head)
    except ValueError as exc:
        raise MarathonError(str(exc)) from None
    if args.format == "json":
        data = {"base": base_name, "head": head_name, "tests": [c.to_json() for c in comparisons]}
        print(json.dumps(data, indent=2, allow_nan=False))
    elif args.format == "markdown":
        print(comparing.markdown(comparisons, base_name, head_name), end="")
    else:
        print(comparing.text(comparisons, base_name, head_name))
    return BELOW_EXIT if any(c.regressed for c in comparisons) else 0


# -- merge ---------------------------------------------------------------------------------------------------


def run_merge(args: argparse.Namespace) -> int:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        done = merge(args.inputs, args.out)
    for warning in caught:
        print(f"agentevals marathon merge: warning: {warning.message}", file=sys.stderr)
    if args.format == "json":
        print(json.dumps(done.to_json(), indent=2))
    else:
        print("\n".join(done.lines()))
    return 0
