"""The replay layer's pytest face: the `replay` marker, the `agentevals_replay` fixture and the hooks
that hand off to the engine (`session.py`); every cassette without a test of its own is collected as
a replay test. Registered by `pytest_agentevals.plugin` with the run's settings.

```python
@pytest.mark.replay("fix-bug")                     # cassettes/fix-bug.trace.jsonl, strict
def test_fix_bug(agentevals_replay):
    result = run_my_agent(agentevals_replay.task)  # model and @tool calls answered from the recording
    assert result.ok
```

The marker, `@pytest.mark.replay(cassette=None, *, replay_mode=, from_step=, record=, task=)`, is
checked at collection (`REPLAY`, a `MarkerSpec`). A bare marker replays the test's own cassette, and
fails before the test body runs when there is none to replay. The replay is checked when the test
function returns (the one run lifecycle, `runs.py`), so a divergence fails the test itself, with
the replay's message.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..errors import CassetteError, ConfigError
from ..markers import MarkerSpec, near_miss
from ..runs import opened, spec_for
from ..settings import Settings
from ..settings.budgets import Budget
from ..trace.naming import TRACE_SUFFIX
from . import names as cassette_names

if TYPE_CHECKING:  # the engine loads with the first replay of the session
    from .run import ReplayRun


def text_or_path(where: str, raw: Any) -> Any:
    if isinstance(raw, str) and raw.strip():
        return raw
    if isinstance(raw, os.PathLike):
        return raw
    raise ConfigError(where, f"{raw!r} is not a name or a path", "give a cassette name or a file path")


def step_number(where: str, raw: Any) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
        raise ConfigError(where, f"{raw!r} is not a step number", "give an int >= 0")
    return raw


def anything(where: str, raw: Any) -> Any:
    return raw


REPLAY = MarkerSpec(
    "replay",
    positional=("cassette",),
    keywords={"cassette": text_or_path, "from_step": step_number, "task": anything},
    settings=("replay_mode", "record"),
)


class ReplayLayer:
    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.settings = settings

    # -- runs ------------------------------------------------------------------------------------

    def own_cassette(self, item: pytest.Item) -> Path:
        """The test's own cassette (what a bare marker replays)."""
        cls = getattr(item, "cls", None)
        test = f"{cls.__name__}.{item.name}" if cls is not None else item.name
        return cassette_names.own_cassette(self.settings.cassettes_dir, getattr(item, "path", None), test)

    def run_for(
        self, item: pytest.Item, settings: Settings, cassette: Path | None = None, **start: Any
    ) -> ReplayRun:
        """The test's replay: of `cassette` (None: the one it is called with later), its agent
        started through the `pytest_agentevals_run_agent(run)` hooks."""
        from .run import ReplayRun

        return ReplayRun(
            spec_for(item, settings, "replay", budget=Budget(), agent=item.name),
            cassette=cassette,
            own=self.own_cassette(item),
            record_hint=(
                f"record it with `pytest {item.nodeid!r} --agentevals-record=once`, copy an incident in "
                "with `agentevals promote TRACE --name NAME`, or check the name in @pytest.mark.replay(...)"
            ),
            rerecord=f"pytest {item.nodeid!r} --agentevals-record=all",
            inactive=_inactive_hint(item),
            **start,
        )

    # -- the fixture ---------------------------------------------------------------------------------

    @pytest.fixture
    def agentevals_replay(self, request: pytest.FixtureRequest) -> Iterator[ReplayRun]:
        """The test's replay: started from `@pytest.mark.replay(...)`, or by calling the fixture with a
        cassette name or any trace file. Checked when the test function returns."""
        item = request.node
        marked = REPLAY.of(item)
        if marked is None:
            yield from opened(item, self.run_for(item, self.settings))
            return
        if "agentevals_recorder" in request.fixturenames:
            # The test's own trace must see the replayed exchanges: its recorder starts first.
            request.getfixturevalue("agentevals_recorder")
        name = marked.values.get("cassette")
        run = self.run_for(
            item,
            marked.settings,
            self.own_cassette(item) if name is None else self._resolve(name),
            from_step=marked.values.get("from_step"),
            task=marked.values.get("task"),
        )
        yield from opened(item, run)

    @pytest.fixture(autouse=True)
    def _agentevals_replay_marker(self, request: pytest.FixtureRequest) -> None:
        """A test marked `@pytest.mark.replay` replays even if it does not ask for the fixture."""
        if REPLAY.of(request.node) is not None:
            request.getfixturevalue("agentevals_replay")

    def _resolve(self, name: str | os.PathLike[str]) -> Path:
        return cassette_names.resolve(name, self.settings.cassettes_dir, self.settings.rootdir)

    # -- collection ---------------------------------------------------------------------------------

    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector) -> CassetteFile | None:
        if not self.settings.collect_cassettes or not self._is_cassette(file_path):
            return None
        return CassetteFile.from_parent(parent, path=file_path, layer=self)

    def _is_cassette(self, path: Path) -> bool:
        # Where the file itself lies, its last link not followed: a link under cassettes/ pointing
        # elsewhere is collected (and fails, saying so), never dropped without a word.
        return path.name.endswith(TRACE_SUFFIX) and (_real(path.parent) / path.name).is_relative_to(
            _real(self.settings.cassettes_dir)
        )

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(
        self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        """Check every replay marker (a mistake stops the run here); drop collected cassettes that a
        test of this session replays; when the run names no paths (testpaths or the rootdir), add
        the cassettes outside the collected folders."""
        REPLAY.check(session, items, self.settings)
        if not self.settings.collect_cassettes or not self.settings.cassettes_dir.is_dir():
            return
        covered: set[Path] = set()
        for item in items:
            marked = REPLAY.of(item)
            if marked is None or isinstance(item, CassetteItem):
                continue
            name = marked.values.get("cassette")
            covered.add(_real(self.own_cassette(item) if name is None else self._resolve(name)))
        collected = {_real(item.path) for item in items if isinstance(item, CassetteItem)}
        dropped = [item for item in items if isinstance(item, CassetteItem) and _real(item.path) in covered]
        if dropped:
            items[:] = [item for item in items if item not in dropped]
            config.hook.pytest_deselected(items=dropped)
        as_found = {item.path.absolute() for item in items if isinstance(item, CassetteItem)}
        if config.args_source == pytest.Config.ArgsSource.ARGS:
            # The user named what to run: cassettes under a named folder came through collect_file,
            # but for a link that loops or points nowhere, which pytest's walk passes over without a
            # word (it is no file to it): such a link is an item of its own, failing with its name.
            named = [_named_path(config, arg) for arg in config.args]
            for path in _cassettes_under(self.settings.cassettes_dir):
                if path.absolute() not in as_found and _broken_link(path) and _below_one(path, named):
                    items.extend(CassetteFile.from_parent(session, path=path, layer=self).collect())
            return
        for path in _cassettes_under(self.settings.cassettes_dir):
            if path.absolute() in as_found:
                continue
            # A link is its own item whatever it points at: it fails with its name (_check_readable).
            if path.is_symlink() or (_real(path) not in covered and _real(path) not in collected):
                items.extend(CassetteFile.from_parent(session, path=path, layer=self).collect())


def _inactive_hint(item: pytest.Item) -> str:
    near = next((mark.name for mark in item.iter_markers() if near_miss(mark.name, [REPLAY.name])), None)
    if near is not None:
        return f"this test is marked @pytest.mark.{near}: did you mean @pytest.mark.{REPLAY.name}?"
    return (
        f"mark the test @pytest.mark.{REPLAY.name} (its own cassette) or @pytest.mark.{REPLAY.name}"
        '("NAME"), or call the fixture with a cassette first: agentevals_replay("NAME")'
    )


def _real(path: Path) -> Path:
    """The path with its links resolved, or as it is when it cannot be (a link that loops)."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return path.absolute()


def _named_path(config: pytest.Config, arg: str) -> Path:
    """A path named on the command line (`cassettes`, `tests/test_x.py::test_y`), absolute."""
    return _real(config.invocation_params.dir / arg.split("::", 1)[0])


def _broken_link(path: Path) -> bool:
    """Whether `path` is a link that loops or points nowhere."""
    return path.is_symlink() and not path.exists()


def _below_one(path: Path, folders: list[Path]) -> bool:
    where = _real(path.parent) / path.name
    return any(where == folder or where.is_relative_to(folder) for folder in folders)


def _cassettes_under(folder: Path) -> list[Path]:
    """Every `*.trace.jsonl` below `folder`, without following links to folders (a loop ends)."""
    found: list[Path] = []
    for root, dirs, names in os.walk(folder):
        dirs.sort()
        found.extend(Path(root) / name for name in sorted(names) if name.endswith(TRACE_SUFFIX))
    return found


# -- cassettes without a test, collected as replay tests ---------------------------------------------


class CassetteFile(pytest.File):
    """A `*.trace.jsonl` in the cassette directory that no test replays: one replay test."""

    def __init__(self, *, layer: ReplayLayer, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.layer = layer

    def collect(self) -> Iterator[pytest.Item]:
        yield CassetteItem.from_parent(self, name="replay", layer=self.layer)


class CassetteItem(pytest.Item):
    """Replays its cassette in the configured replay mode (never records), starting the agent through
    the `pytest_agentevals_run_agent` hook or an allowed recorded program."""

    def __init__(self, *, layer: ReplayLayer, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.layer = layer
        self.add_marker(pytest.mark.replay(str(self.path)))

    def runtest(self) -> None:
        # The one lifecycle, as a fixture's run goes through it: started here, finished when the call
        # phase ends (runs.RunPhases), closed at teardown. A cassette that cannot be read fails here.
        _check_readable(self.path)
        run = self.layer.run_for(self, dataclasses.replace(self.layer.settings, record="none"), self.path)
        self._phases = opened(self, run)
        next(self._phases).run_agent()

    def teardown(self) -> None:
        phases = getattr(self, "_phases", None)
        if phases is not None:
            phases.close()

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"replay of {self.path.name}"


def _check_readable(path: Path) -> None:
    try:
        path.resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        what = "a symbolic link that loops or points nowhere" if path.is_symlink() else f"unreadable ({exc})"
        raise CassetteError(
            path, 0, f"is {what}", "replace it with the cassette file it stands for, or delete it"
        ) from None
    if path.is_symlink():
        # Never read through: a link in a pull request can point at any file on the machine.
        raise CassetteError(
            path,
            0,
            f"is a symbolic link (to {os.readlink(path)}), and a collected cassette is never read "
            "through one",
            "replace the link with the cassette file it stands for, or delete it",
        )
    if not path.is_file():
        raise CassetteError(path, 0, "is not a file", "a cassette is a .trace.jsonl file")
