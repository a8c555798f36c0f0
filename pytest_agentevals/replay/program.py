"""Replaying a program (`agentevals replay TRACE script.py [args]`): the program runs in this process
with the recorded model and tool responses, through the same `ReplayRun` as a pytest replay,
and, when asked, its replayed run is recorded into a trace of its own."""

from __future__ import annotations

import contextlib
import traceback
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

from ..errors import AgentEvalsError, ReplayDivergence, StaleCassette, UnrecordedRequest
from ..lifecycle import RunSpec
from ..recording import Recorder
from ..recording import program as programs
from ..settings import Settings
from ..settings.argv import Command, Program
from ..trace.terminal import safe
from .loader import load_cassette
from .report import ReplayReport
from .run import ReplayRun

# A run that diverged (or met a request it cannot answer) exits 1, like a failing test.
DIVERGED = 1
INTERRUPTED = 130


@dataclass(frozen=True)
class ProgramReplay:
    """How a replayed program ended: its exit code (DIVERGED when the replay failed it), the error
    that failed the replay, the program's own traceback when it crashed, what the replay served, and
    the trace the replayed run was recorded into."""

    code: int
    failure: str | None = None
    crash: str | None = None
    report: ReplayReport | None = None
    output: Path | None = None
    workspace: Path | None = None  # the fresh copy of the recorded workspace the program ran in

    def text(self) -> str:
        """What a person reads after the program's own output (on stderr): how it failed, the replay's
        report, where the replayed run went. Empty when there is nothing to say."""
        lines = []
        if self.failure is not None:
            lines.append(f"agentevals replay: {self.failure}")
        if self.crash is not None:
            lines.append(self.crash.rstrip("\n"))
        if self.report is not None:
            lines.append(self.report.text())
        if self.workspace is not None:
            lines.append(
                "agentevals replay: ran in a fresh copy of the folder the run was recorded in (its start "
                "checkpoint), removed afterwards; the current folder was left alone"
            )
        if self.output is not None:
            lines.append(f"agentevals replay: wrote {self.output}")
        return safe("\n".join(lines))  # a failure quotes the cassette, a crash the program's output


def replay_program(
    program: Program | Command,
    trace: str,
    settings: Settings,
    *,
    from_step: int | None = None,
    output: Path | None = None,
    check_contract: bool = True,
    runner: Callable[[], int] | None = None,
    around: Callable[[], AbstractContextManager[object]] | None = None,
    cwd: Path | None = None,
) -> ProgramReplay:
    """Run `program` against the recorded run `trace` (from the checkpoint at or before `from_step`
    when given): a Python program in this process (in `cwd` when given: a fresh copy of the recorded
    workspace; its code still found from the current folder), another one by `runner` (a command,
    through the model endpoint), which returns its exit code. A divergence, an unrecorded request or
    a stale cassette ends it with DIVERGED; the program's own exception with 1 and its traceback; a
    bad cassette or option raises."""
    if output is not None and output.exists():
        # Appending a second run to a trace would corrupt it; overwriting would lose the first.
        raise AgentEvalsError(f"{output} exists; choose another -o or move it away")
    cassette = load_cassette(trace, from_step)
    spec = RunSpec(str(trace), agent=program.stem, task=cassette.task, trace=output, settings=settings)
    session = ReplayRun(
        spec,
        cassette=cassette,
        record_hint="record it: pytest --agentevals-record=once, or `agentevals record`; or check the name",
        rerecord=f"agentevals record -o NEW.trace.jsonl {program.command}",
        check_contract=check_contract,
    )
    # The replayed run's own trace sees the replayed exchanges: its recorder starts first.
    recorder = Recorder.for_spec(spec) if output is not None else None
    code = 0
    failure = crash = None
    try:
        if recorder is not None:
            recorder.start()
        try:
            session.start()
            try:
                if runner is not None:
                    code = runner()
                else:
                    assert isinstance(program, Program)
                    with around() if around is not None else contextlib.nullcontext():
                        code = programs.run(program, cwd=cwd)
            except BaseException as exc:
                session.finish(exc)
                raise
            session.finish(None)
        finally:
            session.close()
            if recorder is not None:
                recorder.stop(status="ok" if code == 0 else "failed")
    except (ReplayDivergence, UnrecordedRequest, StaleCassette) as exc:
        failure = f"{type(exc).__name__}: {exc}"
        code = DIVERGED
    except AgentEvalsError:
        raise
    except KeyboardInterrupt:
        code = INTERRUPTED
    except Exception:
        crash = traceback.format_exc()  # the program's own failure, as python shows it
        code = 1
    report = session.replayer.report if session.replayer is not None else None
    return ProgramReplay(code, failure, crash, report, output, cwd)
