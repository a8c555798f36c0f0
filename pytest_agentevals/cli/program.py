"""Running a user's program the way `python script.py` or `python -m module` would.

Shared by `agentevals record` and `agentevals replay`, which wrap the run in a recorder or a replay.
"""

from __future__ import annotations

import argparse
import runpy
import sys
from dataclasses import dataclass
from pathlib import Path

from ..errors import AgentEvalsError


@dataclass(frozen=True)
class Program:
    target: str
    is_module: bool
    args: tuple[str, ...]

    @property
    def label(self) -> str:
        return f"-m {self.target}" if self.is_module else self.target

    @property
    def stem(self) -> str:
        return self.target.rsplit(".", 1)[-1] if self.is_module else Path(self.target).stem


def add_program_arguments(parser: argparse.ArgumentParser) -> None:
    """`script.py [args]` or `-m module [args]`, as python takes them."""
    # Like python's own -m, -m ends the command's options: everything after the module is its args.
    parser.add_argument(
        "-m",
        dest="module",
        nargs=argparse.REMAINDER,
        metavar="MODULE [ARGS]",
        help="run a module, as python -m does",
    )
    parser.add_argument("program", nargs=argparse.REMAINDER, help="script.py [args]")


def program_of(args: argparse.Namespace) -> Program:
    if args.module is not None:
        if not args.module:
            raise AgentEvalsError("-m needs a module name: -m module [args]")
        module, *module_args = args.module
        if module_args and module_args[0] == "--":
            module_args = module_args[1:]
        return Program(module, True, tuple(module_args))
    rest = list(args.program)
    if rest and rest[0] == "--":
        rest = rest[1:]
    if not rest:
        raise AgentEvalsError(
            "nothing to run: give a script (script.py [args]) or a module (-m module [args])"
        )
    script = rest[0]
    if not Path(script).is_file():
        raise AgentEvalsError(f"{script}: no such script (give a path to a Python file, or use -m module)")
    return Program(script, False, tuple(rest[1:]))


def run(program: Program) -> int:
    """Run the program in this process and return its exit code. Exceptions propagate."""
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [program.target, *program.args]
    # As python does: -m puts the current directory first on the path, a script its own folder.
    sys.path.insert(0, str(Path.cwd()) if program.is_module else str(Path(program.target).resolve().parent))
    try:
        if program.is_module:
            runpy.run_module(program.target, run_name="__main__", alter_sys=True)
        else:
            runpy.run_path(program.target, run_name="__main__")
    except SystemExit as exc:
        return exit_code(exc)
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
    return 0


def exit_code(exc: SystemExit) -> int:
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    print(exc.code, file=sys.stderr)
    return 1
