"""`agentevals import SOURCE PATH -o OUT.trace.jsonl`: a run kept elsewhere (a Claude Code session,
OpenTelemetry GenAI spans as OTLP JSON, an ATIF trajectory) as a trace, its fidelity stated
(`imports/`); `agentevals export otlp TRACE -o FILE`: a trace as GenAI spans, for a team's own
trace viewer."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..imports import SOURCES, export_otlp, import_file


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "import",
        help="turn a run kept elsewhere (Claude Code session, OTLP GenAI spans, ATIF) into a trace",
        description="Read a run from where it was kept and write it as a trace, stating its fidelity: "
        "exact, content (messages and tool I/O, not the exact requests) or outline (no content), and "
        "what the source did not hold. promote, step extract and resume extract take what the tier "
        "can feed. Secrets in the source are scrubbed on the way.",
    )
    parser.add_argument("source", choices=tuple(SOURCES), help="the format of PATH")
    parser.add_argument("path", help="the file to read")
    parser.add_argument("-o", "--output", required=True, help="the trace to write (.trace.jsonl)")
    parser.add_argument("--force", action="store_true", help="replace an existing --output")
    parser.add_argument("--trace-id", help="otlp: the trace to import, when the file holds several")
    parser.set_defaults(func=main)
    exporter = subparsers.add_parser(
        "export",
        help="write a trace in another format: otlp (OpenTelemetry GenAI spans as OTLP JSON)",
        description="Write a recorded run in another format, for the team's own tools.",
    )
    formats = exporter.add_subparsers(dest="format", metavar="FORMAT")
    otlp = formats.add_parser(
        "otlp",
        help="the run as GenAI spans (agent, chat, execute_tool; usage; verifications as evaluation results)",
        description="Write TRACE as OpenTelemetry GenAI spans in OTLP JSON, for any trace viewer that reads "
        "OTLP (post it to a Collector's /v1/traces, or load the file); agentevals import otlp reads it back.",
    )
    otlp.add_argument("trace", help="the recorded run (.trace.jsonl)")
    otlp.add_argument("-o", "--output", required=True, help="the OTLP JSON file to write")
    otlp.add_argument("--force", action="store_true", help="replace an existing --output")
    otlp.set_defaults(func=main_export)
    exporter.set_defaults(func=lambda args: _usage(exporter))


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def main_export(args: argparse.Namespace) -> int:
    print(export_otlp(Path(args.trace), Path(args.output), force=args.force).text())
    return 0


def main(args: argparse.Namespace) -> int:
    done = import_file(
        args.source, Path(args.path), Path(args.output), force=args.force, trace_id=args.trace_id
    )
    print(done.text())
    return 0
