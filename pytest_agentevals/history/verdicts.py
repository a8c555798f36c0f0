"""Verdicts per (test, variant, commit) and, per layer, the metrics over a window of recent verdicts.

A verdict is PASS (only passed), FAIL (only failed) or FLAKY (both passed and failed on the same code:
Google's rule). A commit run once can only be PASS or FAIL: flakiness shows up where a test runs more
than once on the same code (reruns, re-run CI jobs, repeated nightly runs).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from typing import Final

from ..stats import Interval, demonstrated_upper, wilson
from .store import RunFinal, RunLayer, VerdictCount

PASS: Final = "PASS"
FAIL: Final = "FAIL"
FLAKY: Final = "FLAKY"

VerdictKey = tuple[str, str, str]  # test_id, variant, sha


def verdict_of(passes: int, failures: int) -> str:
    """PASS, FAIL or FLAKY from the passing and failing attempts on one commit."""
    if passes and failures:
        return FLAKY
    if failures:
        return FAIL
    if passes:
        return PASS
    raise ValueError("a verdict needs at least one passing or failing attempt")


@dataclass(frozen=True)
class CommitVerdict:
    test_id: str
    variant: str
    layer: str | None
    sha: str
    verdict: str
    passes: int
    failures: int
    last: int  # recency

    @property
    def key(self) -> VerdictKey:
        return (self.test_id, self.variant, self.sha)


def verdicts(counts: Iterable[VerdictCount]) -> list[CommitVerdict]:
    """One verdict per count row, the most recent first."""
    out = [
        CommitVerdict(
            c.test_id,
            c.variant,
            c.layer,
            c.sha,
            verdict_of(c.passes, c.failures),
            c.passes,
            c.failures,
            c.last,
        )
        for c in counts
        if c.passes or c.failures
    ]
    out.sort(key=lambda v: v.last, reverse=True)
    return out


@dataclass(frozen=True)
class Offender:
    test_id: str
    variant: str
    flaky: int  # FLAKY verdicts in the window
    verdicts: int  # verdicts of this test variant in the window


@dataclass(frozen=True)
class FalseRed:
    runs: int  # runs in the window that ran tests of the layer
    red: int  # of which the layer went red (a test's last attempt in the run failed)
    false_red: int  # of which every failing test was FLAKY on that commit

    @property
    def rate(self) -> float | None:
        return self.false_red / self.runs if self.runs else None


@dataclass(frozen=True)
class LayerMetrics:
    layer: str | None  # None: the tests outside the pyramid (no layer marker)
    verdicts: int  # n: verdicts in the window
    flaky: int  # k: FLAKY among them
    interval: Interval  # Wilson 95% for k/n
    false_red: FalseRed
    offenders: tuple[Offender, ...]
    tests: int = 0  # test variants with a verdict in the window

    @property
    def rate(self) -> float | None:
        return self.flaky / self.verdicts if self.verdicts else None

    @property
    def demonstrated(self) -> float | None:
        """The 95% upper bound n clean verdicts demonstrate; None once a flake was seen."""
        return demonstrated_upper(self.verdicts) if self.verdicts and not self.flaky else None


def recent_runs(
    run_layers: Iterable[RunLayer], window: int, layers: Collection[str | None] | None = None
) -> list[str]:
    """The `window` most recent runs that ran tests of one of `layers` (None in it: tests outside the
    pyramid), or of any layer when `layers` is None."""
    last: dict[str, int] = {}
    for row in run_layers:
        if layers is None or row.layer in layers:
            last[row.run_id] = max(row.last, last.get(row.run_id, row.last))
    return sorted(last, key=last.__getitem__, reverse=True)[:window]


def false_red_of(
    runs: Iterable[str],
    failing: Iterable[RunFinal],
    flaky: set[VerdictKey],
    ignore: Callable[[str], bool] = lambda test_id: False,
) -> FalseRed:
    """Of `runs`: how many went red (a test's last attempt there failed, among `failing`), and how
    many only because every test that failed there was FLAKY on that commit (the `flaky` keys)."""
    wanted = list(runs)
    red_tests: dict[str, list[RunFinal]] = {run_id: [] for run_id in wanted}
    for final in failing:
        if final.run_id in red_tests and not ignore(final.test_id):
            red_tests[final.run_id].append(final)
    red = false_red = 0
    for rows in red_tests.values():
        if rows:
            red += 1
            if all((r.test_id, r.variant, r.sha) in flaky for r in rows):
                false_red += 1
    return FalseRed(len(wanted), red, false_red)


def layer_metrics(
    layer: str | None,
    all_verdicts: Iterable[CommitVerdict],
    *,
    window: int,
    run_layers: Iterable[RunLayer] = (),
    failing: Iterable[RunFinal] = (),
    flaky: set[VerdictKey] | None = None,
    ignore: Callable[[str], bool] = lambda test_id: False,
    offenders: int = 5,
) -> LayerMetrics:
    """A layer's metrics (None: the tests outside the pyramid) over its `window` most recent verdicts
    (and runs), leaving out the tests `ignore` says (quarantined ones). `all_verdicts` must be sorted
    most recent first; `flaky` (the FLAKY keys of all time, for false-red runs) defaults to those
    among `all_verdicts`."""
    mine = [v for v in all_verdicts if v.layer == layer and not ignore(v.test_id)]
    recent = mine[:window]
    k = sum(1 for v in recent if v.verdict == FLAKY)
    per_test: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for v in recent:
        tally = per_test[(v.test_id, v.variant)]
        tally[1] += 1
        if v.verdict == FLAKY:
            tally[0] += 1
    worst = sorted(
        (Offender(t, var, f, n) for (t, var), (f, n) in per_test.items() if f),
        key=lambda o: (-o.flaky, -o.flaky / o.verdicts, o.test_id, o.variant),
    )[:offenders]
    if flaky is None:
        flaky = {v.key for v in mine if v.verdict == FLAKY}
    runs = recent_runs(run_layers, window, {layer})
    layer_failing = (f for f in failing if f.layer == layer)
    return LayerMetrics(
        layer=layer,
        verdicts=len(recent),
        flaky=k,
        interval=wilson(k, len(recent)),
        false_red=false_red_of(runs, layer_failing, flaky, ignore),
        offenders=tuple(worst),
        tests=len(per_test),
    )
