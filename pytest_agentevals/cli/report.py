"""`agentevals report TRACE... [-o report.html] [--format html|markdown]`: the run console."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..marathon import stored
from ..report import numbers
from ..report.build import FORMATS, build_report, write_report
from ..report.triage import load_triage

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
    parser.add_argument(
        "--triage",
        action="append",
        default=[],
        metavar="FILE",
        help="a triage result to show as its own section: what agentevals triage rank --json or "
        "triage fork --json printed (repeat for several)",
    )
    parser.add_argument(
        "--watch",
        action="store_true",
        help="the live console: serve the report on 127.0.0.1 and keep it up to date as the traces grow "
        "(new steps, markers and numbers without a reload; a folder's new traces as they appear); "
        "Ctrl-C stops it",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=0,
        metavar="N",
        help="with --watch: the port (default: a free one, printed)",
    )
    parser.add_argument(
        "--silent-after",
        type=float,
        default=None,
        metavar="SECONDS",
        help="with --watch: a run that has not ended is shown silent after this long without growing "
        "(default 60)",
    )
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    if args.watch:
        return watch(args)
    if args.port or args.silent_after is not None:
        raise SystemExit("agentevals report: --port and --silent-after go with --watch")
    verdicts, problems = stored.verdict_rows_under(args.traces)
    triage = [load_triage(path) for path in args.triage]
    report = build_report(args.traces, title=args.title, verdicts=verdicts, triage=triage)
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


def watch(args: argparse.Namespace) -> int:
    """Serve the live console until Ctrl-C."""
    from ..report.live import SILENT_AFTER, Watch
    from ..report.serve import ConsoleServer

    if args.format != "html" or args.output is not None:
        raise SystemExit("agentevals report: --watch serves the HTML page; it takes no -o or --format")
    if not 0 <= args.port <= 65535:
        raise SystemExit(f"agentevals report: --port {args.port}: give a port from 1 to 65535, or 0 for any")
    verdicts, problems = stored.verdict_rows_under(args.traces)
    for problem in problems:
        print(f"agentevals report: warning: {problem}", file=sys.stderr)
    silent = args.silent_after if args.silent_after is not None else SILENT_AFTER
    console = Watch(args.traces, title=args.title, verdicts=verdicts, silent_after=silent)
    console.refresh()  # a named file that is not a trace is an error now, not in the browser
    try:
        server = ConsoleServer(console, args.port)
    except OSError as exc:
        raise SystemExit(
            f"agentevals report: cannot listen on 127.0.0.1:{args.port}: {exc.strerror}"
        ) from None
    runs = len(console.runs)
    print(
        f"agentevals report: watching {runs} trace{'s' if runs != 1 else ''} at {server.url} (Ctrl-C stops)",
        flush=True,
    )
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        print("agentevals report: stopped watching", flush=True)
    finally:
        server.server_close()
    return 0
