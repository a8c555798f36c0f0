"""One replay — or, in a record mode, one recording — of a cassette: the state machine behind the
`agentevals_replay` fixture and `agentevals replay`, with no pytest and no command line in it. It
follows the one run lifecycle (`lifecycle.py`):

```python
run = ReplayRun(RunSpec("incident 0412", settings=settings), cassette=Path("cassettes/0412.trace.jsonl"))
run.start()                   # or, unstarted, run("other-name"), as the fixture is called
try:
    run_my_agent(run.task)
except BaseException as error:
    run.finish(error)         # the replay's own failure wins over what it caused
    raise
else:
    run.finish(None)          # a divergence, or a run that stopped early, raises here
finally:
    run.close()
```

Record modes (the `record` setting): `none` replays only; `once` records a missing cassette and
replays an existing one; `new` replays and lets requests missing from the cassette go live, saving
the combined run; `all` re-records. A recording goes to a scratch file beside the cassette and
replaces it only when the run is over, so an interrupted recording never costs a good cassette.

Which program a trace recorded by `agentevals record` is replayed against is the repository's
choice (a runner, or the `replay_programs` setting), never the trace's.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..contract import ContractDriftWarning, table, tolerances
from ..errors import AgentEvalsError, CassetteError, ConfigError
from ..lifecycle import RunSpec
from ..recording.recorder import Recorder
from ..settings import REPLAY_MODES, Settings
from ..settings.budgets import Budget
from ..trace.reader import TraceReader
from ..trace.terminal import safe
from . import names as cassette_names
from .cassette import Cassette
from .engine import Replayer
from .report import ReplayDivergenceWarning, ReplayReport


class ReplayRun:
    """One test's (or one command's) replay, or recording in a record mode.

    `spec.name` is what messages call the run (a test id, a program); `spec.agent` names it in a
    recording; `spec.runner(run)` starts the agent on the recorded task (`run.task`). `cassette` is
    what `start()` replays (None: nothing until the run is called with one, `run("NAME")`), from the
    checkpoint at or before `from_step`, in `mode` (a marker's, below the command line's), with
    `task` instead of the recorded one when given. `own` is the cassette used when none is named;
    `record_hint` says how to record a missing cassette, `rerecord` how to re-record a stale one;
    `inactive` says why no replay is active yet (for the error a replay-only attribute raises
    before one is).
    """

    layer = "replay"

    def __init__(
        self,
        spec: RunSpec,
        *,
        cassette: Path | Cassette | None = None,
        from_step: int | None = None,
        mode: str | None = None,
        task: Any = None,
        own: Path | None = None,
        record_hint: str = "record it with `agentevals record`, or check the name",
        rerecord: str | None = None,
        inactive: str = "call it with a cassette: agentevals_replay(NAME)",
        check_contract: bool = True,
    ) -> None:
        self.spec = spec
        self.settings = spec.settings if spec.settings is not None else Settings.resolve(Path.cwd())
        self.name = spec.name
        self.agent = spec.agent
        self._start = (cassette, from_step, mode, task)
        self.own = own
        self.record_hint = record_hint
        self.rerecord = rerecord
        self.inactive = inactive
        self.check_contract = check_contract
        self.replayer: Replayer | None = None
        self.recorder: Recorder | None = None
        self.path: Path | None = None
        self._task: Any = None
        self._final: Path | None = None  # where a recording lands when the run is over
        self._finished = False

    # -- what a test reads ------------------------------------------------------------------------

    @property
    def active(self) -> bool:
        """Whether a replay (or a recording) was started."""
        return self.replayer is not None or self.recorder is not None

    @property
    def recording(self) -> bool:
        """True when this run records its cassette instead of replaying it (record modes)."""
        return self.recorder is not None and self.replayer is None

    @property
    def cassette(self) -> Cassette:
        self._need("cassette")
        if self.replayer is None:
            raise AgentEvalsError(f"{self.name}: no cassette is being replayed (this run is recording it)")
        return self.replayer.cassette

    @property
    def task(self) -> Any:
        """The recorded run's initial task (`run_start.task`), or the one given to a recording."""
        self._need("task")
        return self._task

    @property
    def checkpoint(self) -> Any:
        """The state stored at the checkpoint a `from_step` replay starts from (None otherwise)."""
        self._need("checkpoint")
        if self.replayer is None or self.replayer.cassette.checkpoint is None:
            return None
        return self.replayer.cassette.checkpoint.get("state")

    @property
    def report(self) -> ReplayReport | None:
        """What the replay served and where it diverged (None while recording)."""
        self._need("report")
        return self.replayer.report if self.replayer is not None else None

    def _need(self, what: str) -> None:
        if not self.active:
            raise AgentEvalsError(
                f"{self.name}: `{what}` belongs to a replay, and none is active, so nothing is answered "
                f"from a recording (the network would be reached): {self.inactive}"
            )

    # -- starting ---------------------------------------------------------------------------------

    def __call__(
        self,
        cassette: str | os.PathLike[str] | None = None,
        *,
        mode: str | None = None,
        from_step: int | None = None,
    ) -> Replayer:
        """Replay `cassette` (a name under the cassette directory, or any trace/YAML path; the own
        cassette when None) now, and return the running `Replayer` (a context manager too)."""
        if self.replayer is not None:
            if self.replayer.report.served_http or self.replayer.report.served_tools:
                raise AgentEvalsError(
                    f"{self.name}: a replay of {self.replayer.cassette.path} is already running; "
                    "leave its `with` block first"
                )
            self._drop()
        if cassette is not None:
            path = cassette_names.resolve(cassette, self.settings.cassettes_dir, self.settings.rootdir)
        elif self.own is not None:
            path = self.own
        else:
            raise AgentEvalsError(f"{self.name}: name the cassette to replay: agentevals_replay(NAME)")
        replayer = self.replay(path, mode=mode, from_step=from_step)
        if replayer is None:
            raise AgentEvalsError(f"{self.name}: {path} is being recorded, not replayed")
        return replayer

    def start(self) -> ReplayRun:
        """Replay the cassette this run was made with (if any): see `replay`."""
        cassette, from_step, mode, task = self._start
        if cassette is not None:
            self.replay(cassette, mode=mode, from_step=from_step, task=task)
        return self

    def replay(
        self,
        cassette: Path | Cassette,
        *,
        mode: str | None = None,
        from_step: int | None = None,
        task: Any = None,
    ) -> Replayer | None:
        """Replay the cassette (a path, or one loaded already), or record it when the record mode
        says so (then None). `mode` given here is below the command line, as a marker's is."""
        path = cassette.path if isinstance(cassette, Cassette) else cassette
        self.path = path
        record = self.settings.record
        exists = isinstance(cassette, Cassette) or path.exists()
        if record == "all" or (record in ("once", "new") and not exists):
            self._record(path, task if task is not None or not exists else _recorded_task(path))
            return None
        if not exists:
            raise self.missing(path)
        replayer = Replayer(
            cassette,
            mode=self._mode(mode),
            from_step=from_step,
            packages=self.settings.contract_packages,
            check_contract=self.check_contract,
            tolerate=tolerances("contract_tolerate", self.settings.contract_tolerate),
            rerecord=self.rerecord,
            allow_live=record == "new",
            normalize=self.settings.replay_normalize,
            profile=self.settings.replay_profile,
            via=self.settings.replay_via,
        )
        if record == "new":
            self._record(path, replayer.cassette.task, start=False)
        self._task = replayer.cassette.task if task is None else task
        self.replayer = replayer  # before it starts: a stale cassette's failure is in its report
        if self.recorder is not None:
            self.recorder.start()
        replayer.start()
        return replayer

    def missing(self, path: Path) -> CassetteError:
        return CassetteError(path, 0, "no such cassette", self.record_hint)

    def _mode(self, mode: str | None) -> str:
        if mode is None or self.settings.sources.get("replay_mode") == "cli":
            return self.settings.replay_mode
        if mode not in REPLAY_MODES:
            raise ConfigError("mode", f"{mode!r} is not allowed", "use one of: " + ", ".join(REPLAY_MODES))
        return mode

    def _record(self, path: Path, task: Any, start: bool = True) -> None:
        scratch = path.with_name(path.name + f".recording-{os.getpid()}")
        scratch.unlink(missing_ok=True)
        self.recorder = Recorder.for_spec(
            replace(self.spec, trace=scratch, task=task, budget=Budget(), guards=(), settings=self.settings)
        )
        self._final = path
        self._task = task
        if start:
            self.recorder.start()

    def _drop(self) -> None:
        replayer, self.replayer = self.replayer, None
        if replayer is not None and replayer.running:
            with contextlib.suppress(AgentEvalsError):
                replayer.stop()

    # -- the agent ----------------------------------------------------------------------------------

    def run_agent(self) -> Any:
        """Start the agent on the recorded task through the runner (in pytest, the
        `pytest_agentevals_run_agent` hooks: for a run recorded by `agentevals record`, the model
        endpoint's face runs its program again, in a copy of its recorded workspace, if the
        repository allows that program — endpoint/replayed.py)."""
        self._need("run_agent()")
        if self.spec.runner is not None:
            result = self.spec.runner(self)
            if result is not None:
                return result
        raise AgentEvalsError(
            f"{self.path}: no agent runner took this run's task {self._task!r}: add a hook "
            "`def pytest_agentevals_run_agent(run): ...` to a conftest.py that starts your "
            "agent on `run.task` and returns its result (see docs/replay.md)"
        )

    # -- finishing --------------------------------------------------------------------------------

    def finish(self, error: BaseException | None) -> None:
        """End the replay when the run is over (`error` is what it raised, if anything): raise the
        replay's failure, and put a recording in place. A divergence of a sequential replay, and a
        contract drift that `contract_tolerate` let through, are warned of too (never silent)."""
        if self._finished:
            return
        self._finished = True
        try:
            if self.replayer is not None:
                self.replayer.stop(error)
        finally:
            try:
                self._close_recording(error)
            finally:
                self._warn()

    def _warn(self) -> None:
        replayer = self.replayer
        if replayer is None:
            return
        if replayer.report.divergences:
            warnings.warn(ReplayDivergenceWarning(replayer.report.text(limit=3)), stacklevel=1)
        if replayer.report.tolerated:
            where = self.path or self.name
            warnings.warn(
                ContractDriftWarning(
                    safe(
                        f"{where}: the contract drifted, tolerated by contract_tolerate:\n"
                        + table(replayer.report.tolerated)
                    )
                ),
                stacklevel=1,
            )

    def section(self) -> str | None:
        """The replay's report (what it served, where it diverged); None when nothing was replayed."""
        return self.replayer.report.text() if self.replayer is not None else None

    def _close_recording(self, error: BaseException | None) -> None:
        recorder, self.recorder = self.recorder, None
        if recorder is None:
            return
        recorder.stop(status="failed" if error is not None else None, error=None)
        replayer = self.replayer
        keep = replayer is None or replayer.live_requests > 0
        if self._final is not None and keep:
            self._final.parent.mkdir(parents=True, exist_ok=True)
            os.replace(recorder.path, self._final)
        else:
            recorder.path.unlink(missing_ok=True)

    def close(self, failed: bool = False) -> None:
        """Stop whatever still runs (a run that errored before it finished); drop its recording."""
        self._finished = True
        if self.replayer is not None and self.replayer.running:
            with contextlib.suppress(AgentEvalsError):
                self.replayer.stop()
        recorder, self.recorder = self.recorder, None
        if recorder is not None:
            recorder.stop(status="interrupted")
            recorder.path.unlink(missing_ok=True)


def _recorded_task(path: Path) -> Any:
    """The task of the run a cassette holds (what a re-recording keeps), or None if unreadable."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            first = next(iter(TraceReader(path)), None)
    except AgentEvalsError:
        return None
    return first.get("task") if first else None
