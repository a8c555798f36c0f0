"""Running a user's program the way `python script.py args` or `python -m module args` runs it.

`agentevals record` and `agentevals replay` run one inside a recorder or a replay; what a program
is (`Program`) and which recorded program a replay may start again (`allowed`) are in
`settings/argv.py`.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

from ..errors import AgentEvalsError
from ..settings.argv import Program


def run(program: Program, root: Path | None = None) -> int:
    """Run the program in this process and return its exit code. Exceptions propagate.

    As python does, `-m` puts the working directory (`root`, default the current one) first on the
    path, a script its own folder; a relative script is found from `root`.
    """
    root = root or Path.cwd()
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    if program.is_module:
        sys.argv = [program.target, *program.args]
        sys.path.insert(0, str(root))
    else:
        script = program.script_path(root)
        if not script.is_file():
            raise AgentEvalsError(
                f"{program.target}: no such script (give a path to a Python file, or use -m module)"
            )
        sys.argv = [program.target, *program.args]
        sys.path.insert(0, str(script.parent))
    try:
        if program.is_module:
            runpy.run_module(program.target, run_name="__main__", alter_sys=True)
        else:
            runpy.run_path(str(script), run_name="__main__")
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
