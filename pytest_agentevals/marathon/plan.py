"""The marathon's plan: the `marathon` marker's keywords and their parsers (checked once at
collection by the face's `MarkerSpec`; a mistake is a usage error naming the test and the keyword),
the plan of seeds a checked marker asks for, the reserve seeds `max_seeds` may call in, and which
seeds a session runs (`plan_seeds`: a pure function of the plans, the results kept from earlier
sessions and the session's seed selection)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError
from ..recording.verify import check_command
from ..settings.budgets import KEYS as BUDGET_KEYS
from ..settings.budgets import check as check_budget
from ..settings.seeds import SeedSelection, extra_seeds, planned_seeds
from ..trace.events import RUN_STATUSES
from .results import Plan, SeedResult
from .verdict import THRESHOLDS, judge


def _count(minimum: int) -> Any:
    def parse(where: str, raw: Any) -> int:
        if isinstance(raw, bool) or not isinstance(raw, int) or raw < minimum:
            raise ConfigError(
                where, f"{raw!r} is not a whole number >= {minimum}", f"give an int >= {minimum}"
            )
        return raw

    return parse


def _threshold(keyword: str) -> Any:
    unit = THRESHOLDS[keyword].unit

    def parse(where: str, raw: Any) -> float:
        ok = isinstance(raw, int | float) and not isinstance(raw, bool) and math.isfinite(raw)
        if not ok or raw < 0 or (unit == "rate" and raw > 1):
            fix = "give a rate from 0 to 1" if unit == "rate" else "give USD >= 0"
            raise ConfigError(where, f"{raw!r} is not a bar", fix)
        return float(raw)

    return parse


def _usd(where: str, raw: Any) -> float:
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not math.isfinite(raw) or raw < 0:
        raise ConfigError(where, f"{raw!r} is not an amount", "give USD >= 0")
    return float(raw)


def _statuses(where: str, raw: Any) -> tuple[str, ...]:
    values = (raw,) if isinstance(raw, str) else raw
    if not isinstance(values, list | tuple) or not all(v in RUN_STATUSES for v in values):
        raise ConfigError(where, f"{raw!r} is not a list of run statuses", "use: " + ", ".join(RUN_STATUSES))
    return tuple(values)


def _anything(where: str, raw: Any) -> Any:
    return raw  # the task: any value, handed to the agent as it is


def _budget_key(key: str) -> Any:
    def parse(where: str, raw: Any) -> Any:
        return None if raw is None else check_budget(where, key, raw)

    return parse


# The marker's own keywords and their parsers; the face declares the marker (a MarkerSpec) from them.
KEYWORDS: dict[str, Any] = {
    "seeds": planned_seeds,
    "max_seeds": _count(1),
    "max_restarts": _count(0),
    "task": _anything,
    "fail_on": _statuses,
    "verify": check_command,  # a check run in the seed's workspace after the agent (recording/verify.py)
    "max_total_cost_usd": _usd,
    **{keyword: _threshold(keyword) for keyword in THRESHOLDS},
    **{key: _budget_key(key) for key in BUDGET_KEYS},
}
DEFAULT_SEEDS = 3


def plan_of(values: Any, where: str = "@pytest.mark.marathon") -> Plan:
    """The plan a checked marker asks for; ConfigError for keywords that do not fit together."""
    seeds = values.get("seeds", tuple(range(DEFAULT_SEEDS)))
    max_seeds = values.get("max_seeds")
    if max_seeds is not None and max_seeds < len(seeds):
        raise ConfigError(
            f"{where}(max_seeds={max_seeds})",
            f"is fewer than the {len(seeds)} seeds planned",
            "give max_seeds at least as large as seeds, or leave it out",
        )
    total = values.get("max_total_cost_usd")
    if total is not None and max_seeds is None:
        raise ConfigError(
            f"{where}(max_total_cost_usd=...)",
            "bounds the seeds max_seeds adds, and max_seeds is not set",
            "give max_seeds too, or cap each run with max_cost_usd",
        )
    thresholds = {keyword: values[keyword] for keyword in THRESHOLDS if keyword in values}
    return Plan(tuple(seeds), max_seeds, thresholds, total)


def reserve_of(plan: Plan) -> tuple[int, ...]:
    """The planned seeds and the reserve max_seeds may call in: every seed an item is made for."""
    extra = (plan.max_seeds or len(plan.seeds)) - len(plan.seeds)
    return (*plan.seeds, *extra_seeds(plan.seeds, extra))


@dataclass(frozen=True)
class SeedChoice:
    """Which of a marathon test's collected seeds a session runs: `chosen` (the selection's share of
    the active seeds; each a test), `active` (the planned seeds, the kept ones and the reserve the
    stored verdict calls in; a collected seed outside them is not a test of this session), `partial`
    (the selection left active seeds out) and `kept` (results at this commit from earlier sessions,
    by seed: those seeds are skipped, their results kept)."""

    chosen: frozenset[int]
    active: frozenset[int]
    partial: bool
    kept: Mapping[int, SeedResult]

    def expected(self) -> tuple[int, ...]:
        """The seeds of this test the session runs or keeps, in order."""
        return tuple(sorted(self.chosen))


def plan_seeds(
    test: str,
    plan: Plan,
    collected: Sequence[int],
    stored: Iterable[SeedResult],
    selection: SeedSelection | None,
) -> SeedChoice:
    """The seeds of `test` a session runs, from its `plan`, the seeds collected (in order), the results
    stored at this commit and the session's seed selection (a CI job's share). Reserve seeds are
    called in only when every planned seed has a kept result and their verdict asks for more."""
    kept = {result.seed: result for result in stored if result.test == test}
    active = set(plan.seeds) | set(kept)
    if plan.max_seeds is not None and all(seed in kept for seed in plan.seeds):
        active |= set(judge(test, kept.values(), plan=plan).grow)
    ordered = [seed for seed in collected if seed in active]
    chosen = set(selection.select(ordered) if selection is not None else ordered)
    return SeedChoice(frozenset(chosen), frozenset(active), chosen != set(ordered), kept)
