"""`agentevals report TRACE... [-o report.html] [--format html|markdown]`: the run console."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..marathon import stored
from ..report import numbers
from ..report.build import FORMATS, build_report, write_report

DEFAULT_OUTPUT = "report.html"


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "report",
        help="draw runs as one self-contained HTML page: progress, context pressure, token spend, transcript",
        description="The run console: one HTML file (no network, no external file) showing each run's "
        "status and metrics, three aligned charts over its steps (verified progress; context pressure "
        "with the compaction mark; token spend by kind with cumulative cost and budget lines) with a "
        "marker for every incident, and its transcript. Several traces (a marathon's seeds) get an "
        "overview first. --format markdown prints a short summary instead, for $GITHUB_STEP_SUMMARY. "
        "A torn, truncated or newer-version trace is shown as far as it can be read, its problems "
        "stated at the top (exit 1 when a line in the middle is damaged); a file that is not a trace, "
        "or a report that would hold a key-shaped string, is an error (exit 2) and nothing is written.",
    )
    parser.add_argument(
        "traces", nargs="+", metavar="TRACE", help="a .trace.jsonl file, or a folder of them (searched below)"
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="PATH",
        help=f"where to write it (html: default {DEFAULT_OUTPUT}; markdown: default standard output)",
    )
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="html",
        help="html: the page, for a person; markdown: the headline numbers and verdicts, GitHub-flavoured",
    )
    parser.add_argument("--title", help="the page's title (default: the run's agent and status)")
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    verdicts, problems = stored.verdict_rows_under(args.traces)
    report = build_report(args.traces, title=args.title, verdicts=verdicts)
    for problem in [*problems, *report.problems]:
        print(f"agentevals report: warning: {problem}", file=sys.stderr)
    if args.format == "markdown" and args.output is None:
        sys.stdout.write(report.markdown())
    else:
        output = args.output or DEFAULT_OUTPUT
        size = write_report(report, output, args.format)
        runs = len(report.runs)
        print(
            f"agentevals report: wrote {output} ({runs} run{'s' if runs != 1 else ''}, {numbers.size(size)})"
        )
    return 1 if report.damaged else 0
