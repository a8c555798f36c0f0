"""Each layer's marker, declared once and checked once at collection (`MarkerSpec`), a test's marks
read in precedence order (`marks_of`), and `is_worker`, the one test of an xdist worker: the pytest
glue every face shares, beside the top-level `plugin.py`, small and generic; no engine imports it.

A face declares its marker — positional arguments, its own keywords with a parser each, and the
keywords that override a setting (`Settings.for_marker`) — and calls `spec.check(session, items,
settings)` at collection: any mistake stops the run with `pytest.UsageError` naming the test, the
keyword and the allowed ones (an unknown keyword, a bad value, too many positional arguments, an
unregistered near miss of the marker's name such as `@pytest.mark.replya`). What it parsed waits in
`item.stash[spec.key]` for the layer's fixture.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from .errors import AgentEvalsDeprecationWarning, ConfigError
from .settings import Settings
from .settings.budgets import Mark
from .settings.options import OLD_MARKER_KWARGS, renamed

Parse = Callable[[str, Any], Any]  # (where, raw value) -> value, raising ConfigError


@dataclass(frozen=True)
class Marked:
    """A test's marker, checked: its own arguments (parsed) and the run's settings under it."""

    values: Mapping[str, Any]
    settings: Settings
    renamed: tuple[tuple[str, str], ...] = ()  # the 0.x keywords it used, and their names now


@dataclass(frozen=True, eq=False)
class MarkerSpec:
    """One layer's marker: `name`, its positional arguments' names (each also a keyword), its own
    keywords and their parsers, and the keywords that override a setting (`Option.marker_kwarg`)."""

    name: str
    positional: tuple[str, ...] = ()
    # The parsers, or a function that gives them: a face declares its marker at import, and the
    # parsers (from its engine) load with the first test that carries the marker.
    keywords: Mapping[str, Parse] | Callable[[], Mapping[str, Parse]] = field(default_factory=dict)
    settings: tuple[str, ...] = ()
    key: pytest.StashKey[Marked] = field(default_factory=lambda: pytest.StashKey[Marked]())

    @property
    def parsers(self) -> Mapping[str, Parse]:
        # Asked anew each time, not cached: the engine's parsers come from the modules in sys.modules
        # now (pytester drops modules between in-process runs; a cached parser would be a stale copy).
        return self.keywords() if callable(self.keywords) else self.keywords

    @property
    def allowed(self) -> tuple[str, ...]:
        return (*self.parsers, *self.settings)

    def parse(self, mark: pytest.Mark, settings: Settings) -> Marked:
        """Check one marker; ConfigError naming the marker and the keyword otherwise."""
        where = f"@pytest.mark.{self.name}"
        if len(mark.args) > len(self.positional):
            takes = ", ".join(self.positional) or "none"
            raise ConfigError(
                f"{where}{_call(mark)}",
                f"takes at most {len(self.positional)} positional argument(s) ({takes})",
                "give the others as keywords: " + ", ".join(self.allowed),
            )
        raw = dict(zip(self.positional, mark.args, strict=False))
        renamed: list[tuple[str, str]] = []
        for name, value in mark.kwargs.items():
            new = getattr(OLD_MARKER_KWARGS.get(name), "marker_kwarg", None)
            if new in self.settings:  # a setting keyword's 0.x spelling
                renamed.append((name, new))
                name = new
            if name in raw:
                raise ConfigError(f"{where}({name}=...)", "given twice, as a positional and a keyword")
            raw[name] = value
        values: dict[str, Any] = {}
        overrides: dict[str, Any] = {}
        for name, value in raw.items():
            if name in self.settings:
                overrides[name] = value
            elif name in self.parsers:
                values[name] = self.parsers[name](f"{where}({name}=...)", value)
            else:
                near = self._near(name)
                hint = f"did you mean {near}=? " if near else ""
                raise ConfigError(
                    f"{where}({name}=...)", "unknown keyword", hint + "allowed: " + ", ".join(self.allowed)
                )
        return Marked(values, settings.for_marker(self.name, overrides), tuple(renamed))

    def _near(self, name: str) -> str | None:
        """The keyword `name` looks like a typo of (a 0.x spelling's near miss gives its name now)."""
        old = {o: str(OLD_MARKER_KWARGS[o].marker_kwarg) for o in OLD_MARKER_KWARGS}
        olds = [o for o in old if old[o] in self.settings]
        near = difflib.get_close_matches(name, [*self.allowed, *olds], n=1)
        return (old.get(near[0], near[0])) if near else None

    def check(self, session: pytest.Session, items: list[pytest.Item], settings: Settings) -> None:
        """Check this marker on every collected test (every one of its marks, module-level ones too)
        and keep the closest one's reading; raise `pytest.UsageError` listing the mistakes. An xdist
        worker cannot end the run with a usage error (the controller would call it a crash): it
        stops the session with the message instead, and collects nothing."""
        try:
            self._check(items, settings, registered_markers(session.config))
        except pytest.UsageError as exc:
            if not is_worker(session.config):
                raise
            session.shouldstop = str(exc)
            items.clear()

    def _check(self, items: Iterable[pytest.Item], settings: Settings, registered: Iterable[str]) -> None:
        known = set(registered)
        errors: list[str] = []
        for item in items:
            try:
                for mark in item.iter_markers():
                    if mark.name not in known and near_miss(mark.name, [self.name]):
                        raise ConfigError(
                            f"@pytest.mark.{mark.name}",
                            "is not a marker",
                            f"did you mean @pytest.mark.{self.name}? (or register "
                            f"{mark.name!r} under markers in your pytest configuration)",
                        )
                closest = item.get_closest_marker(self.name)
                for mark in item.iter_markers(self.name):
                    marked = self.parse(mark, settings)
                    for old, new in marked.renamed:
                        where = f"@pytest.mark.{self.name}"
                        item.warn(AgentEvalsDeprecationWarning(renamed(f"{old}=", f"{new}=", where)))
                    if mark is closest:
                        item.stash[self.key] = marked
            except ConfigError as exc:
                errors.append(f"{item.nodeid}: {exc}")
        if errors:
            more = f"\n  … and {len(errors) - 5} more" if len(errors) > 5 else ""
            raise pytest.UsageError("agentevals: " + "\n".join(errors[:5]) + more)

    def of(self, item: pytest.Item) -> Marked | None:
        """What `check` read from the test's closest marker (None when it has none)."""
        return item.stash.get(self.key, None)


def near_miss(name: str, candidates: Iterable[str]) -> str | None:
    """The candidate `name` looks like a typo of (`replya` -> `replay`), or None."""
    found = difflib.get_close_matches(name, [c for c in candidates if c != name], n=1, cutoff=0.75)
    return found[0] if found else None


def registered_markers(config: pytest.Config) -> set[str]:
    """The names of every marker registered with pytest (by plugins and the ini `markers`)."""
    return {str(line).split(":", 1)[0].split("(", 1)[0].strip() for line in config.getini("markers")}


def _call(mark: pytest.Mark) -> str:
    parts = [repr(arg) for arg in mark.args] + [f"{key}=..." for key in mark.kwargs]
    return f"({', '.join(parts)})"


def marks_of(item: pytest.Item, names: Sequence[str]) -> list[Mark]:
    """The markers `names` of a test, each name's farthest first (module, class, then function)."""
    return [
        (name, tuple(mark.args), dict(mark.kwargs))
        for name in names
        for mark in reversed(list(item.iter_markers(name)))
    ]


def is_worker(config: pytest.Config) -> bool:
    """Whether this process is an xdist worker: it sends what it saw through reports, and only the
    controller (or a plain session) writes shared files."""
    return hasattr(config, "workerinput")


__all__ = ["Marked", "MarkerSpec", "Parse", "is_worker", "marks_of", "near_miss", "registered_markers"]
