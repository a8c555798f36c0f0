"""The `agentevals` command. Each subcommand lives in a module of its own and registers here."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

from .. import __version__
from ..errors import AgentEvalsError
from ..trace.terminal import safe
from . import (
    contract,
    flaky,
    imports,
    judge,
    marathon,
    program,
    promote,
    record,
    replay,
    report,
    resume,
    scan,
    show,
    step,
    triage,
)

# Each module has `register(subparsers)`, which adds its parser and sets `func` (args -> exit code).
SUBCOMMANDS: tuple[Any, ...] = (
    record,
    show,
    report,
    flaky,
    step,
    judge,
    replay,
    promote,
    imports,
    resume,
    contract,
    scan,
    marathon,
    triage,
)
# Subcommands that run a program take its words as python does; the value is how many positional
# arguments of their own come before the program.
RUNS_A_PROGRAM: dict[str, int] = {"record": 0, "replay": 1}
# The subcommands' names before each took its layer's word (DESIGN.md, "Module map"): old name -> new.
# They run the new command, same options and same output, with one line on stderr; they go in the
# next release. They are rewritten before argparse sees them, so --help lists the new names only.
DEPRECATED: dict[str, str] = {"goldens": "step", "checkpoint": "resume"}


def _build() -> tuple[argparse.ArgumentParser, Any]:
    parser = argparse.ArgumentParser(
        prog="agentevals",
        description="The eval pyramid for long-running LLM agents: record runs, read traces, replay "
        "incidents, track flakiness.",
        epilog="deprecated names, still accepted until the next release: "
        + ", ".join(f"{old} (now {new})" for old, new in DEPRECATED.items()),
    )
    parser.add_argument("--version", action="version", version=f"agentevals {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in SUBCOMMANDS:
        module.register(subparsers)
    return parser, subparsers


def build_parser() -> argparse.ArgumentParser:
    return _build()[0]


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


def renamed(words: list[str]) -> tuple[list[str], str | None]:
    """`words` with a deprecated subcommand name replaced by its new one, and the warning to print
    (None when the words use no old name). Only the subcommand's own word is looked at: the top-level
    options take no value, so it is the first word that is not an option."""
    index = next((i for i, word in enumerate(words) if not word.startswith("-")), None)
    if index is None or words[index] not in DEPRECATED:
        return words, None
    old, new = words[index], DEPRECATED[words[index]]
    warning = (
        f"agentevals: 'agentevals {old}' is deprecated; use 'agentevals {new}' "
        "(the old name goes in the next release)"
    )
    return [*words[:index], new, *words[index + 1 :]], warning


def _run(argv: Sequence[str] | None) -> int:
    parser, subparsers = _build()
    words, warning = renamed(list(sys.argv[1:] if argv is None else argv))
    if warning is not None:
        print(warning, file=sys.stderr)
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
        # A message quotes files and names from pull requests: escaped for the terminal.
        print(safe(f"agentevals {args.command}: error: {exc}"), file=sys.stderr)
        return 2
    return code
