"""Each layer's marker, declared once and checked once at collection (`MarkerSpec`: positional
arguments, keywords with a parser each, and the keywords that override a setting), a test's marks in
precedence order (`marks_of`), and `is_worker`, the one test of an xdist worker. Shared pytest glue
beside `plugin.py`, small and generic; no engine imports it. A mistake (an unknown keyword, a bad
value, too many arguments, `@pytest.mark.replya`) stops the run naming the test and the keyword.
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
from .settings.options import OLD_MARKER_KWARGS, marker_keyword_now, renamed

Parse = Callable[[str, Any], Any]  # (where, raw value) -> value, raising ConfigError
INI = "pytest configuration"


@dataclass(frozen=True)
class Marked:
    """A test's marker, checked: its own arguments (parsed) and the run's settings under it."""

    values: Mapping[str, Any]
    settings: Settings
    renamed: tuple[tuple[str, str], ...] = ()  # the 0.x keywords it used, and their names now


@dataclass(frozen=True, eq=False)
class MarkerSpec:
    """One layer's marker: `name`, its positional arguments (each also a keyword), its own keywords'
    parsers, and the keywords that override a setting (`Option.marker_kwarg`)."""

    name: str
    positional: tuple[str, ...] = ()
    # Or a function giving them: the engine's parsers load with the first test carrying the marker.
    keywords: Mapping[str, Parse] | Callable[[], Mapping[str, Parse]] = field(default_factory=dict)
    settings: tuple[str, ...] = ()
    key: pytest.StashKey[Marked] = field(default_factory=lambda: pytest.StashKey[Marked]())

    @property
    def parsers(self) -> Mapping[str, Parse]:
        # Asked anew, not cached: the parsers of the modules in sys.modules now (pytester drops them).
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
        renamed = [(old, new) for old in mark.kwargs if (new := marker_keyword_now(old, self.settings))]
        for name, value in mark.kwargs.items():
            name = marker_keyword_now(name, self.settings) or name  # a setting keyword's 0.x spelling
            if name in raw:
                raise ConfigError(f"{where}({name}=...)", "given twice, as a positional and a keyword")
            raw[name] = value
        values, overrides = {}, {}
        for name, value in raw.items():
            if name in self.settings:
                overrides[name] = value
            elif name in self.parsers:
                values[name] = self.parsers[name](f"{where}({name}=...)", value)
            else:
                near = difflib.get_close_matches(name, [*self.allowed, *OLD_MARKER_KWARGS], n=1)
                now = near and (marker_keyword_now(near[0], self.settings) or near[0])
                allowed = "allowed: " + ", ".join(self.allowed)
                hint = f"did you mean {now}=? " if now else ""
                raise ConfigError(f"{where}({name}=...)", "unknown keyword", hint + allowed)
        return Marked(values, settings.for_marker(self.name, overrides), tuple(renamed))

    def check(self, session: pytest.Session, items: list[pytest.Item], settings: Settings) -> None:
        """Check this marker on every collected test (module-level marks too), keep the closest one's
        reading, and raise `pytest.UsageError` listing the mistakes. An xdist worker cannot end the
        run with a usage error (the controller would call it a crash): it stops the session instead."""
        known, errors = registered_markers(session.config), []
        for item in items:
            try:
                self._read(item, settings, known)
            except ConfigError as exc:
                errors.append(f"{item.nodeid}: {exc}")
        if not errors:
            return
        more = f"\n  … and {len(errors) - 5} more" if len(errors) > 5 else ""
        message = "agentevals: " + "\n".join(errors[:5]) + more
        if not is_worker(session.config):
            raise pytest.UsageError(message)
        session.shouldstop = message
        items.clear()

    def _read(self, item: pytest.Item, settings: Settings, known: set[str]) -> None:
        where = f"@pytest.mark.{self.name}"
        for mark in item.iter_markers():
            if mark.name not in known and near_miss(mark.name, [self.name]):
                fix = f"did you mean {where}? (or register {mark.name!r} under markers in your {INI})"
                raise ConfigError(f"@pytest.mark.{mark.name}", "is not a marker", fix)
        closest = item.get_closest_marker(self.name)
        for mark in item.iter_markers(self.name):
            marked = self.parse(mark, settings)
            for old, new in marked.renamed:
                item.warn(AgentEvalsDeprecationWarning(renamed(f"{old}=", f"{new}=", where)))
            if mark is closest:
                item.stash[self.key] = marked

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
    return "(" + ", ".join([repr(arg) for arg in mark.args] + [f"{key}=..." for key in mark.kwargs]) + ")"


def marks_of(item: pytest.Item, names: Sequence[str]) -> list[Mark]:
    """The markers `names` of a test, each name's farthest first (module, class, then function)."""
    return [(n, tuple(m.args), dict(m.kwargs)) for n in names for m in reversed(list(item.iter_markers(n)))]


def is_worker(config: pytest.Config) -> bool:
    """Whether this is an xdist worker: it reports what it saw; only the controller writes files."""
    return hasattr(config, "workerinput")


__all__ = ["Marked", "MarkerSpec", "Parse", "is_worker", "marks_of", "near_miss", "registered_markers"]
