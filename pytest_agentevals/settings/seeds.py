"""Which seeds a marathon runs: the marker's `seeds=` (a count or a list), and the selection of one
session or CI job (`--agentevals-seeds 0-4`, `1,3,7` or the shard `2/5`).

A count `seeds=5` is the seeds 0 to 4. `max_seeds=8` lets a marathon whose verdict is inconclusive
grow to 8 seeds: the extra ones continue after the largest planned seed (5, 6, 7 here).

A selection picks seeds by value (`0-4`, `1,3,7`, `0-2,9`) or by position (`i/N`: of each test's
seeds in order, those at positions i-1, i-1+N, i-1+2N... so N jobs split every test's seeds between
them, whatever the seeds are).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError

SELECTION_FORMS = "a seed (3), a range (0-4), a list (1,3,7 or 0-2,9) or a shard i/N (2/5)"
MAX_SEEDS = 10_000  # more seeds than any marathon runs: a typo, not a plan
_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")
_RANGE = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$")


def planned_seeds(where: str, raw: Any) -> tuple[int, ...]:
    """The marker's `seeds=`: a count N (seeds 0..N-1) or a list of distinct seeds >= 0."""
    if isinstance(raw, bool):
        raise ConfigError(where, f"{raw!r} is not a number of seeds", "give a count >= 1 or a list of seeds")
    if isinstance(raw, int):
        if raw < 1:
            raise ConfigError(where, f"{raw} seeds run nothing", "give a count >= 1, e.g. seeds=5")
        if raw > MAX_SEEDS:
            raise ConfigError(where, f"{raw} seeds is more than {MAX_SEEDS}", "give fewer seeds")
        return tuple(range(raw))
    if isinstance(raw, list | tuple | range):
        seeds = tuple(raw)
        if not seeds:
            raise ConfigError(where, "an empty list of seeds runs nothing", "list at least one seed")
        for seed in seeds:
            if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
                raise ConfigError(where, f"{seed!r} is not a seed", "seeds are whole numbers >= 0")
        if len(set(seeds)) != len(seeds):
            twice = sorted({seed for seed in seeds if seeds.count(seed) > 1})
            raise ConfigError(where, f"seed {twice[0]} is listed twice", "list each seed once")
        return seeds
    raise ConfigError(where, f"{raw!r} is not a number of seeds", "give a count >= 1 or a list of seeds")


def extra_seeds(planned: Sequence[int], count: int) -> tuple[int, ...]:
    """`count` seeds beyond the planned ones: after the largest, in order."""
    start = max(planned) + 1 if planned else 0
    return tuple(range(start, start + max(0, count)))


@dataclass(frozen=True)
class SeedSelection:
    """The seeds one session runs of each marathon test: by value, or a shard by position."""

    text: str
    values: frozenset[int] | None = None  # by value
    shard: tuple[int, int] | None = None  # (i, N), 1-based i

    def select(self, seeds: Sequence[int]) -> tuple[int, ...]:
        """The seeds of `seeds` (a test's, in their order) this selection runs."""
        if self.shard is not None:
            index, count = self.shard
            return tuple(seed for position, seed in enumerate(seeds) if position % count == index - 1)
        assert self.values is not None
        return tuple(seed for seed in seeds if seed in self.values)

    def __str__(self) -> str:
        return self.text


def parse_selection(key: str, raw: Any) -> SeedSelection:
    """`--agentevals-seeds`: `3`, `0-4`, `1,3,7`, `0-2,9`, or the shard `i/N`."""
    if isinstance(raw, SeedSelection):
        return raw
    if isinstance(raw, bool) or not isinstance(raw, str | int):
        raise ConfigError(key, f"{raw!r} is not a seed selection", f"give {SELECTION_FORMS}")
    text = str(raw).strip()
    shard = _SHARD.match(text)
    if shard:
        index, count = int(shard.group(1)), int(shard.group(2))
        if count < 1 or not 1 <= index <= count:
            raise ConfigError(key, f"{text!r} is not a shard", "give i/N with 1 <= i <= N, e.g. 2/5")
        return SeedSelection(text, shard=(index, count))
    values: set[int] = set()
    for part in text.split(","):
        if not part.strip():
            continue
        match = _RANGE.match(part)
        if not match:
            raise ConfigError(key, f"{part.strip()!r} is not a seed or a range", f"give {SELECTION_FORMS}")
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) is not None else first
        if last < first:
            raise ConfigError(key, f"{part.strip()!r} is an empty range", "write the smaller seed first: 0-4")
        if last - first >= MAX_SEEDS:
            raise ConfigError(key, f"{part.strip()!r} is more than {MAX_SEEDS} seeds", "give a smaller range")
        values.update(range(first, last + 1))
    if not values:
        raise ConfigError(key, "selects no seed", f"give {SELECTION_FORMS}")
    return SeedSelection(text, values=frozenset(values))


def describe(seeds: Sequence[int]) -> str:
    """`0-4, 7, 9-10`: seeds as a person reads them."""
    ordered = sorted(set(seeds))
    parts: list[str] = []
    index = 0
    while index < len(ordered):
        end = index
        while end + 1 < len(ordered) and ordered[end + 1] == ordered[end] + 1:
            end += 1
        first, last = ordered[index], ordered[end]
        parts.append(str(first) if first == last else f"{first}-{last}")
        index = end + 1
    return ", ".join(parts) if parts else "none"
