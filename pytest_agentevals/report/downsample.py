"""Downsampling a run's series for drawing: a chart is some 800 pixels wide, a run may have 50,000
calls. Calls are cut into at most `MAX_BUCKETS` consecutive buckets; each keeps the extremes (the
lowest and highest context, in the order they came, and the largest call), the means a stacked bar
draws, and the running cost at its end, so no spike and no dip is lost. Verified progress keeps its
level at each bucket's end (it only rises). Markers are never downsampled: every one is kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..metrics import CallPoint, ProgressPoint, RunSeries

MAX_BUCKETS = 600


@dataclass
class CallBuckets:
    """Columns, one entry per bucket of consecutive successful model calls."""

    unit: str = "pressure"  # what `first`/`low`/`high` hold: "pressure" (of the window) or "tokens"
    step_lo: list[int] = field(default_factory=list)
    step_hi: list[int] = field(default_factory=list)
    t: list[float] = field(default_factory=list)  # the time of the bucket's first call
    calls: list[int] = field(default_factory=list)
    # context: the two extremes in the order they came (equal for a one-call bucket)
    ctx_a: list[float] = field(default_factory=list)
    ctx_b: list[float] = field(default_factory=list)
    ctx_tokens: list[int] = field(default_factory=list)  # the largest context, in tokens
    # tokens per call, the bucket's mean, by kind; and its largest call
    input: list[float] = field(default_factory=list)
    cache_write: list[float] = field(default_factory=list)
    cache_read: list[float] = field(default_factory=list)
    output: list[float] = field(default_factory=list)
    largest: list[int] = field(default_factory=list)
    cost: list[float] = field(default_factory=list)  # cumulative at the bucket's end

    def __len__(self) -> int:
        return len(self.step_lo)

    def to_json(self) -> dict[str, Any]:
        return {
            "unit": self.unit,
            "s0": self.step_lo,
            "s1": self.step_hi,
            "t": [round(t, 3) for t in self.t],
            "n": self.calls,
            "ca": [_round(v) for v in self.ctx_a],
            "cb": [_round(v) for v in self.ctx_b],
            "ct": self.ctx_tokens,
            "in": [round(v, 1) for v in self.input],
            "cw": [round(v, 1) for v in self.cache_write],
            "cr": [round(v, 1) for v in self.cache_read],
            "out": [round(v, 1) for v in self.output],
            "max": self.largest,
            "cost": [round(v, 6) for v in self.cost],
        }


@dataclass
class ProgressBuckets:
    """Verified progress over steps (its level at the end of each bucket of steps that had a
    check) and the checks themselves: how many passed and failed, and the best passing value."""

    step: list[int] = field(default_factory=list)
    level: list[float] = field(default_factory=list)
    passed: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    best: list[float] = field(default_factory=list)  # the highest value a passing check reported

    def __len__(self) -> int:
        return len(self.step)

    def to_json(self) -> dict[str, Any]:
        return {
            "s": self.step,
            "p": [round(v, 4) for v in self.level],
            "ok": self.passed,
            "ko": self.failed,
            "best": [round(v, 4) for v in self.best],
        }


def bucket_calls(calls: list[CallPoint], max_buckets: int = MAX_BUCKETS) -> CallBuckets:
    unit = "pressure" if calls and all(c.context_pressure is not None for c in calls) else "tokens"
    out = CallBuckets(unit=unit)
    n = len(calls)
    buckets = min(n, max_buckets)
    # The calls' columns once, each bucket a slice of them (a live run is bucketed at every update).
    values = [_context(c, unit) for c in calls]
    steps = [c.step for c in calls]
    tokens = [c.context_tokens for c in calls]
    kinds = [
        [c.input_tokens for c in calls],
        [c.cache_write_tokens for c in calls],
        [c.cache_read_tokens for c in calls],
        [c.output_tokens for c in calls],
    ]
    sums = (out.input, out.cache_write, out.cache_read, out.output)
    totals = [_total(c) for c in calls]
    for b in range(buckets):
        lo, hi = b * n // buckets, (b + 1) * n // buckets
        chunk = values[lo:hi]
        size = hi - lo
        low, high = chunk.index(min(chunk)), chunk.index(max(chunk))  # the first of each
        first, second = sorted((low, high))
        out.step_lo.append(steps[lo])
        out.step_hi.append(steps[hi - 1])
        out.t.append(calls[lo].t)
        out.calls.append(size)
        out.ctx_a.append(chunk[first])
        out.ctx_b.append(chunk[second])
        out.ctx_tokens.append(max(tokens[lo:hi]))
        for column, kind in zip(sums, kinds, strict=True):
            column.append(sum(kind[lo:hi]) / size)
        out.largest.append(max(totals[lo:hi]))
        out.cost.append(calls[hi - 1].cumulative_cost_usd)
    return out


def bucket_progress(
    points: list[ProgressPoint], last_step: int, max_buckets: int = MAX_BUCKETS
) -> ProgressBuckets:
    """Checks grouped by step into at most `max_buckets` spans of the run's steps."""
    out = ProgressBuckets()
    span = max(1, -(-max(last_step, 1) // max_buckets))  # steps per bucket, rounded up
    for point in points:
        key = point.step // span * span if span > 1 else point.step
        if not out.step or out.step[-1] != key:
            out.step.append(key)
            out.level.append(point.progress)
            out.passed.append(0)
            out.failed.append(0)
            out.best.append(0.0)
        out.level[-1] = max(out.level[-1], point.progress)
        if point.passed:
            out.passed[-1] += 1
            out.best[-1] = max(out.best[-1], point.value)
        else:
            out.failed[-1] += 1
    return out


def series_json(series: RunSeries, calls: CallBuckets, progress: ProgressBuckets) -> dict[str, Any]:
    """What the page's script reads: the buckets, every marker and the recorded budget."""
    return {
        "calls": calls.to_json(),
        "progress": progress.to_json(),
        # Every marker, without its label (each chart's glyph holds it in its <title>).
        "markers": {
            "kind": [m.kind for m in series.markers],
            "step": [m.step for m in series.markers],
            "t": [round(m.t, 3) for m in series.markers],
        },
        "budget": series.budget,
    }


def _context(call: CallPoint, unit: str) -> float:
    if unit == "pressure" and call.context_pressure is not None:
        return call.context_pressure
    return float(call.context_tokens)


def _total(call: CallPoint) -> int:
    return call.input_tokens + call.cache_write_tokens + call.cache_read_tokens + call.output_tokens


def _round(value: float) -> float:
    return round(value, 5) if value < 10 else round(value, 1)
