"""The `agentevals` command. Each subcommand lives in a module of its own and registers here."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from .. import __version__
from ..errors import AgentEvalsError
from . import flaky, goldens, program, promote, record, replay, scan, show

# Each module has `register(subparsers)`, which adds its parser and sets `func` (args -> exit code).
SUBCOMMANDS: tuple[Any, ...] = (record, show, flaky, goldens, replay, promote, scan)
# Subcommands that run a program take its words as python does; the value is how many positional
# arguments of their own come before the program.
RUNS_A_PROGRAM: dict[str, int] = {"record": 0, "replay": 1}


def _build() -> tuple[argparse.ArgumentParser, Any]:
    parser = argparse.ArgumentParser(
        prog="agentevals",
        description="The eval pyramid for long-running LLM agents: record runs, read traces, replay "
        "incidents, track flakiness.",
    )
    parser.add_argument("--version", action="version", version=f"agentevals {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in SUBCOMMANDS:
        module.register(subparsers)
    return parser, subparsers


def build_parser() -> argparse.ArgumentParser:
    return _build()[0]


def main(argv: Sequence[str] | None = None) -> int:
    parser, subparsers = _build()
    words = list(sys.argv[1:] if argv is None else argv)
    program_words: list[str] | None = None
    index = next((i for i, word in enumerate(words) if not word.startswith("-")), None)
    if index is not None and words[index] in RUNS_A_PROGRAM:
        own, program_words = program.split(
            subparsers.choices[words[index]], words[index + 1 :], RUNS_A_PROGRAM[words[index]]
        )
        words = [*words[: index + 1], *own]
    args = parser.parse_args(words)
    if program_words is not None:
        args.program = program_words
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        code: int = args.func(args)
    except AgentEvalsError as exc:
        print(f"agentevals {args.command}: error: {exc}", file=sys.stderr)
        return 2
    return code
