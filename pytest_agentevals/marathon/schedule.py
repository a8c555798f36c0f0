"""The order a marathon's seeds are handed to xdist workers: longest first.

xdist's load scheduler gives each worker a chunk of the items in collection order and the rest one
by one to whichever worker runs short first. In seed order, which worker gets the last seeds is a
race: with five seeds on two workers, the worker whose first seed ends first takes the fifth, and if
a short seed (a stalled run) sits in the other worker's chunk, one worker runs three long seeds while
the other idles. Handed out longest first (each seed's duration in its latest result in the results
file, at any commit), the short seeds are the ones left to fill in at the end, whoever takes them.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence


def longest_first(
    seeds: Sequence[int], durations: Mapping[int, float], kept: Collection[int] = ()
) -> list[int]:
    """The positions of `seeds` in the order to hand them out: a seed with no known duration first
    (it may be long), then the others by their last duration, longest first, then the kept seeds
    (skipped this session: nothing to run); ties keep the given order."""

    def key(position: int) -> tuple[int, float, int]:
        seed = seeds[position]
        if seed in kept:
            return (2, 0.0, position)
        duration = durations.get(seed)
        if duration is None or not math.isfinite(duration):
            return (0, 0.0, position)
        return (1, -duration, position)

    return sorted(range(len(seeds)), key=key)
