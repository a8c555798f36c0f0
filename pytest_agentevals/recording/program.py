"""Running a user's program the way `python script.py args` or `python -m module args` runs it.

`agentevals record` runs one inside a recorder (`record_program`), `agentevals replay` inside a
replay (`replay/program.py`); what a program
is (`Program`) and which recorded program a replay may start again (`allowed`) are in
`settings/argv.py`.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import runpy
import sys
import traceback
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

from ..errors import AgentEvalsError, RunStopped
from ..guards.protocol import Guard
from ..lifecycle import RunSpec
from ..settings import Settings
from ..settings.argv import Command, Program
from ..trace.events import NO_MODEL_CALLS as NO_MODEL_CALLS_STATUS
from ..trace.events import NO_MODEL_CALLS_REASON
from ..trace.summary import TraceSummary, summarize
from .recorder import Recorder


def run(program: Program, root: Path | None = None, *, cwd: Path | None = None) -> int:
    """Run the program in this process and return its exit code. Exceptions propagate.

    As python does, `-m` puts the working directory (`root`, default the current one) first on the
    path, a script its own folder; a relative script is found from `root`. With `cwd` the program
    runs in that folder (a replay's fresh copy of its recorded workspace), its code still found from
    `root`; the working directory is put back afterwards.
    """
    root = (root or Path.cwd()).resolve()
    saved_argv, saved_path, saved_cwd = sys.argv[:], sys.path[:], os.getcwd()
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
        if cwd is not None:
            os.chdir(cwd)
        if program.is_module:
            runpy.run_module(program.target, run_name="__main__", alter_sys=True)
        else:
            runpy.run_path(str(script), run_name="__main__")
    except SystemExit as exc:
        return exit_code(exc)
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
        if cwd is not None:
            os.chdir(saved_cwd)
    return 0


def exit_code(exc: SystemExit) -> int:
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    print(exc.code, file=sys.stderr)
    return 1


# The exit codes of a recorded run that did not end as its program said: a guard stopped it, one of
# our errors (a model with no price under a cost budget, an unreadable ledger), a program that exited
# 0 having made no model call (it checked nothing: likely not pointed at the endpoint), an interrupt.
STOPPED = 3
OUR_ERROR = 2
NO_MODEL_CALLS = 4
INTERRUPTED = 130


@dataclass(frozen=True)
class RecordedRun:
    """How a recorded program ended: its exit code, why a guard stopped it (`stopped`), one of our
    errors (`error`), the program's own traceback (`crash`), and the summary of the trace written."""

    code: int
    output: Path
    summary: TraceSummary
    stopped: str | None = None
    error: str | None = None
    crash: str | None = None
    check: str | None = None  # how the --verify check came out
    empty: str | None = None  # why a run with no model call failed (the trace's reason)
    allowed_empty: bool = False  # it made none, and --allow-no-model-calls let its exit code stand

    def text(self) -> str:
        """What a person reads after the program's own output (on stderr): why it stopped, if it did,
        and the trace written."""
        lines = []
        if self.stopped is not None:
            lines.append(f"agentevals record: {self.stopped}")
        if self.error is not None:
            lines.append(f"agentevals record: error: {self.error}")
        if self.crash is not None:
            lines.append(self.crash.rstrip("\n"))
        if self.check is not None:
            lines.append(f"agentevals record: verify {self.check}")
        if self.empty is not None:
            lines.append(
                f"agentevals record: error: no model call, so the run checked nothing (exit status "
                f"{NO_MODEL_CALLS}): {self.empty}. If the program legitimately calls no model, give "
                "--allow-no-model-calls"
            )
        elif self.allowed_empty:
            lines.append(
                "agentevals record: the run made no model call (allowed by --allow-no-model-calls: "
                "the exit status is the program's; the trace still ends no_model_calls)"
            )
        s = self.summary
        lines.append(
            f"agentevals record: wrote {self.output} ({s.steps} steps, ended {s.status}, "
            f"${s.cost_usd:.4f}); `agentevals show {self.output}` tells more"
        )
        return "\n".join(lines)


def default_output(program: Program | Command, settings: Settings) -> Path:
    """A new trace under `traces_dir`, named after the program and the time."""
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return settings.traces_dir / f"{program.stem}-{stamp}.trace.jsonl"


def new_trace(output: Path, *, force: bool = False) -> Path:
    """`output`, unless a file is there already (with `force`: a file there is removed, since a
    trace is only ever appended to). A link or a folder is never removed."""
    if output.is_symlink() or output.is_dir():
        raise AgentEvalsError(
            f"{output} is a {'link' if output.is_symlink() else 'folder'}; choose another -o"
        )
    if output.exists():
        if not force:
            # Appending a second run to a trace would corrupt it; overwriting would lose the first.
            raise AgentEvalsError(
                f"{output} exists; choose another -o, move it away, or give --force to replace it"
            )
        output.unlink()
    return output


# The state of a command's (a Python program's) checkpoint at its start: what a replay re-runs, in
# a copy of its workspace.
COMMAND_STATE = "agentevals-command/1"
PROGRAM_STATE = "agentevals-program/1"
START_STATES = (COMMAND_STATE, PROGRAM_STATE)


def workspace_at_start(recorder: Recorder, program: Program | Command, folder: Path) -> None:
    """A checkpoint before the program starts (`command start`, or `program start` for a Python
    program run in this process): its state the program's command line, its workspace a snapshot of
    the folder it runs in (the run's own trace left out). A replay of the run (a promoted test,
    `agentevals replay`) re-runs the program in a fresh copy of it; `agentevals resume` may boot from
    it too."""
    snapshot = recorder.snapshots.snapshot(folder)
    with contextlib.suppress(ValueError, OSError):  # the run's own trace is not the program's work
        own = recorder.path.resolve().relative_to(folder.resolve()).as_posix()
        snapshot["files"].pop(own, None)
    if isinstance(program, Command):
        state: dict[str, object] = {"format": COMMAND_STATE, "command": list(program.argv)}
        name = "command start"
    else:
        state, name = {"format": PROGRAM_STATE, "argv": program.argv}, "program start"
    recorder.count("checkpoints")
    recorder.emit("checkpoint", sync=True, state=state, name=name, workspace=snapshot)


def record_program(
    program: Program | Command,
    output: Path,
    settings: Settings,
    *,
    agent: str | None = None,
    seed: int | None = None,
    guards: Sequence[Guard] = (),
    runner: Callable[[], int] | None = None,
    around: Callable[[], AbstractContextManager[object]] | None = None,
    verify: Sequence[str] | None = None,
    allow_no_model_calls: bool = False,
) -> RecordedRun:
    """Run `program` with recording on, into a new trace at `output` (its task: the program's argv),
    with `guards` deciding before each model call. A Python program runs in this process; `runner`
    runs another one (a command, through the model endpoint) and returns its exit code. The trace is
    written whatever the program does; only an existing `output` raises (nothing is run). `around` is
    entered around a Python program (the model endpoint its subprocesses are pointed at). `verify`, a
    check command, runs after the program in the current folder, whatever its exit code or a guard's
    stop (not after a crash or an interrupt): its result is the run's verification event. A program
    that exits 0 having made no model call ends its trace `no_model_calls` and the run with
    NO_MODEL_CALLS (4), its reason said; `allow_no_model_calls` lets the program's 0 stand (the
    trace still says no_model_calls: a run that checked nothing is never `ok`)."""
    new_trace(output)
    task = {"argv": program.argv} if isinstance(program, Program) else {"command": list(program.argv)}
    spec = RunSpec(
        name=program.label,
        agent=agent or program.stem,
        task=task,
        seed=seed,
        trace=output,
        guards=tuple(guards),
        settings=settings,
    )
    recorder = Recorder.for_spec(
        spec,
        http=runner is None,
        require_model_call=True,  # a program that called no model was likely not pointed at one
    )
    stopped = error = crash = checked = None
    try:
        with recorder:
            workspace_at_start(recorder, program, Path.cwd())  # what a replay re-runs it in
            if runner is not None:
                code = runner()
            else:
                assert isinstance(program, Program)
                with around() if around is not None else contextlib.nullcontext():
                    try:
                        code = run(program)
                    except Exception:
                        if recorder.guarding.halt is None:
                            raise
                        code = 1  # what the endpoint refused surfaced as the client's error
            if verify is not None:  # the work is judged by the check, not by the exit code
                checked = recorder.verify(verify).text()
            if recorder.guarding.halt is not None:  # a guard refused a request (at the endpoint)
                raise recorder.guarding.halt
            if recorder.status is None:  # the program may have said how its run ended
                recorder.end("ok" if code == 0 else "failed")
    except KeyboardInterrupt:
        code = INTERRUPTED
    except RunStopped as exc:
        # A guard stopped the run (or refused to start it): said plainly, not as a traceback.
        stopped, code = str(exc), STOPPED
    except AgentEvalsError as exc:
        # Ours: the message is the fix.
        error, code = str(exc), OUR_ERROR
    except Exception:
        # The program's own failure: shown as python shows it; the trace keeps it too.
        crash, code = traceback.format_exc(), 1
    summary = summarize(output)
    empty, allowed_empty = None, False
    if code == 0 and summary.status == NO_MODEL_CALLS_STATUS:
        if allow_no_model_calls:
            allowed_empty = True
        else:
            empty, code = summary.error or NO_MODEL_CALLS_REASON, NO_MODEL_CALLS
    return RecordedRun(code, output, summary, stopped, error, crash, checked, empty, allowed_empty)
