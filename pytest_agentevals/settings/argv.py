"""A user's program, as `python script.py args` or `python -m module args` names it: the
value type of `agentevals record`/`replay` and of the `replay_programs` allow-list.

The way `python script.py args` or `python -m module args` runs it.

`agentevals record` and `agentevals replay` run one inside a recorder or a replay; a trace written
by `agentevals record` keeps its real argv (`run_start.task.argv`, e.g. `["-m", "pkg", "--n", "3"]`).
Which recorded program a replay may start again is the repository's choice (`allowed`), never the
trace's: a trace arrives in pull requests.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import AgentEvalsError


@dataclass(frozen=True)
class Program:
    """`target` is a script path or a module name (`is_module`); `args` are the program's own."""

    target: str
    is_module: bool
    args: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """How a person names the program: `-m pkg.mod` or `agent.py` (no arguments)."""
        return f"-m {self.target}" if self.is_module else self.target

    @property
    def argv(self) -> list[str]:
        """What follows `python` on its command line: `["-m", "pkg", *args]` or `["agent.py", *args]`."""
        head = ["-m", self.target] if self.is_module else [self.target]
        return [*head, *self.args]

    @property
    def command(self) -> str:
        return shlex.join(self.argv)

    @property
    def stem(self) -> str:
        return self.target.rsplit(".", 1)[-1] if self.is_module else Path(self.target).stem

    @classmethod
    def from_argv(cls, argv: Sequence[Any]) -> Program:
        """The program of `python ARGV`: `-m module [args]` or `script [args]`, args verbatim."""
        if not argv or not all(isinstance(part, str) for part in argv):
            raise AgentEvalsError(
                f"{list(argv)!r} is not a program: give script.py [args] or -m module [args]"
            )
        head, *rest = argv
        if head == "-m":
            if not rest or not rest[0] or rest[0].startswith("-"):
                raise AgentEvalsError("-m needs a module name: -m module [args]")
            return cls(rest[0], True, tuple(rest[1:]))
        if head.startswith("-m"):  # python's -mmodule
            return cls(head[2:], True, tuple(rest))
        if not head or head.startswith("-"):
            raise AgentEvalsError(f"{head!r} is not a script: give script.py [args] or -m module [args]")
        return cls(head, False, tuple(rest))

    def script_path(self, root: Path) -> Path:
        """The script, resolved against `root` when relative (the working directory of a run)."""
        path = Path(self.target).expanduser()
        return (path if path.is_absolute() else root / path).resolve()

    def same_program(self, other: Program, root: Path) -> bool:
        """The same module, or the same script file (paths resolved against `root`); args aside."""
        if self.is_module or other.is_module:
            return self.is_module == other.is_module and self.target == other.target
        return self.script_path(root) == other.script_path(root)


@dataclass(frozen=True)
class Command:
    """Any other program, run as a subprocess (`node agent.js`, `claude -p ...`, `./run.sh`): what
    `agentevals record -- COMMAND ...` runs with its model requests sent through the model endpoint.
    A trace keeps it as the run's task, `{"command": [...]}`."""

    argv: tuple[str, ...]

    @property
    def label(self) -> str:
        return shlex.join(self.argv)

    @property
    def command(self) -> str:
        return shlex.join(self.argv)

    @property
    def stem(self) -> str:
        name = Path(self.argv[0]).name
        return name.split(".", 1)[0] or name


def program_or_command(argv: Sequence[str]) -> Program | Command:
    """What `agentevals record`/`replay` runs: `-m module` or a `.py` script is a Python program run in
    this process, as before; anything else is a command run as a subprocess through the endpoint."""
    if not argv:
        raise AgentEvalsError("nothing to run: give a script, -m module, or a command after --")
    head = argv[0]
    if head.startswith("-m") or head.endswith(".py"):
        return Program.from_argv(argv)
    if not head or head.startswith("-"):
        raise AgentEvalsError(f"{head!r} is not a command: give a script, -m module, or a command after --")
    return Command(tuple(argv))


def parse_allowed(entry: str) -> Program | Command:
    """One entry of an allow-list: a Python program, no args (`"-m examples.taskrunner"`,
    `"agent.py"`), or a command by its whole command line (`"node agent.js --task 12"`): a command's
    arguments are part of what it runs, so the repository names them all."""
    words = shlex.split(entry)
    if words and (words[0].startswith("-m") or words[0].endswith(".py")):
        program = Program.from_argv(words)
        if program.args:
            raise AgentEvalsError(f"{entry!r}: name the program only (its arguments come from the recording)")
        return program
    if not words or not words[0] or words[0].startswith("-"):
        raise AgentEvalsError(f"{entry!r} is not a program nor a command")
    return Command(tuple(words))


def allowed(program: Program | Command, entries: Iterable[str], root: Path) -> bool:
    """Whether an allow-list of the repository names `program` (scripts resolved against `root`; a
    command only by its whole command line)."""
    for entry in entries:
        rule = parse_allowed(entry)
        if isinstance(program, Command):
            if isinstance(rule, Command) and rule.argv == program.argv:
                return True
        elif isinstance(rule, Program) and rule.same_program(program, root):
            return True
    return False
