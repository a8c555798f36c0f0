"""The three charts of a run, as inline SVG over one step axis, and the overview's small multiples.

1. verified progress (its level, the checks that passed and failed, the verified pass);
2. context pressure: each call's context against the model's window, with the compaction mark;
3. token spend per call by kind (stacked), the largest call, the cumulative cost and the budgets.

All three share the x scale and margins, so a step is at the same pixel on each, and each carries
every marker (checkpoints, compactions, the watchdog, loops, restarts, crashes, retried 429/529s,
guards, budget stops, divergences) with a tooltip: an SVG `<title>`, which the page's script also
shows at once (other elements carry theirs in `data-tip`). Markers of one kind closer than
`MARKER_PX` pixels share one glyph (its tooltip lists them and `data-count` says how many), so a run
with ten thousand checkpoints draws a few hundred glyphs.
Every text from the trace goes through `html.escape`.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from ..metrics import MARKER_KINDS, Marker
from . import numbers
from .downsample import CallBuckets, ProgressBuckets

WIDTH = 960
LEFT = 72
RIGHT = 72
PLOT = WIDTH - LEFT - RIGHT
MARKER_ROWS = 3  # glyphs near each other stack in up to three rows above the plot
GLYPH = 10  # a glyph's width and row height, in pixels
TOP = 4 + MARKER_ROWS * GLYPH  # the marker glyphs' band
BOTTOM = 34  # the step and time labels
MARKER_PX = 3
LABELS_PER_GLYPH = 4
DENSE_GLYPHS = 40  # a kind with more glyphs than this on a chart is drawn as a band
BAND_PX = 24  # a band's block: the markers of its kind within this many pixels

KIND_NAMES = {
    "checkpoint": "checkpoint",
    "compaction": "compaction",
    "watchdog": "watchdog",
    "loop": "loop",
    "restart": "restart",
    "crash": "crash",
    "retry": "retried 429/529",
    "guard": "guard",
    "budget_stop": "budget stop",
    "divergence": "replay divergence",
}
# Kinds a run may have hundreds of: their glyphs may overlap one another.
COMMON_KINDS = frozenset({"checkpoint", "retry"})
# Drawn last on top: the rare, important kinds after the common ones.
_DRAW_ORDER = (
    "retry",
    "checkpoint",
    "compaction",
    "guard",
    "watchdog",
    "loop",
    "restart",
    "divergence",
    "budget_stop",
    "crash",
)


@dataclass(frozen=True)
class XScale:
    """Steps to pixels, the same for every chart of a run."""

    last: int  # the domain is [0, last]

    def __call__(self, step: float) -> float:
        return LEFT + PLOT * min(max(step, 0.0), self.last) / self.last


@dataclass(frozen=True)
class Budgets:
    """The recorded budgets the charts draw: the call budget as a vertical line on every chart, the
    per-call token limit on the spend chart's left axis, the run's cost limit on its right axis."""

    max_calls: int | None
    max_call_tokens: int | None
    max_cost_usd: float | None

    @classmethod
    def of(cls, budget: dict[str, Any] | None) -> Budgets:
        budget = budget or {}
        return cls(
            _int(budget.get("max_calls")),
            _int(budget.get("max_call_tokens")),
            _float(budget.get("max_cost_usd")),
        )


def x_domain(last_step: int, budgets: Budgets) -> XScale:
    """Steps 0 to the last one, stretched to the call budget when it is near (within half again)."""
    last = max(last_step, 1)
    if budgets.max_calls is not None and budgets.max_calls <= last * 1.5:
        last = max(last, budgets.max_calls)
    return XScale(last)


# -- the frame ----------------------------------------------------------------------------------------


def _open(chart: str, height: int, label: str, extra: str = "") -> str:
    return (
        f'<svg class="chart" data-chart="{chart}" viewBox="0 0 {WIDTH} {height}" '
        f'preserveAspectRatio="xMinYMin meet" role="img" aria-label="{escape(label)}"{extra}>'
        f'<rect class="plot" x="{LEFT}" y="{TOP}" width="{PLOT}" height="{height - TOP - BOTTOM}"/>'
    )


def _close(height: int) -> str:
    # The cursor the page's script moves along a run's three charts.
    return f'<line class="cursor" x1="0" x2="0" y1="{TOP}" y2="{height - BOTTOM}" visibility="hidden"/></svg>'


def _x_axis(x: XScale, height: int, times: CallBuckets) -> str:
    bottom = height - BOTTOM
    parts = [f'<line class="axis" x1="{LEFT}" x2="{LEFT + PLOT}" y1="{bottom}" y2="{bottom}"/>']
    for step in _ticks(x.last, 7):
        px = _f(x(step))
        when = _time_at(times, step)
        parts.append(
            f'<line class="tick" x1="{px}" x2="{px}" y1="{bottom}" y2="{bottom + 4}"/>'
            f'<text class="xl" x="{px}" y="{bottom + 15}">{step:,}</text>'
            + (f'<text class="xt" x="{px}" y="{bottom + 28}">{escape(when)}</text>' if when else "")
        )
    parts.append(
        f'<text class="xl end" x="{LEFT - 8}" y="{bottom + 15}">step</text>'
        f'<text class="xt end" x="{LEFT - 8}" y="{bottom + 28}">time</text>'
    )
    return "".join(parts)


def _y_axis(ticks: Sequence[float], y: Any, label: Any, right: bool = False, cls: str = "") -> str:
    parts = []
    for value in ticks:
        py = _f(y(value))
        if right:
            parts.append(
                f'<text class="yl right {cls}" x="{LEFT + PLOT + 6}" y="{py}">{escape(label(value))}</text>'
            )
        else:
            parts.append(
                f'<line class="grid" x1="{LEFT}" x2="{LEFT + PLOT}" y1="{py}" y2="{py}"/>'
                f'<text class="yl {cls}" x="{LEFT - 6}" y="{py}">{escape(label(value))}</text>'
            )
    return "".join(parts)


def _calls_line(x: XScale, budgets: Budgets, height: int) -> str:
    if budgets.max_calls is None or budgets.max_calls > x.last:
        return ""
    px = _f(x(budgets.max_calls))
    tip = f"call budget: max_calls {budgets.max_calls:,}"
    return (
        f'<line class="budget" data-budget="max_calls" x1="{px}" x2="{px}" y1="{TOP}" y2="{height - BOTTOM}" '
        f'data-tip="{escape(tip)}"><title>{escape(tip)}</title></line>'
    )


# -- markers ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MarkerLayout:
    """Where a run's markers go, the same on each of its charts (the charts differ in height only):
    the dense kinds' bands, and each glyph as its SVG before and after its line's lower end."""

    bands: str
    glyphs: tuple[tuple[str, str], ...]  # in drawing order: the SVG up to `y2="`, and after its value


def marker_layout(markers: Sequence[Marker], x: XScale) -> MarkerLayout:
    """The layout `markers_svg` draws: made once for a run's three charts."""
    groups: dict[tuple[str, int], list[Marker]] = {}
    pxs = _xs(x, [marker.step for marker in markers])
    for marker, px in zip(markers, pxs, strict=True):
        groups.setdefault((marker.kind, int(px // MARKER_PX)), []).append(marker)
    glyphs: dict[str, int] = {}
    for kind, _ in groups:
        glyphs[kind] = glyphs.get(kind, 0) + 1
    dense = {kind for kind, count in glyphs.items() if count > DENSE_GLYPHS}
    bands: dict[tuple[str, int], list[Marker]] = {}
    for marker, px in zip(markers, pxs, strict=True):
        if marker.kind in dense:
            bands.setdefault((marker.kind, int(px // BAND_PX)), []).append(marker)
    groups = {key: group for key, group in groups.items() if key[0] not in dense}
    rows = MARKER_ROWS - 1 if dense else MARKER_ROWS  # the top row is the bands'
    order = {kind: i for i, kind in enumerate(_DRAW_ORDER)}
    by_priority = sorted(groups.items(), key=lambda item: (-order.get(item[0][0], -1), item[0][1]))
    placed: list[list[float]] = [[] for _ in range(rows)]  # the rarer glyphs' x in each row
    drawn: list[tuple[str, str]] = []
    for (kind, _), group in by_priority:
        px = x(group[0].step)
        row = next((r for r in range(rows) if all(abs(px - other) >= GLYPH for other in placed[r])), rows - 1)
        if kind not in COMMON_KINDS:  # the common ones may overlap one another, never hide a rare one
            placed[row].append(px)
        drawn.append(_glyph(kind, group, px, row))
    lane = sorted(dense, key=lambda kind: order.get(kind, -1))
    band_parts = [
        _band(kind, group, bucket, lane.index(kind), len(lane))
        for (kind, bucket), group in sorted(
            bands.items(), key=lambda item: (lane.index(item[0][0]), item[0][1])
        )
    ]
    # The bands first (underneath), then the rarest glyphs drawn last.
    return MarkerLayout("".join(band_parts), tuple(reversed(drawn)))


def markers_svg(markers: Sequence[Marker], x: XScale, height: int, layout: MarkerLayout | None = None) -> str:
    """Every marker, one glyph per kind and `MARKER_PX` pixels, with its tooltip. Glyphs that would
    overlap stack in rows above the plot, the rarest kinds placed first, nearest the plot.

    A kind that would draw more than `DENSE_GLYPHS` glyphs (130 checkpoints, a retry every few
    steps) is drawn as a band instead, in the top row: one block per `BAND_PX` pixels holding how
    many there are, with no line down the plot — so it no longer crowds the top of every chart, and
    the rare kinds keep their glyphs and lines.

    `layout`: `marker_layout(markers, x)`, made once for several charts."""
    layout = layout if layout is not None else marker_layout(markers, x)
    end = f'{height - BOTTOM}"'
    glyphs = "".join(head + end + tail for head, tail in layout.glyphs)
    return f'<g class="markers">{layout.bands}{glyphs}</g>'


def _band(kind: str, group: Sequence[Marker], bucket: int, lane: int, lanes: int) -> str:
    """A dense kind's block: its markers within `BAND_PX` pixels, and how many."""
    tip = marker_tip(group)
    safe_kind = kind if kind in MARKER_KINDS else "other"
    height = max(3.0, (GLYPH - 1) / lanes)
    top = TOP - MARKER_ROWS * GLYPH + lane * height
    x0 = max(float(LEFT), bucket * BAND_PX)
    x1 = min(float(LEFT + PLOT), (bucket + 1) * BAND_PX) - 1
    count = (
        f'<text x="{_f((x0 + x1) / 2)}" y="{_f(top + height - 1.5)}">{len(group)}</text>'
        if lanes == 1
        else ""
    )
    return (
        f'<g class="marker band k-{safe_kind}" data-kind="{escape(kind)}" data-step="{group[0].step}" '
        f'data-count="{len(group)}"><title>{escape(tip)}</title>'
        f'<rect x="{_f(x0)}" y="{_f(top)}" width="{_f(max(1.0, x1 - x0))}" height="{_f(height)}"/>'
        f"{count}</g>"
    )


def _glyph(kind: str, group: Sequence[Marker], px: float, row: int) -> tuple[str, str]:
    """A glyph's SVG up to its line's lower end (`y2="`, the chart's height less `BOTTOM`), and after it."""
    x, tip = _f(px), marker_tip(group)
    safe_kind = kind if kind in MARKER_KINDS else "other"
    return (
        f'<g class="marker k-{safe_kind}" data-kind="{escape(kind)}" data-step="{group[0].step}" '
        f'data-count="{len(group)}"><title>{escape(tip)}</title>'
        f'<line x1="{x}" x2="{x}" y1="{TOP - row * GLYPH}" y2="',
        f'/><path d="M{x} {TOP - 1 - row * GLYPH}l-5 -9h10z"/></g>',
    )


def marker_tip(group: Sequence[Marker]) -> str:
    name = KIND_NAMES.get(group[0].kind, group[0].kind)
    if len(group) == 1:
        marker = group[0]
        return f"step {marker.step:,} · {numbers.duration(marker.t)} · {name}: {marker.label}"
    lines = [f"{len(group)} x {name}, steps {group[0].step:,} to {group[-1].step:,}"]
    lines.extend(f"step {m.step:,}: {m.label}" for m in group[:LABELS_PER_GLYPH])
    if len(group) > LABELS_PER_GLYPH:
        lines.append(f"… and {len(group) - LABELS_PER_GLYPH} more")
    return "\n".join(lines)


# -- 1. verified progress -----------------------------------------------------------------------------

PROGRESS_HEIGHT = 150


def progress_chart(
    progress: ProgressBuckets,
    x: XScale,
    times: CallBuckets,
    markers: Sequence[Marker],
    budgets: Budgets,
    verified_at: int | None,
    last_step: int,
    layout: MarkerLayout | None = None,
) -> str:
    h = PROGRESS_HEIGHT
    y = _linear(0.0, 1.0, h)
    parts = [_open("progress", h, "verified progress over steps")]
    parts.append(_y_axis([0.0, 0.25, 0.5, 0.75, 1.0], y, lambda v: f"{v:.0%}"))
    # The level: a step line from step 0, held to the run's last step.
    d = [f"M{_f(x(0))} {_f(y(0))}"]
    d.extend(
        f"H{px}V{py}"
        for px, py in zip(_fs(_xs(x, progress.step)), _fs(_ys(0.0, 1.0, h, progress.level)), strict=True)
    )
    d.append(f"H{_f(x(max(last_step, progress.step[-1] if progress.step else 0)))}")
    line = "".join(d)
    parts.append(f'<path class="area" d="{line}V{_f(y(0))}Z"/>')
    parts.append(f'<path class="level" data-series="progress" data-points="{len(progress)}" d="{line}"/>')
    ok = "".join(
        f"M{_f(x(s))} {_f(y(b))}m-2.5 0h5"
        for s, b, n in zip(progress.step, progress.best, progress.passed, strict=True)
        if n
    )
    ko = "".join(  # a failed check: a red triangle on the axis, and a red line up the plot
        f"M{_f(x(s))} {_f(y(0) - 6)}l-5 9h10zM{_f(x(s))} {_f(y(0) - 6)}V{TOP}"
        for s, n in zip(progress.step, progress.failed, strict=True)
        if n
    )
    passed, failed = sum(1 for n in progress.passed if n), sum(1 for n in progress.failed if n)
    parts.append(f'<path class="checks-ok" data-series="checks-passed" data-points="{passed}" d="{ok}"/>')
    parts.append(f'<path class="checks-ko" data-series="checks-failed" data-points="{failed}" d="{ko}"/>')
    if verified_at is not None:
        px = _f(x(verified_at))
        tip = f"verified pass at step {verified_at:,}"
        parts.append(
            f'<g class="pass" data-tip="{escape(tip)}"><title>{escape(tip)}</title>'
            f'<line x1="{px}" x2="{px}" y1="{TOP}" y2="{h - BOTTOM}"/></g>'
        )
    parts.append(_calls_line(x, budgets, h))
    parts.append(_x_axis(x, h, times))
    parts.append(markers_svg(markers, x, h, layout))
    parts.append(_close(h))
    return "".join(parts)


# -- 2. context pressure ------------------------------------------------------------------------------

CONTEXT_HEIGHT = 150


@dataclass(frozen=True)
class Mark:
    """The compaction high-water mark, in the chart's unit, and how it was known."""

    value: float
    tokens: int
    said: bool  # the harness said it (`high_water`), rather than the lowest context it compacted at


def context_chart(
    calls: CallBuckets,
    x: XScale,
    markers: Sequence[Marker],
    budgets: Budgets,
    mark: Mark | None,
    layout: MarkerLayout | None = None,
) -> str:
    h = CONTEXT_HEIGHT
    pressure = calls.unit == "pressure"
    top = max([*calls.ctx_a, *calls.ctx_b, mark.value if mark else 0.0, 0.0])
    ymax = _nice(top * 1.15) if top > 0 else (1.0 if pressure else 1000.0)
    y = _linear(0.0, ymax, h)
    parts = [_open("context", h, "context pressure over steps")]
    label = (
        (lambda v: numbers.percent(v, 0 if ymax >= 0.1 else 1)) if pressure else (lambda v: numbers.tokens(v))
    )
    parts.append(_y_axis(_steps_of(ymax), y, label))
    d: list[str] = []
    columns = (
        calls.step_lo,
        calls.step_hi,
        calls.ctx_a,
        calls.ctx_b,
        _fs(_xs(x, calls.step_lo)),
        _fs(_xs(x, calls.step_hi)),
        _fs(_ys(0.0, ymax, h, calls.ctx_a)),
        _fs(_ys(0.0, ymax, h, calls.ctx_b)),
    )
    for lo, hi, a, b, x_lo, x_hi, y_a, y_b in zip(*columns, strict=True):
        d.append(f"{'L' if d else 'M'}{x_lo} {y_a}")
        if hi != lo or a != b:
            d.append(f"L{x_hi} {y_b}")
    parts.append(
        f'<path class="context" data-series="context" data-points="{len(calls)}" '
        f'data-unit="{calls.unit}" d="{"".join(d)}"/>'
    )
    if mark is not None:
        py = _f(y(mark.value))
        how = "compaction mark" if mark.said else "compaction mark (the lowest context compacted at)"
        tip = f"{how}: {mark.tokens:,} tokens" + (
            f" ({numbers.percent(mark.value)} of the window)" if pressure else ""
        )
        parts.append(
            f'<g class="hwm" data-tokens="{mark.tokens}" data-tip="{escape(tip)}">'
            f"<title>{escape(tip)}</title>"
            f'<line x1="{LEFT}" x2="{LEFT + PLOT}" y1="{py}" y2="{py}"/>'
            f'<text x="{LEFT + 4}" y="{_f(y(mark.value) - 4)}">{escape(how)}</text></g>'
        )
    parts.append(_calls_line(x, budgets, h))
    parts.append(_x_axis(x, h, calls))
    parts.append(markers_svg(markers, x, h, layout))
    parts.append(_close(h))
    return "".join(parts)


# -- 3. token spend and cost --------------------------------------------------------------------------

SPEND_HEIGHT = 170
TOKEN_KINDS = (
    ("input", "uncached input"),
    ("cache_write", "cache write"),
    ("cache_read", "cache read"),
    ("output", "output"),
)


def spend_chart(
    calls: CallBuckets,
    x: XScale,
    markers: Sequence[Marker],
    budgets: Budgets,
    layout: MarkerLayout | None = None,
) -> tuple[str, list[str]]:
    """The chart and the notes on budgets it could not draw (too far above what was spent)."""
    h = SPEND_HEIGHT
    notes: list[str] = []
    largest = max(calls.largest, default=0)
    top = largest
    if budgets.max_call_tokens is not None:
        if budgets.max_call_tokens <= max(largest, 1) * 3:
            top = max(top, budgets.max_call_tokens)
        else:
            notes.append(f"per-call limit {budgets.max_call_tokens:,} tokens (off the chart)")
    ymax = _nice(top * 1.1) if top > 0 else 1000.0
    y = _linear(0.0, ymax, h)
    spent = calls.cost[-1] if calls.cost else 0.0
    ctop = spent
    if budgets.max_cost_usd is not None:
        if budgets.max_cost_usd <= max(spent, 1e-9) * 20:
            ctop = max(ctop, budgets.max_cost_usd)
        else:
            used = numbers.percent(spent / budgets.max_cost_usd)
            notes.append(f"cost limit {numbers.usd(budgets.max_cost_usd)} (off the chart: {used} used)")
    cmax = _nice(ctop * 1.1) if ctop > 0 else 0.01
    yc = _linear(0.0, cmax, h)
    parts = [_open("spend", h, "token spend per call by kind, cumulative cost")]
    parts.append(_y_axis(_steps_of(ymax), y, numbers.tokens))
    parts.append(_y_axis(_steps_of(cmax), yc, numbers.usd_tick, right=True, cls="usd"))
    # Stacked bars, one path per kind: a bar per bucket, as wide as its steps.
    # Each bar's left and right edges, and the top of the kinds below it, are formatted once.
    lefts = _xs(x, [lo - 0.5 for lo in calls.step_lo])
    rights = _xs(x, [hi + 0.5 for hi in calls.step_hi])
    x0s = _fs(lefts)
    x1s = _fs([max(x1, x0 + 0.6) for x0, x1 in zip(lefts, rights, strict=True)])
    base = [0.0] * len(calls)
    tops = [_f(y(0.0))] * len(calls)
    for name, _ in TOKEN_KINDS:
        values: list[float] = getattr(calls, name)
        if len(values) != len(calls):
            raise ValueError(f"{len(values)} {name} values for {len(calls)} buckets")
        d = []
        for i, value in enumerate(values):
            if value <= 0:
                continue
            base[i] += value
            y0, y1 = tops[i], _f(y(base[i]))
            tops[i] = y1
            d.append(f"M{x0s[i]} {y0}V{y1}H{x1s[i]}V{y0}Z")
        parts.append(
            f'<path class="bar t-{name}" data-series="{name}" data-points="{len(d)}" d="{"".join(d)}"/>'
        )
    middles = _fs(_xs(x, [(lo + hi) / 2 for lo, hi in zip(calls.step_lo, calls.step_hi, strict=True)]))
    big = "".join(
        f"{'L' if i else 'M'}{px} {py}"
        for i, (px, py) in enumerate(zip(middles, _fs(_ys(0.0, ymax, h, calls.largest)), strict=True))
    )
    if len(calls) < sum(calls.calls):  # downsampled: the largest call of each bucket, over the means
        parts.append(f'<path class="largest" data-series="largest" data-points="{len(calls)}" d="{big}"/>')
    cost = "".join(
        f"{'L' if i else 'M'}{px} {py}"
        for i, (px, py) in enumerate(
            zip(_fs(_xs(x, calls.step_hi)), _fs(_ys(0.0, cmax, h, calls.cost)), strict=True)
        )
    )
    parts.append(f'<path class="cost" data-series="cost" data-points="{len(calls)}" d="{cost}"/>')
    if budgets.max_call_tokens is not None and budgets.max_call_tokens <= ymax:
        parts.append(
            _hline(
                "max_call_tokens",
                y(budgets.max_call_tokens),
                f"per-call limit: {budgets.max_call_tokens:,} tokens",
            )
        )
    if budgets.max_cost_usd is not None and budgets.max_cost_usd <= cmax:
        parts.append(
            _hline(
                "max_cost_usd", yc(budgets.max_cost_usd), f"cost limit: {numbers.usd(budgets.max_cost_usd)}"
            )
        )
    parts.append(_calls_line(x, budgets, h))
    parts.append(_x_axis(x, h, calls))
    parts.append(markers_svg(markers, x, h, layout))
    parts.append(_close(h))
    return "".join(parts), notes


def _hline(key: str, py: float, tip: str) -> str:
    return (
        f'<g class="budget" data-budget="{key}" data-tip="{escape(tip)}"><title>{escape(tip)}</title>'
        f'<line x1="{LEFT}" x2="{LEFT + PLOT}" y1="{_f(py)}" y2="{_f(py)}"/>'
        f'<text x="{LEFT + PLOT - 4}" y="{_f(py - 4)}">{escape(tip)}</text></g>'
    )


# -- the overview's small multiples -------------------------------------------------------------------

SPARK_W, SPARK_H, SPARK_POINTS = 110, 30, 55


def sparkline(kind: str, points: Sequence[tuple[float, float]], last: float, top: float, tip: str) -> str:
    """A tiny line chart of (step, value) points on [0, last] by [0, top]."""
    if len(points) > SPARK_POINTS:  # keep each stretch's extremes
        stride = len(points) / SPARK_POINTS
        kept: list[tuple[float, float]] = []
        for i in range(SPARK_POINTS):
            chunk = points[int(i * stride) : int((i + 1) * stride)] or [points[-1]]
            low, high = min(chunk, key=lambda p: p[1]), max(chunk, key=lambda p: p[1])
            kept.extend(sorted({low, high}))
        points = kept
    last = max(last, 1.0)
    top = top if top > 0 else 1.0

    def px(p: tuple[float, float]) -> str:
        return (
            f"{_f(2 + (SPARK_W - 4) * p[0] / last)} {_f(SPARK_H - 2 - (SPARK_H - 4) * min(p[1], top) / top)}"
        )

    d = "".join(f"{'L' if i else 'M'}{px(p)}" for i, p in enumerate(points))
    return (
        f'<svg class="spark" data-spark="{kind}" viewBox="0 0 {SPARK_W} {SPARK_H}" role="img" '
        f'aria-label="{escape(tip)}"><title>{escape(tip)}</title><path d="{d}"/></svg>'
    )


# -- helpers ------------------------------------------------------------------------------------------


def _linear(low: float, high: float, height: int) -> Callable[[float], float]:
    bottom, span = height - BOTTOM, height - BOTTOM - TOP

    def y(value: float) -> float:
        return float(bottom - span * (min(max(value, low), high) - low) / (high - low))

    return y


def _nice(value: float) -> float:
    """The next 'round' number at or above value: 1, 2, 2.5, 5 times a power of ten."""
    if value <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    for factor in (1.0, 2.0, 2.5, 5.0, 10.0):
        if value <= factor * power * (1 + 1e-9):
            return factor * power
    return 10.0 * power


def _steps_of(top: float) -> list[float]:
    """Ticks from 0 to `top` at a round interval, three to six of them."""
    step = _nice(top / 5)
    return [step * i for i in range(int(top / step + 1e-9) + 1)]


def _ticks(last: int, count: int) -> list[int]:
    step = max(1, int(_nice(last / count)))
    return list(range(0, last + 1, step))


def _time_at(calls: CallBuckets, step: int) -> str:
    if not len(calls):
        return ""
    if not calls.step_lo[0] <= step <= calls.step_hi[-1]:
        return ""
    return numbers.duration(calls.t[max(0, bisect.bisect_right(calls.step_lo, step) - 1)])


def _f(value: float) -> str:
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


def _fs(values: Iterable[float]) -> list[str]:
    """`_f` of each value (in one pass: a chart formats thousands of numbers)."""
    texts = [f"{value:.1f}" for value in values]
    return [text[:-2] if text.endswith(".0") else text for text in texts]


def _xs(x: XScale, steps: Iterable[float]) -> list[float]:
    """`x(step)` of each step, in one pass."""
    last = x.last
    return [LEFT + PLOT * min(max(step, 0.0), last) / last for step in steps]


def _ys(low: float, high: float, height: int, values: Iterable[float]) -> list[float]:
    """`_linear(low, high, height)(value)` of each value, in one pass."""
    bottom, span = height - BOTTOM, height - BOTTOM - TOP
    return [float(bottom - span * (min(max(value, low), high) - low) / (high - low)) for value in values]


def _int(value: Any) -> int | None:
    return value if type(value) is int and value > 0 else None


def _float(value: Any) -> float | None:
    return (
        float(value) if isinstance(value, int | float) and not isinstance(value, bool) and value > 0 else None
    )
