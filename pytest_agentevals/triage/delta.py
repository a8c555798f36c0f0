"""Delta debugging (Zeller and Hildebrandt's ddmin): a failing input cut down to a 1-minimal one.

`ddmin(items, fails)` returns a subsequence of `items`, in their order, for which `fails` still holds
and from which removing any single item makes it stop holding (1-minimal). `fails` must hold for
`items` itself. Each distinct subset is tested once (the answers are cached), so `tests` in the
result counts what the reduction cost.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from ..errors import TriageError

T = TypeVar("T")


@dataclass(frozen=True)
class Reduced(Generic[T]):
    items: list[T]
    kept: list[int]  # the indices into the input of the items kept
    tests: int  # distinct subsets tested, the input's own test included


def ddmin(items: Sequence[T], fails: Callable[[list[T]], bool]) -> Reduced[T]:
    cache: dict[tuple[int, ...], bool] = {}

    def test(indices: Sequence[int]) -> bool:
        key = tuple(indices)
        if key not in cache:
            cache[key] = bool(fails([items[i] for i in key]))
        return cache[key]

    current = list(range(len(items)))
    if not test(current):
        raise TriageError("ddmin needs an input that fails, and this one does not")
    if test([]):
        return Reduced([], [], len(cache))
    n = 2
    while len(current) >= 2:
        size = -(-len(current) // n)  # ceil
        chunks = [current[i : i + size] for i in range(0, len(current), size)]
        for chunk in chunks:
            if test(chunk):
                current, n = chunk, 2
                break
        else:
            for chunk in chunks:
                rest = [i for i in current if i not in chunk]
                if test(rest):
                    current, n = rest, max(n - 1, 2)
                    break
            else:
                if n >= len(current):
                    break
                n = min(2 * n, len(current))
    return Reduced([items[i] for i in current], current, len(cache))
