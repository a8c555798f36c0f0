"""Interval estimates for a rate seen as k events in n trials."""

from __future__ import annotations

import math
from dataclasses import dataclass

Z95 = 1.959963984540054  # the two-sided 95% normal quantile


@dataclass(frozen=True)
class Interval:
    low: float
    high: float


def wilson(k: int, n: int, z: float = Z95) -> Interval:
    """The Wilson score interval for k successes in n trials (95% by default).

    Unlike the normal approximation it stays inside [0, 1] and behaves at k = 0 and k = n, which is
    where a flakiness rate usually lives. With n = 0 it is the whole of [0, 1].
    """
    if n <= 0:
        return Interval(0.0, 1.0)
    if not 0 <= k <= n:
        raise ValueError(f"k={k} is not between 0 and n={n}")
    p = k / n
    z2 = z * z
    denominator = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    return Interval(max(0.0, centre - half), min(1.0, centre + half))


def demonstrated_upper(n: int, confidence: float = 0.95) -> float:
    """The highest rate still consistent, at `confidence`, with seeing no event in n trials.

    The exact one-sided bound 1 - (1 - confidence)^(1/n): about 3/n at 95% (the "rule of three").
    It is what n clean verdicts demonstrate: "flaky less than this often".
    """
    if n <= 0:
        return 1.0
    return 1.0 - math.pow(1.0 - confidence, 1.0 / n)
