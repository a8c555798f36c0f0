"""`agentevals show TRACE`: a trace summarized for a person, or as JSON for a machine."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..metrics import MetricsScan
from ..metrics.render import shown
from ..trace.summary import summarize
from .common import add_format


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "show",
        help="summarize a trace: steps, calls, tokens, cost, how it ended",
        description="A ten-second summary of a recorded run: steps, model and tool calls, tokens, cost, "
        "harness events, verifications and how it ended, the run's metrics (docs/metrics.md), and any "
        "problem found in the file. Exit 1 when a line in the middle of the trace is damaged (what was "
        "read before it is still shown).",
    )
    parser.add_argument("trace", help="a .trace.jsonl file")
    add_format(parser, ("text", "json"))
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    scan = MetricsScan()
    summary = summarize(args.trace, observers=[scan.add])  # one read of the file for both
    print(shown(summary, scan.metrics(), args.format))
    if summary.unreadable is not None:
        print(f"agentevals show: error: {summary.unreadable}", file=sys.stderr)
        return 1
    return 0
