"""A run's budget: the limits of `[tool.agentevals.budget]`, marker keywords and `--budget KEY=VALUE`.

One frozen `Budget` with every key optional (None = no limit). It is parsed and checked here, for
every way a budget enters: a pyproject table, a command-line string, marker keywords. A bad key or
value raises `ConfigError` naming where it came from, the key and the fix.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError

# key: (whole number?, minimum, what it limits). Every key is documented in docs/guards.md.
KEYS: dict[str, tuple[bool, float, str]] = {
    "max_call_tokens": (True, 1, "tokens of one model call (estimated input + max_tokens)"),
    "max_call_cost_usd": (False, 0, "USD of one model call (at its estimate, before it is sent)"),
    "max_tokens": (
        True,
        0,
        "tokens of the whole run (all four kinds: input, output, cache writes and reads)",
    ),
    "max_cost_usd": (False, 0, "USD of the whole run"),
    "max_calls": (True, 0, "successful model calls of the run"),
    "max_seconds": (False, 0, "wall-clock seconds of the run"),
    "max_daily_cost_usd": (False, 0, "USD of every run on this machine today (the ledger)"),
    "stall_calls": (True, 0, "model calls without verified progress before the watchdog asks (0: off)"),
    "loop_repeat": (
        True,
        0,
        "the same action with the same result this many times in a row is a loop (0: off)",
    ),
    "loop_failing_repeat": (
        True,
        0,
        "the same failing action this many times within 10 actions is a loop (0: off)",
    ),
    "loop_alternation": (True, 0, "this many A-B cycles of two actions is a loop (0: off)"),
}
RUN_KEYS = ("max_tokens", "max_cost_usd", "max_calls", "max_seconds")
COST_KEYS = ("max_call_cost_usd", "max_cost_usd", "max_daily_cost_usd")
LOOP_KEYS = ("loop_repeat", "loop_failing_repeat", "loop_alternation")

# Without `stall_calls`, a run with a call budget gets a watchdog that asks after a tenth of it.
STALL_SHARE = 10
MIN_STALL_CALLS = 10


@dataclass(frozen=True)
class Budget:
    """The limits of one run. `pinned` holds keys given on the command line, which a marker keyword
    does not override (command line > marker > pyproject > default). `origins` says, by key, where
    the limit in force was set (`[tool.agentevals.budget]`, `--budget`, `@pytest.mark.resume`...):
    what a budget stop's fix names (`origin`)."""

    max_call_tokens: int | None = None
    max_call_cost_usd: float | None = None
    max_tokens: int | None = None
    max_cost_usd: float | None = None
    max_calls: int | None = None
    max_seconds: float | None = None
    max_daily_cost_usd: float | None = None
    stall_calls: int | None = None
    loop_repeat: int | None = None
    loop_failing_repeat: int | None = None
    loop_alternation: int | None = None
    pinned: frozenset[str] = field(default=frozenset(), compare=False)
    origins: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    # -- reading --------------------------------------------------------------------------------

    @classmethod
    def parse(cls, where: str, raw: Any) -> Budget:
        """A budget from a pyproject table (a mapping), or `"KEY=VALUE,KEY=VALUE"` / a list of
        `"KEY=VALUE"` strings (the command line). `where` names the source in errors."""
        if isinstance(raw, str):
            raw = [raw]
        if isinstance(raw, list | tuple):  # each item may hold several, comma-separated
            raw = parse_assignments(
                where, [part for item in raw for part in str(item).split(",") if part.strip()]
            )
        if not isinstance(raw, Mapping):
            raise ConfigError(
                where, f"{raw!r} is not a table", "write a [tool.agentevals.budget] table of KEY = number"
            )
        values: dict[str, Any] = {key: check(f"{where} {key}", key, value) for key, value in raw.items()}
        return cls(**values, origins=dict.fromkeys(values, where))

    def with_keywords(self, keywords: Mapping[str, Any], where: str) -> Budget:
        """This budget with marker keywords applied over it (a keyword given as None lifts that limit),
        except for keys pinned by the command line. Every keyword must be a budget key."""
        changes: dict[str, Any] = {}
        for key, value in keywords.items():
            checked = None if value is None and key in KEYS else check(f"{where}({key}=...)", key, value)
            if key not in self.pinned:
                changes[key] = checked
        if not changes:
            return self
        origins = {**self.origins, **dict.fromkeys(changes, where)}
        return dataclasses.replace(self, **changes, origins=origins)

    def merged(self, over: Budget) -> Budget:
        """This budget with every limit `over` sets laid over it (pinned keys add up)."""
        changes = {key: getattr(over, key) for key in KEYS if getattr(over, key) is not None}
        origins = {**self.origins, **{key: over.origins[key] for key in changes if key in over.origins}}
        return dataclasses.replace(self, pinned=self.pinned | over.pinned, **changes, origins=origins)

    def pin(self) -> Budget:
        """This budget with every key it sets pinned (as the command line's is)."""
        return dataclasses.replace(self, pinned=frozenset(self.as_dict()))

    # -- using ----------------------------------------------------------------------------------

    def as_dict(self) -> dict[str, float]:
        """The limits set, by key: what `run_start.budget` records."""
        return {key: value for key in KEYS if (value := getattr(self, key)) is not None}

    @property
    def watchdog_calls(self) -> int | None:
        """How many model calls without verified progress the watchdog allows, or None when it is off:
        `stall_calls` if set (0 turns it off), else a tenth of `max_calls` (at least 10), else off."""
        if self.stall_calls is not None:
            return self.stall_calls or None
        if self.max_calls:
            return max(MIN_STALL_CALLS, math.ceil(self.max_calls / STALL_SHARE))
        return None

    @property
    def loops(self) -> dict[str, int] | None:
        """The loop guard's thresholds, or None when it is off: on when any loop_* key is set (the
        others then default to 3, the metrics' default); a rule at 0 is off."""
        if all(getattr(self, key) is None for key in LOOP_KEYS):
            return None
        return {
            key.removeprefix("loop_"): (value if (value := getattr(self, key)) is not None else 3)
            for key in LOOP_KEYS
        }

    @property
    def empty(self) -> bool:
        return not self.as_dict()

    def origin(self, key: str) -> str | None:
        """Where the limit `key` in force was set, as a person writes it there, e.g.
        `@pytest.mark.resume(..., max_calls=5)`, `--budget max_calls=5`, `[tool.agentevals.budget]
        max_calls = 5 (pyproject.toml)`; None when it is not known (a budget built in Python)."""
        where, value = self.origins.get(key), getattr(self, key, None)
        if where is None or value is None:
            return None
        shown = f"{value:g}" if isinstance(value, float) else str(value)
        if where.startswith("--"):
            return f"{where} {key}={shown}"
        if where == PYPROJECT_TABLE:
            return f"{PYPROJECT_TABLE} {key} = {shown} (pyproject.toml)"
        if where == f"@pytest.mark.{BUDGET_MARKER}":
            return f"{where}({key}={shown})"
        if where.startswith("@pytest.mark."):  # a layer's marker: its own arguments beside
            return f"{where}(..., {key}={shown})"
        if where.isidentifier():  # a guard made in Python: RunBudget(max_calls=5)
            return f"{where}({key}={shown})"
        return f"{where} {key}={shown}"


PYPROJECT_TABLE = "[tool.agentevals.budget]"


def check(where: str, key: str, value: Any) -> int | float:
    """One budget value, checked: a known key, a number, not negative, whole where it must be."""
    if key not in KEYS:
        raise ConfigError(where, "unknown budget key", "use one of: " + ", ".join(KEYS))
    whole, minimum, _ = KEYS[key]
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise ConfigError(where, f"{value!r} is not a number", f"give {_kind(key)}") from None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(where, f"{value!r} is not a number", f"give {_kind(key)}")
    if value < minimum:
        raise ConfigError(where, f"{value!r} is below {minimum:g}", f"give {_kind(key)}")
    if whole:
        if int(value) != value:
            raise ConfigError(where, f"{value!r} is not a whole number", f"give {_kind(key)}")
        if key in LOOP_KEYS and value == 1:
            raise ConfigError(where, "1 is no loop", "give 0 (off) or at least 2")
        return int(value)
    return float(value)


def _kind(key: str) -> str:
    whole, minimum, what = KEYS[key]
    number = "a whole number" if whole else "a number"
    return f"{number} >= {minimum:g}: {what}"


def parse_assignments(where: str, items: Iterable[str]) -> dict[str, str]:
    """`["KEY=VALUE", ...]` as a mapping; a malformed item is a ConfigError naming it."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = str(item).partition("=")
        if not sep or not key.strip():
            raise ConfigError(where, f"{item!r} is not KEY=VALUE", "write e.g. max_cost_usd=2.5")
        out[key.strip()] = value.strip()
    return out


# The marker that sets a test's budget alone; a layer's marker (resume, marathon) may carry budget
# keywords beside its own.
BUDGET_MARKER = "agentevals_budget"
Mark = tuple[str, tuple[Any, ...], Mapping[str, Any]]  # a marker: its name, positional, keyword arguments


def with_marks(budget: Budget, marks: Iterable[Mark]) -> Budget:
    """`budget` with the budget keywords of `marks` applied in their order (the farthest first, so a
    function's marker wins over its class's and its module's). Keywords of a layer's marker that are
    not budget keys are left to the layer; `agentevals_budget` takes budget keys only."""
    for name, args, kwargs in marks:
        if name == BUDGET_MARKER and args:
            raise ConfigError(
                f"@pytest.mark.{BUDGET_MARKER}",
                "takes keywords only",
                "write e.g. agentevals_budget(max_calls=40)",
            )
        keywords = dict(kwargs) if name == BUDGET_MARKER else split_keywords(kwargs)[0]
        budget = budget.with_keywords(keywords, f"@pytest.mark.{name}")
    return budget


def split_keywords(keywords: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A marker's keywords split into budget keys and the rest (a layer's own arguments)."""
    budget = {key: value for key, value in keywords.items() if key in KEYS}
    return budget, {key: value for key, value in keywords.items() if key not in KEYS}
