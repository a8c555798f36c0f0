"""The replay layer's pytest face: the `agentevals_replay` fixture, the `replay` marker, record modes,
and every cassette without a test of its own collected as a replay test.

```python
@pytest.mark.replay("fix-bug")                     # cassettes/fix-bug.trace.jsonl, strict
def test_fix_bug(agentevals_replay):
    result = run_my_agent(agentevals_replay.task)  # model and @tool calls answered from the recording
    assert result.ok

def test_any_trace(agentevals_replay):
    with agentevals_replay("incidents/run-0412.trace.jsonl", mode="sequential") as replay:
        run_my_agent(replay.cassette.task)
```

Marker: `@pytest.mark.replay(name=None, *, mode=, from_step=, record=, task=)`. Without a name, a
test that requests the fixture replays its own cassette, `cassettes/<module>/<test>.trace.jsonl`.
Record modes (`--agentevals-record`): `none` replays only; `once` records a missing cassette;
`new` replays and lets requests missing from the cassette go live, saving the combined run; `all`
re-records. The replay is checked when the test function returns, so a divergence or a run that
stopped early fails the test itself, with the replay's message.

Auto-collected cassettes and `agentevals promote`'s tests start the agent through the
`pytest_agentevals_run_agent(task, replay)` hook (see docs/replay.md); a trace recorded by
`agentevals record` (its task is `{"argv": [...]}`) runs its program again without one.
"""

from __future__ import annotations

import contextlib
import os
import re
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from .errors import AgentEvalsError, CassetteError
from .recording.recorder import Recorder
from .recording.replay import Replayer
from .recording.replay.cassette import YAML_SUFFIXES, Cassette
from .recording.replay.report import ReplayDivergenceWarning
from .settings import Settings
from .trace.reader import TraceReader

SESSION_KEY = pytest.StashKey["ReplaySession"]()
TRACE_SUFFIX = ".trace.jsonl"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


class ReplayHookspecs:
    @pytest.hookspec
    def pytest_agentevals_run_agent(self, task: Any, replay: ReplaySession) -> Any:
        """Start the user's agent on a recorded run's initial task, inside the replay.

        Called by `replay.run_agent()`: in auto-collected cassette tests and in the tests
        `agentevals promote` writes. `task` is the trace's `run_start.task`; `replay` the
        `ReplaySession` (its `cassette`, `checkpoint`, `workspace`...). Return the agent's result
        (any value); return None from an implementation that does not handle this task.
        """


def settings_of(config: pytest.Config) -> Settings:
    from .plugin import settings_of as plugin_settings

    return plugin_settings(config)


# -- cassette names ------------------------------------------------------------------------------


def default_cassette(node: pytest.Item, settings: Settings) -> Path:
    """`cassettes/<module stem>/<test name>.trace.jsonl`: one cassette per test node."""
    module = Path(str(node.path)).stem if getattr(node, "path", None) else "tests"
    name = _UNSAFE.sub("-", node.name).strip("-") or "test"
    return settings.cassette_dir / module / f"{name}{TRACE_SUFFIX}"


def resolve_cassette(name: str | os.PathLike[str] | None, node: pytest.Item, settings: Settings) -> Path:
    """Where a cassette named in a marker or passed to the fixture lives.

    None: the node's own cassette. A path with a directory or suffix: as given (absolute, or
    relative to the rootdir when it exists there, else to the cassette directory). A bare name:
    `<cassette_dir>/<name>.trace.jsonl`, or `<name>.yaml` when only that exists.
    """
    if name is None:
        return default_cassette(node, settings)
    text = os.fspath(name)
    path = Path(text).expanduser()
    if path.is_absolute():
        return path
    if "/" in text or text.endswith((TRACE_SUFFIX, ".jsonl", *YAML_SUFFIXES)):
        from_root = settings.rootdir / path
        return from_root if from_root.exists() else settings.cassette_dir / path
    trace = settings.cassette_dir / f"{text}{TRACE_SUFFIX}"
    if not trace.exists():
        for suffix in YAML_SUFFIXES:
            if (settings.cassette_dir / f"{text}{suffix}").exists():
                return settings.cassette_dir / f"{text}{suffix}"
    return trace


def _marker_name(marker: pytest.Mark) -> Any:
    if marker.args:
        return marker.args[0]
    return marker.kwargs.get("cassette")


# -- the session behind the fixture --------------------------------------------------------------


class ReplaySession:
    """One test's replay (or recording, in a record mode): what the `agentevals_replay` fixture gives.

    Call it to replay a cassette or any trace file: `agentevals_replay(path, mode=..., from_step=...)`
    returns the running `Replayer` (a context manager too). Attributes: `replayer`, `cassette`,
    `task`, `checkpoint` (the `from_step` checkpoint's state), `report`, `path`, `recording`.
    """

    def __init__(self, node: pytest.Item, settings: Settings, request: pytest.FixtureRequest | None) -> None:
        self.node = node
        self.settings = settings
        self.request = request
        self.replayer: Replayer | None = None
        self.recorder: Recorder | None = None
        self.path: Path | None = None
        self.task: Any = None
        self._final: Path | None = None  # where a recording lands when the test is over
        self._missing_default: CassetteError | None = None
        self._finished = False

    # -- what a test reads ------------------------------------------------------------------------

    @property
    def recording(self) -> bool:
        """True when this test records its cassette instead of replaying (record modes)."""
        return self.recorder is not None and self.replayer is None

    @property
    def cassette(self) -> Cassette:
        if self.replayer is None:
            raise AgentEvalsError(
                f"{self.node.nodeid}: no cassette is being replayed"
                + (" (this test is recording it)" if self.recording else "")
            )
        return self.replayer.cassette

    @property
    def checkpoint(self) -> Any:
        """The state stored at the checkpoint a `from_step` replay starts from (None otherwise)."""
        if self.replayer is None or self.replayer.cassette.checkpoint is None:
            return None
        return self.replayer.cassette.checkpoint.get("state")

    @property
    def report(self) -> Any:
        return self.replayer.report if self.replayer is not None else None

    def run_agent(self) -> Any:
        """Start the agent on the recorded task through the `pytest_agentevals_run_agent` hook
        (or, for a trace recorded by `agentevals record`, run its program again)."""
        config = self.node.config
        hook = config.hook.pytest_agentevals_run_agent
        if hook.get_hookimpls():
            results = hook(task=self.task, replay=self)
            if results:
                return results[0]
        if isinstance(self.task, dict) and isinstance(self.task.get("argv"), list):
            return _run_argv(self.task["argv"])
        raise AgentEvalsError(
            f"{self.path}: no agent runner took this run's task {self.task!r}: add a hook "
            "`def pytest_agentevals_run_agent(task, replay): ...` to a conftest.py that starts your "
            "agent on `task` and returns its result (see docs/replay.md)"
        )

    # -- starting ---------------------------------------------------------------------------------

    def __call__(
        self,
        cassette: str | os.PathLike[str] | None = None,
        *,
        mode: str | None = None,
        from_step: int | None = None,
    ) -> Replayer:
        """Replay `cassette` (a name under the cassette directory, or any trace/YAML path) now."""
        if self.replayer is not None:
            if self.replayer.report.served_http or self.replayer.report.served_tools:
                raise AgentEvalsError(
                    f"{self.node.nodeid}: a replay of {self.replayer.cassette.path} is already running; "
                    "leave its `with` block first"
                )
            self._drop()
        self._missing_default = None
        marker = self.node.get_closest_marker("replay")
        kwargs = {k: v for k, v in (marker.kwargs if marker else {}).items() if k != "from_step"}
        if mode is not None:
            kwargs["mode"] = mode
        settings = self._settings(kwargs)
        path = resolve_cassette(cassette, self.node, self.settings)
        replayer = self._start(path, settings.replay_mode, from_step, settings.record, None)
        if replayer is None:
            raise AgentEvalsError(f"{self.node.nodeid}: {path} is being recorded, not replayed")
        return replayer

    def start_from_marker(self, marker: pytest.Mark) -> None:
        settings = self._settings(marker.kwargs)
        name = _marker_name(marker)
        path = resolve_cassette(name, self.node, self.settings)
        if name is None and settings.record == "none" and not path.exists():
            # A bare marker: the test may name its trace by calling the fixture; if it never does,
            # its own missing cassette is the error (raised when the test function returns).
            self._missing_default = _missing(path, self.node)
            return
        self._start(
            path,
            settings.replay_mode,
            marker.kwargs.get("from_step"),
            settings.record,
            marker.kwargs.get("task"),
        )

    def _settings(self, kwargs: Mapping[str, Any]) -> Settings:
        try:
            return self.settings.for_marker("replay", kwargs)
        except AgentEvalsError as exc:
            raise pytest.UsageError(f"{self.node.nodeid}: {exc}") from None

    def _start(self, path: Path, mode: str, from_step: Any, record: str, task: Any) -> Replayer | None:
        self.path = path
        exists = path.exists()
        if self.request is not None and "agentevals_recorder" in self.request.fixturenames:
            # The test's own trace must see the replayed exchanges: its recorder starts first.
            self.request.getfixturevalue("agentevals_recorder")
        if record == "all" or (record in ("once", "new") and not exists):
            self._record(path, task if task is not None or not exists else _recorded_task(path))
            return None
        if not exists:
            raise _missing(path, self.node)
        replayer = Replayer(
            path,
            mode=mode,
            from_step=from_step,
            packages=self.settings.contract_packages,
            rerecord=f"pytest {self.node.nodeid!r} --agentevals-record=all",
            allow_live=record == "new",
        )
        if record == "new":
            self._record(path, replayer.cassette.task, start=False)
        self.task = replayer.cassette.task if task is None else task
        if self.recorder is not None:
            self.recorder.start()
        replayer.start()
        self.replayer = replayer
        return replayer

    def _record(self, path: Path, task: Any, start: bool = True) -> None:
        scratch = path.with_name(path.name + f".recording-{os.getpid()}")
        scratch.unlink(missing_ok=True)
        self.recorder = Recorder(
            scratch,
            agent=self.node.name,
            task=task,
            packages=self.settings.contract_packages,
            prices=self.settings.prices,
        )
        self._final = path
        self.task = task
        if start:
            self.recorder.start()

    def _drop(self) -> None:
        replayer, self.replayer = self.replayer, None
        if replayer is not None and replayer.running:
            with contextlib.suppress(AgentEvalsError):
                replayer.stop()

    # -- finishing --------------------------------------------------------------------------------

    def finish(self, error: BaseException | None) -> None:
        """End the replay when the test function returns: raise its failure, report divergences,
        and put a recording in place."""
        if self._finished:
            return
        self._finished = True
        try:
            if self.replayer is not None:
                try:
                    self.replayer.stop(error)
                finally:
                    self._report(self.replayer)
            elif self._missing_default is not None and error is None:
                raise self._missing_default
        finally:
            self._close_recording(error)

    def _report(self, replayer: Replayer) -> None:
        report = replayer.report
        self.node.add_report_section("call", "agentevals replay", report.text())
        if report.divergences:
            warnings.warn(ReplayDivergenceWarning(report.text(limit=3)), stacklevel=1)

    def _close_recording(self, error: BaseException | None) -> None:
        recorder, self.recorder = self.recorder, None
        if recorder is None:
            return
        recorder.stop(status="failed" if error is not None else None, error=None)
        final = self._final
        replayer = self.replayer
        keep = replayer is None or replayer.live_requests > 0
        if final is not None and keep:
            final.parent.mkdir(parents=True, exist_ok=True)
            os.replace(recorder.path, final)
        else:
            recorder.path.unlink(missing_ok=True)

    def close(self) -> None:
        """Teardown: stop whatever still runs (a test that errored before its call phase)."""
        self._finished = True
        self._drop()
        recorder, self.recorder = self.recorder, None
        if recorder is not None:
            recorder.stop(status="interrupted")
            recorder.path.unlink(missing_ok=True)


def _missing(path: Path, node: pytest.Item) -> CassetteError:
    return CassetteError(
        path,
        0,
        "no such cassette",
        f"record it with `pytest {node.nodeid!r} --agentevals-record=once`, copy an incident in with "
        "`agentevals promote TRACE --name NAME`, or check the name in @pytest.mark.replay(...)",
    )


def _recorded_task(path: Path) -> Any:
    """The task of the run a cassette holds (what a re-recording keeps), or None if unreadable."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            first = next(iter(TraceReader(path)), None)
    except AgentEvalsError:
        return None
    return first.get("task") if first else None


def _run_argv(argv: list[Any]) -> Any:
    from .cli import program as program_runner

    head, *rest = (str(part) for part in argv)
    if head.startswith("-m "):
        program = program_runner.Program(head[3:], True, tuple(rest))
    else:
        program = program_runner.Program(head, False, tuple(rest))
    code = program_runner.run(program)
    if code != 0:
        raise AgentEvalsError(f"the replayed program {head} exited with status {code}")
    return code


# -- fixtures and hooks ----------------------------------------------------------------------------


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(ReplayHookspecs)


@pytest.fixture
def agentevals_replay(request: pytest.FixtureRequest) -> Iterator[ReplaySession]:
    """The test's replay: started from `@pytest.mark.replay(...)`, or by calling the fixture with a
    cassette name or any trace file. Checked when the test function returns."""
    node = request.node
    session = ReplaySession(node, settings_of(request.config), request)
    node.stash[SESSION_KEY] = session
    marker = node.get_closest_marker("replay")
    try:
        if marker is not None:
            session.start_from_marker(marker)
        yield session
    finally:
        session.close()


@pytest.fixture(autouse=True)
def _agentevals_replay_marker(request: pytest.FixtureRequest) -> None:
    """A test marked `@pytest.mark.replay("name")` replays even if it does not ask for the fixture."""
    marker = request.node.get_closest_marker("replay")
    if marker is not None and _marker_name(marker) is not None:
        request.getfixturevalue("agentevals_replay")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    try:
        result = yield
    except BaseException as exc:
        session = item.stash.get(SESSION_KEY, None)
        if session is not None:
            session.finish(exc)
        raise
    session = item.stash.get(SESSION_KEY, None)
    if session is not None:
        session.finish(None)
    return result


# -- cassettes without a test, collected as replay tests ---------------------------------------------


class CassetteFile(pytest.File):
    """A `*.trace.jsonl` in the cassette directory that no test replays: one replay test."""

    def collect(self) -> Iterator[pytest.Item]:
        yield CassetteItem.from_parent(self, name="replay")


class CassetteItem(pytest.Item):
    """Replays its cassette in the configured mode, starting the agent through the runner hook."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_marker(pytest.mark.replay(str(self.path)))

    def runtest(self) -> None:
        settings = settings_of(self.config)
        session = ReplaySession(self, settings, None)
        self.stash[SESSION_KEY] = session
        try:
            session._start(self.path, settings.replay_mode, None, "none", None)
            try:
                session.run_agent()
            except BaseException as exc:
                session.finish(exc)
                raise
            session.finish(None)
        finally:
            session.close()

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, AgentEvalsError):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"replay of {self.path.name}"


def _is_cassette(path: Path, settings: Settings) -> bool:
    return path.name.endswith(TRACE_SUFFIX) and path.resolve().is_relative_to(settings.cassette_dir.resolve())


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> CassetteFile | None:
    settings = settings_of(parent.config)
    if not settings.collect_cassettes or not _is_cassette(file_path, settings):
        return None
    return CassetteFile.from_parent(parent, path=file_path)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """Collected cassettes that a test of this session replays are dropped; when the run names no
    paths (testpaths or the rootdir), cassettes outside the collected folders are added."""
    settings = settings_of(config)
    if not settings.collect_cassettes or not settings.cassette_dir.is_dir():
        return
    covered: set[Path] = set()
    for item in items:
        marker = item.get_closest_marker("replay")
        if marker is None or isinstance(item, CassetteItem):
            continue
        name = _marker_name(marker)
        if name is None and "agentevals_replay" not in getattr(item, "fixturenames", ()):
            continue
        covered.add(resolve_cassette(name, item, settings).resolve())
    collected = {item.path.resolve() for item in items if isinstance(item, CassetteItem)}
    dropped = [item for item in items if isinstance(item, CassetteItem) and item.path.resolve() in covered]
    if dropped:
        items[:] = [item for item in items if item not in dropped]
        config.hook.pytest_deselected(items=dropped)
    if config.args_source == pytest.Config.ArgsSource.ARGS:
        return  # the user named what to run: cassettes under a named folder came through collect_file
    for path in sorted(settings.cassette_dir.rglob(f"*{TRACE_SUFFIX}")):
        if path.resolve() not in covered and path.resolve() not in collected:
            items.extend(CassetteFile.from_parent(session, path=path).collect())
