"""The `agentevals` command. Each subcommand lives in a module of its own and registers here."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

from .. import __version__
from ..errors import AgentEvalsError
from . import flaky, goldens, promote, record, replay, scan, show

# Each module has `register(subparsers)`, which adds its parser and sets `func` (args -> exit code).
SUBCOMMANDS: tuple[Any, ...] = (record, show, flaky, goldens, replay, promote, scan)


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


# What a shell reports for a program killed by SIGPIPE (128 + 13), as `yes | head -1` leaves it.
SIGPIPE_EXIT = 141


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand. Output piped into a reader that stops early (`| head -1`) ends the command
    quietly, as it ends a Unix tool: no traceback, exit code 141."""
    try:
        try:
            code = _run(argv)
        except SystemExit:  # argparse's --help, --version and usage errors
            sys.stdout.flush()
            raise
        sys.stdout.flush()
    except BrokenPipeError:
        # Python would flush stdout again at exit and print the error once more: point it elsewhere.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return SIGPIPE_EXIT
    return code


def _run(argv: Sequence[str] | None) -> int:
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
