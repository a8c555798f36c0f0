"""Module paths of earlier releases that moved in the 0.2 re-layout, still importable through 0.x.

A user's conftest that imports `pytest_agentevals.golden.runner` keeps working, with an
`AgentEvalsDeprecationWarning` naming the path to use now; a path that never existed still raises
`ModuleNotFoundError`. One mechanism for every move: a finder at the end of `sys.meta_path` (asked
only after the real package found nothing, so it costs nothing to an import that works) answers the
names of `MOVED`, `SPLIT` and `GONE` below, the table CHANGELOG.md's "moved" tables print
(tests/test_moved.py holds the two together).

- An old *module* is the new module itself under a second name (so a monkeypatch through either name
  patches the one module); its `__spec__` stays the new module's.
- An old *package* is a small proxy with no files of its own: its names are looked up in the new
  package, and its submodules go through the table again (`golden.runner` -> `step.runner`). A proxy,
  not the package itself, so importing `checkpoint.extract` (the module now `resume.extraction`) never
  binds `resume.extract` (a function) to a module.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from .errors import AgentEvalsDeprecationWarning

_P = "pytest_agentevals"

# old path -> new path. A package's entry also moves its submodules (`old.x` -> `new.x`, then looked
# up again, so a module moved twice is one entry per move); an exact entry wins over its package's.
MOVED: dict[str, str] = {
    f"{_P}.golden": f"{_P}.step",
    f"{_P}.golden.layer": f"{_P}.step.plugin",
    f"{_P}.golden.items": f"{_P}.step.plugin",
    f"{_P}.step.session": f"{_P}.step.goldens",
    f"{_P}.recording.replay": f"{_P}.replay",
    f"{_P}.recording.replay.layer": f"{_P}.replay.plugin",
    f"{_P}.replay.session": f"{_P}.replay.run",
    f"{_P}.replay_plugin": f"{_P}.replay.plugin",
    f"{_P}.checkpoint": f"{_P}.resume",
    f"{_P}.checkpoint.layer": f"{_P}.resume.plugin",
    f"{_P}.checkpoint.extract": f"{_P}.resume.extraction",
    f"{_P}.checkpoint.contract": f"{_P}.contract",
    f"{_P}.resume.contract": f"{_P}.contract",
    f"{_P}.resume.session": f"{_P}.resume.run",
    f"{_P}.recording.guards": f"{_P}.guards",
    f"{_P}.recording.guards.guard": f"{_P}.guards.protocol",
    f"{_P}.recording.guards.limits": f"{_P}.settings.budgets",
    f"{_P}.recording.guard": f"{_P}.guards.protocol",
    f"{_P}.recording.guard_runner": f"{_P}.guards.runner",
    f"{_P}.recording.costs": f"{_P}.guards.costs",
    f"{_P}.recording.prices": f"{_P}.guards.prices",
    f"{_P}.recording.workspace": f"{_P}.workspace.snapshot",
    f"{_P}.recording.workspace_files": f"{_P}.workspace.files",
    f"{_P}.recording.workspace_watch": f"{_P}.workspace.watch",
    f"{_P}.recording.inotify": f"{_P}.workspace.inotify",
    f"{_P}.recording.naming": f"{_P}.trace.naming",
    f"{_P}.recording.cassette_names": f"{_P}.replay.names",
    f"{_P}.recording.scan": f"{_P}.report.scan",
    f"{_P}.recording.loud": f"{_P}.errors",
    f"{_P}.recording.scrub": f"{_P}.trace.scrub",
    f"{_P}.recording.contract": f"{_P}.contract",
    f"{_P}.recording.canonical": f"{_P}.trace.canonical",
    f"{_P}.guards_plugin": f"{_P}.guards.plugin",
    f"{_P}.history.collector": f"{_P}.history.plugin",
    f"{_P}.history.outcome": f"{_P}.history.attempts",
    f"{_P}.history.stats": f"{_P}.stats",
    f"{_P}.report.session": f"{_P}.report.plugin",
    f"{_P}.report.pyramid": f"{_P}.report.plugin",
    f"{_P}.marathon.layer": f"{_P}.marathon.plugin",
    f"{_P}.marathon.marker": f"{_P}.marathon.plan",
    f"{_P}.marathon.seeds": f"{_P}.settings.seeds",
    f"{_P}.marathon.session": f"{_P}.marathon.tally",
    f"{_P}.layers": f"{_P}.settings.layers",
    f"{_P}.cli.checkpoint": f"{_P}.cli.resume",
    f"{_P}.cli.goldens": f"{_P}.cli.step",
}

# old module -> the modules its names went to, looked up in this order.
SPLIT: dict[str, tuple[str, ...]] = {
    f"{_P}.faces": (f"{_P}.markers", f"{_P}.runs", f"{_P}.settings.plugin", f"{_P}.history.attempts"),
}

# old module -> what replaces it, where nothing importable does: its import fails saying so.
GONE: dict[str, str] = {
    f"{_P}.recording.factory": "its recorder_for(...) is pytest_agentevals.Recorder.for_spec(spec)",
}

_HOPS = 8  # a chain of moves is short; the bound keeps a bad table from looping


def resolve(name: str) -> str | None:
    """The path a moved module `name` has now (following moves of moves), or None if it never moved."""
    found = None
    for _ in range(_HOPS):
        step = _one_move(name)
        if step is None:
            return found
        found = name = step
    raise RuntimeError(f"pytest_agentevals._moved: the moves of {name} loop")  # a bug in MOVED


def _one_move(name: str) -> str | None:
    if name in MOVED:
        return MOVED[name]
    head, _, tail = name.rpartition(".")
    rest = [tail]
    while head:
        if head in MOVED:
            return ".".join([MOVED[head], *reversed(rest)])
        head, _, tail = head.rpartition(".")
        rest.append(tail)
    return None


def _warn(old: str, targets: Sequence[str]) -> None:
    if len(targets) == 1:
        moved = f"moved to {targets[0]} in 0.2; import that"
    else:
        moved = f"was split into {', '.join(targets)} in 0.2; import from those"
    # stacklevel 3 is exec_module's caller: warnings skips importlib's own frames, so the warning
    # points at the user's import statement.
    warnings.warn(
        AgentEvalsDeprecationWarning(f"{old} {moved} (the old path works through 0.x)"),
        stacklevel=3,
    )


class _Proxy(ModuleType):
    """An old package, or an old module whose names went to several modules: each name is looked up
    in the new modules, in order (PEP 562 `__getattr__`, so `from old import name` works too)."""

    def __init__(self, name: str, targets: Sequence[str]) -> None:
        super().__init__(name)
        self.__targets = tuple(targets)

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        for target in self.__targets:
            module = importlib.import_module(target)
            if hasattr(module, attr):
                return getattr(module, attr)
        raise AttributeError(
            f"module {self.__name__!r} (now {', '.join(self.__targets)}) has no attribute {attr!r}"
        )


class _Loader(importlib.abc.Loader):
    def __init__(self, old: str, targets: Sequence[str]) -> None:
        self.old, self.targets = old, tuple(targets)
        self._spec: Any = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        if len(self.targets) == 1:
            module = importlib.import_module(self.targets[0])
            if not hasattr(module, "__path__"):  # a module: itself, under its old name too
                self._spec = module.__spec__
                return module
        return _Proxy(self.old, self.targets)

    def exec_module(self, module: ModuleType) -> None:
        if self._spec is not None:
            module.__spec__ = self._spec  # the import system set the old name's spec on it
        _warn(self.old, self.targets)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Any = None, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith(_P + "."):
            return None
        if fullname in GONE:
            raise ModuleNotFoundError(
                f"{fullname} is gone in 0.2: {GONE[fullname]} (CHANGELOG.md, 'Modules moved')", name=fullname
            )
        targets = SPLIT.get(fullname) or ((new,) if (new := resolve(fullname)) else ())
        if not targets:
            return None
        found = [importlib.util.find_spec(target) for target in targets]
        if None in found:  # moved under a package that never had it: no such module, as before
            return None
        is_package = (
            len(found) == 1 and found[0] is not None and found[0].submodule_search_locations is not None
        )
        return importlib.machinery.ModuleSpec(fullname, _Loader(fullname, targets), is_package=is_package)


_FINDER = _Finder()


def install() -> None:
    """Put the finder at the end of `sys.meta_path` (once)."""
    if not any(isinstance(finder, _Finder) for finder in sys.meta_path):
        sys.meta_path.append(_FINDER)
