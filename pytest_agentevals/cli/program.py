"""The command line of a subcommand that runs a program (`record`, `replay`), split as python splits it.

One rule: agentevals' own options and positionals come first; the program starts at its script or at
`-m module`, and everything after that is the program's, verbatim (a `--` there is passed on, as
`python agent.py -- --x` passes it); a `--` before the program ends agentevals' own options.
"""

from __future__ import annotations

import argparse
import shutil
from collections.abc import Sequence
from pathlib import Path

from ..errors import AgentEvalsError
from ..settings.argv import Command, Program, program_or_command

PROGRAM_METAVAR = "script.py [args] | -m module [args] | -- COMMAND [args]"


def add_program_arguments(parser: argparse.ArgumentParser) -> None:
    """Shown in the subcommand's help; `split` hands the program's words over before argparse runs."""
    parser.add_argument("-m", dest="module", metavar="MODULE", help="run a module, as python -m does")
    parser.add_argument(
        "program",
        nargs="?",
        metavar=PROGRAM_METAVAR,
        help="the program, as python takes it: everything after the script or -m module is the "
        "program's own, verbatim; put -- before the program to end agentevals' options",
    )


def split(parser: argparse.ArgumentParser, argv: list[str], positionals: int) -> tuple[list[str], list[str]]:
    """(agentevals' own words, the program's words) of a subcommand's `argv`.

    `positionals` is how many positional arguments of its own the subcommand takes before the
    program (`replay TRACE`: one).
    """
    valued = {
        option
        for action in parser._actions  # argparse keeps no public list of its options
        for option in action.option_strings
        if action.nargs != 0
    }
    own: list[str] = []
    seen = 0
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            return own, argv[i + 1 :]
        if word == "-m" or (word.startswith("-m") and not word.startswith("--")):
            return own, argv[i:]
        if word.startswith("-") and word != "-":
            own.append(word)
            takes_value = word in valued and "=" not in word
            if takes_value and i + 1 < len(argv):
                own.append(argv[i + 1])
                i += 1
        elif seen < positionals:
            own.append(word)
            seen += 1
        else:
            return own, argv[i:]
        i += 1
    return own, []


def program_of(words: list[str]) -> Program | Command:
    """The program named by the words `split` gave it: a Python script (which must exist) or module,
    run in this process, or any other command (which must be found), run as a subprocess."""
    if not words:
        raise AgentEvalsError(f"nothing to run: give a script or a module ({PROGRAM_METAVAR})")
    program = program_or_command(words)
    if isinstance(program, Command):
        head = program.argv[0]
        if shutil.which(head) is None and not Path(head).is_file():
            raise AgentEvalsError(f"{head}: no such command (give a program on PATH, or a path to one)")
        return program
    if not program.is_module and not program.script_path(Path.cwd()).is_file():
        raise AgentEvalsError(
            f"{program.target}: no such script (give a path to a Python file, or use -m module)"
        )
    return program


def seed_in(words: Sequence[str]) -> int | None:
    """The program's own `--seed N` (or `--seed=N`), so a seed is given once: to the program, which
    uses it, and the trace records it. None when the program has none, or not a whole number."""
    for index, word in enumerate(words):
        value = None
        if word == "--seed" and index + 1 < len(words):
            value = words[index + 1]
        elif word.startswith("--seed="):
            value = word.split("=", 1)[1]
        if value is not None:
            try:
                return int(value)
            except ValueError:
                return None
    return None
