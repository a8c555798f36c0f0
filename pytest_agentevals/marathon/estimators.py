"""The estimators a marathon's verdict and `compare` use, each a pure function (docs/marathon.md).

- `pass_at_k(n, c, k)`: the chance that at least one of k runs drawn without replacement from the n
  seen passes, 1 - C(n-c, k) / C(n, k) — the unbiased estimator of pass@k;
- `pass_hat_k(n, c, k)`: the chance that all k pass, C(c, k) / C(n, k) — unbiased for pass^k;
- `bootstrap(values, seed=...)`: a percentile bootstrap interval of the mean, from a seeded generator,
  so the same values give the same interval on every machine and worker;
- `bootstrap_ratio(...)`: the same for a ratio of sums (cost per verified pass);
- `mcnemar_exact(b, c)`: the two-sided exact McNemar test on discordant pairs;
- `smallest_detectable_*`: the smallest effect n paired runs could detect (alpha 0.05, power 0.8).

The Wilson interval of a rate is the history's (`stats.wilson`, which the history shares).
"""

from __future__ import annotations

import math
import random
import statistics
import zlib
from collections.abc import Sequence

from ..stats import Z95, Interval, wilson

__all__ = [
    "RESAMPLES",
    "Interval",
    "bootstrap",
    "bootstrap_ratio",
    "mcnemar_exact",
    "pass_at_k",
    "pass_hat_k",
    "seed_of",
    "smallest_detectable_difference",
    "smallest_detectable_pass_rate",
    "wilson",
]

RESAMPLES = 2000
ALPHA = 0.05
Z_POWER80 = 0.8416212335729143  # the one-sided 80% normal quantile
MCNEMAR_MIN_DISCORDANT = 6  # all discordant pairs one way: 2 * 0.5**6 < 0.05 <= 2 * 0.5**5


def _check(n: int, c: int, k: int) -> None:
    if n < 0 or not 0 <= c <= n:
        raise ValueError(f"c={c} passes of n={n} runs is not possible")
    if k < 1:
        raise ValueError(f"k={k}: k counts runs, from 1")


def pass_at_k(n: int, c: int, k: int) -> float | None:
    """At least one pass in k runs: 1 - C(n-c, k)/C(n, k). None when k > n (not estimable)."""
    _check(n, c, k)
    if k > n:
        return None
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float | None:
    """Every one of k runs passes: C(c, k)/C(n, k). None when k > n (not estimable)."""
    _check(n, c, k)
    if k > n:
        return None
    return math.comb(c, k) / math.comb(n, k)


def seed_of(*parts: object) -> int:
    """A stable generator seed from names (a test id): the same on every machine and Python run."""
    return zlib.crc32("\x1f".join(str(part) for part in parts).encode("utf-8"))


def _percentiles(stats: list[float], confidence: float) -> Interval:
    stats.sort()
    tail = (1.0 - confidence) / 2.0
    low = stats[max(0, math.floor(tail * len(stats)))]
    high = stats[min(len(stats) - 1, math.ceil((1.0 - tail) * len(stats)) - 1)]
    return Interval(low, high)


def bootstrap(
    values: Sequence[float], *, seed: int, resamples: int = RESAMPLES, confidence: float = 0.95
) -> Interval | None:
    """A percentile bootstrap interval of the mean of `values`; None with fewer than 2 values (one
    value says nothing about its spread). With few values it is narrower than the truth: docs."""
    if len(values) < 2:
        return None
    rng = random.Random(seed)
    data = list(values)
    n = len(data)
    means = [math.fsum(rng.choices(data, k=n)) / n for _ in range(resamples)]
    return _percentiles(means, confidence)


def bootstrap_ratio(
    numerators: Sequence[float],
    denominators: Sequence[float],
    *,
    seed: int,
    resamples: int = RESAMPLES,
    confidence: float = 0.95,
) -> Interval | None:
    """A percentile bootstrap interval of sum(numerators) / sum(denominators), resampling the pairs;
    a resample whose denominators sum to 0 counts as +infinity (cost per pass with no pass). None
    with fewer than 2 pairs."""
    if len(numerators) != len(denominators):
        raise ValueError("numerators and denominators must pair up")
    if len(numerators) < 2:
        return None
    rng = random.Random(seed)
    pairs = list(zip(numerators, denominators, strict=True))
    n = len(pairs)
    ratios: list[float] = []
    for _ in range(resamples):
        sample = rng.choices(pairs, k=n)
        below = math.fsum(pair[1] for pair in sample)
        ratios.append(math.fsum(pair[0] for pair in sample) / below if below > 0 else math.inf)
    return _percentiles(ratios, confidence)


def mcnemar_exact(b: int, c: int) -> float:
    """The two-sided exact McNemar p-value of b pairs discordant one way and c the other (a binomial
    test of b against b + c at one half). 1.0 with no discordant pair."""
    if b < 0 or c < 0:
        raise ValueError("counts of pairs are >= 0")
    total = b + c
    if total == 0:
        return 1.0
    tail: float = sum(math.comb(total, i) for i in range(min(b, c) + 1)) / 2**total
    return min(1.0, 2.0 * tail)


def smallest_detectable_pass_rate(pairs: int) -> float | None:
    """The smallest difference in pass rate that `pairs` paired runs could show at the 5% level: at
    least 6 discordant pairs all one way, 6/pairs. None when there are fewer than 6 pairs: no
    difference could be shown at all."""
    if pairs < MCNEMAR_MIN_DISCORDANT:
        return None
    return MCNEMAR_MIN_DISCORDANT / pairs


def smallest_detectable_difference(differences: Sequence[float]) -> float | None:
    """The smallest mean difference paired runs with this spread could detect with 80% power at the
    5% level: (z_0.975 + z_0.8) * sd / sqrt(n). None with fewer than 2 pairs."""
    if len(differences) < 2:
        return None
    return (Z95 + Z_POWER80) * statistics.stdev(differences) / math.sqrt(len(differences))
