"""Verdicts per (test, variant, commit) and, per layer, the metrics over a window of recent verdicts.

A verdict is PASS (only passed), FAIL (only failed) or FLAKY (both passed and failed on the same code:
Google's rule). A commit run once can only be PASS or FAIL: flakiness shows up where a test runs more
than once on the same code (reruns, re-run CI jobs, repeated nightly runs).

An attempt a budget stopped (`budget_stopped`) is neither a pass nor a failure by default (the
`budget_stops` setting "exclude"): it makes no verdict and no flip, and a commit where every attempt
was stopped is STOPPED, which is no verdict either. It is counted, per layer, over the same window
("1 of 12 attempts stopped by budget"). With `budget_stops = "fail"` a stop counts as a failure.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from typing import Final

from ..stats import Interval, demonstrated_upper, wilson
from .model import STOPS_EXCLUDED, STOPS_FAIL
from .store import RunFinal, RunLayer, VerdictCount

PASS: Final = "PASS"
FAIL: Final = "FAIL"
FLAKY: Final = "FLAKY"
STOPPED: Final = "STOPPED"  # every attempt on the commit was stopped by a budget: no verdict

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
    failures: int  # a budget stop among them when budget_stops is "fail"
    last: int  # recency
    stopped: int = 0  # attempts a budget stopped, counted as failures or not
    attempts: int = 0  # every attempt on the commit but skips: passes, failures and stops

    @property
    def key(self) -> VerdictKey:
        return (self.test_id, self.variant, self.sha)

    @property
    def judged(self) -> bool:
        """Whether this is a verdict (PASS, FAIL, FLAKY), not a commit of budget stops only."""
        return self.verdict != STOPPED


def verdicts(counts: Iterable[VerdictCount], budget_stops: str = STOPS_EXCLUDED) -> list[CommitVerdict]:
    """One verdict per count row, the most recent first: budget stops left out of it (a commit with
    only stops is STOPPED), or, with `budget_stops` "fail", counted as failures."""
    out = []
    for c in counts:
        failures = c.failures + (c.stopped if budget_stops == STOPS_FAIL else 0)
        if c.passes or failures:
            verdict = verdict_of(c.passes, failures)
        elif c.stopped:
            verdict = STOPPED
        else:
            continue
        attempts = c.passes + c.failures + c.stopped
        out.append(
            CommitVerdict(
                c.test_id, c.variant, c.layer, c.sha, verdict, c.passes, failures, c.last, c.stopped, attempts
            )
        )
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
    attempts: int = 0  # attempts behind the window's verdicts, and its commits of budget stops only
    stopped: int = 0  # of which a budget stopped (left out of the rate, or failures with "fail")

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
    window_rows = mine[:window]  # a commit of budget stops only takes its place in the window too
    recent = [v for v in window_rows if v.judged]
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
        attempts=sum(v.attempts for v in window_rows),
        stopped=sum(v.stopped for v in window_rows),
    )
