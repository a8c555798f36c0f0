"""The `agentevals` command. Each subcommand lives in a module of its own and registers here."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from .. import __version__
from ..errors import AgentEvalsError
from . import flaky, goldens, promote, record, replay, report, scan, show

# Each module has `register(subparsers)`, which adds its parser and sets `func` (args -> exit code).
SUBCOMMANDS: tuple[Any, ...] = (record, show, report, flaky, goldens, replay, promote, scan)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agentevals",
        description="The eval pyramid for long-running LLM agents: record runs, read traces, replay "
        "incidents, track flakiness.",
    )
    parser.add_argument("--version", action="version", version=f"agentevals {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in SUBCOMMANDS:
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        code: int = args.func(args)
    except AgentEvalsError as exc:
        print(f"agentevals {args.command}: error: {exc}", file=sys.stderr)
        return 2
    return code
