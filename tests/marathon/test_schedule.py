"""The order a marathon's seeds are handed to xdist workers (marathon/schedule.py)."""

from __future__ import annotations

import math

from pytest_agentevals.marathon.schedule import longest_first


def test_longest_first_unknown_before_known_and_kept_seeds_last() -> None:
    seeds = [0, 1, 2, 3, 4, 5]
    durations = {0: 2.0, 1: 9.0, 3: 2.0, 4: 0.5, 5: 7.0}
    order = longest_first(seeds, durations, kept={5})
    assert [seeds[i] for i in order] == [2, 1, 0, 3, 4, 5]  # 0 and 3 tie: the given order


def test_without_durations_the_order_is_kept_and_a_non_finite_one_counts_as_unknown() -> None:
    assert longest_first([3, 1, 2], {}) == [0, 1, 2]
    assert longest_first([0, 1], {0: 1.0, 1: math.nan}) == [1, 0]
