"""The run console as one self-contained HTML page: inline CSS, inline SVG, a little JavaScript, and
the data the script reads as JSON in a `<script type="application/json">` block. Nothing is fetched:
a Content-Security-Policy allows only the page's own style and script (by hash) and data: images.

The page is built as fragments, each naming its place ("run 2 (x.trace.jsonl): step 41 of the
transcript"), so the secret check can say where a key-shaped string would have landed. Every text
from a trace is escaped where it is written (`html.escape`), and the JSON block escapes `<`, `>`,
`&`, U+2028 and U+2029, so no trace text can end the block or the page's markup.
"""

from __future__ import annotations

import base64
import hashlib
import json
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from html import escape
from importlib import resources
from typing import Any, TypeVar

from .. import __version__
from ..marathon import VerdictRow
from ..metrics import ContextWindows
from . import charts, header, numbers
from .charts import Budgets, Mark, XScale
from .downsample import CallBuckets, ProgressBuckets, bucket_calls, bucket_progress, series_json
from .run import RunView
from .transcript import StepRecord, Text
from .triage import Triage, triage_html
from .verdicts import verdicts_html

# The whole texts behind a transcript's previews, in characters, for the page: past it, the records
# with the most text keep their previews only.
TRANSCRIPT_BUDGET = 2_000_000


@dataclass(frozen=True)
class Fragment:
    place: str  # where it is on the page, for a person
    text: str
    data: Any = None  # the data a JSON fragment was made from (the secret check walks it)
    packed: str = ""  # text the fragment holds compressed, which a reader sees unpacked


def pack(value: Any) -> str:
    """JSON, deflated (zlib) and in base64: what the page's script unpacks with
    `DecompressionStream("deflate")`. For the all-steps text, which repeats itself a lot."""
    raw = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "replace")
    return base64.b64encode(zlib.compress(raw, 9)).decode("ascii")


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def json_for_script(data: Any) -> str:
    """JSON that cannot end a `<script>` block nor be read as markup: `<`, `>` and `&` as \\u
    escapes (so no `</script>` or `<!--`), and the two line separators JavaScript once choked on."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=str)
    for char, escaped in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(char, escaped)
    return text


@dataclass
class Drawn:
    """A run's charts and what the script needs to follow them."""

    x: XScale
    calls: CallBuckets
    progress: ProgressBuckets
    mark: Mark | None


def render_page(
    runs: Sequence[RunView],
    *,
    title: str,
    verdicts: Sequence[VerdictRow] = (),
    context_windows: Mapping[str, int] | None = None,
    live: Mapping[str, Any] | None = None,
    triage: Sequence[Triage] = (),
) -> list[Fragment]:
    """The page, as fragments in order; `"".join(f.text for f in fragments)` is the HTML.

    `live` (the live console, `live.py`): what the script needs to ask its own server for updates.
    The policy is the static page's, with one source more: `connect-src 'self'`, for those updates."""
    css, js = _asset("page.css"), _asset("page.js")
    connect = "connect-src 'self'; " if live is not None else ""
    csp = (
        f"default-src 'none'; style-src {_hash(css)}; script-src {_hash(js)}; img-src data:; {connect}"
        "base-uri 'none'; form-action 'none'"
    )
    frags = [
        Fragment(
            "the page's head",
            '<!doctype html><html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            '<meta name="referrer" content="no-referrer">'
            f"<title>{escape(title)}</title><style>{css}</style></head><body><main>",
        ),
        Fragment("the page's title", f"<h1>{escape(title)}</h1>{_subtitle(runs)}{_all_problems(runs)}"),
    ]
    verdicts_part = verdicts_html(verdicts)
    if verdicts_part:
        frags.append(Fragment("the marathon verdicts", verdicts_part))
    if triage:
        # A ranked run links to its section when its trace is on the page too (by seed, as rank names it).
        anchors = {
            f"seed {run.metrics.seed}": f"run-{i + 1}"
            for i, run in enumerate(runs)
            if run.metrics.seed is not None
        }
        frags.append(Fragment("the triage section", triage_html(triage, anchors)))
    drawn = [_draw(run, context_windows) for run in runs]
    if len(runs) > 1:
        frags.append(Fragment("the overview", overview(runs, drawn)))
    if not runs:
        frags.append(
            Fragment("the page", '<p class="empty">No run was recorded, so there is nothing to show.</p>')
        )
    data: dict[str, Any] = {
        "geom": {"left": charts.LEFT, "plot": charts.PLOT, "width": charts.WIDTH},
        "runs": [],
    }
    if live is not None:
        data["live"] = dict(live)
    unpacked: list[dict[str, Any]] = []  # the runs' data as a reader sees it, for the secret check
    for index, (run, chart) in enumerate(zip(runs, drawn, strict=True)):
        frags.extend(run_section(index, run, chart))
        shown, seen = run_data(run, chart)
        data["runs"].append(shown)
        unpacked.append(seen)
    frags.append(
        Fragment(
            "the page's footer",
            f"<footer>Written by pytest-agentevals {escape(__version__)} from {len(runs)} trace(s). "
            + (
                "Watched live: the page asks only the server that sent it for what the traces added."
                if live is not None
                else "The page makes no request: everything it shows is in this file."
            )
            + "</footer></main>"
            '<div id="tip" class="tip" hidden></div>',
        )
    )
    frags.append(
        Fragment(
            "the data embedded in the page",
            f'<script type="application/json" id="agentevals-data">{json_for_script(data)}</script>',
            {**data, "runs": unpacked},
            "\n".join("\n".join(run.transcript.lines) for run in runs),
        )
    )
    frags.append(Fragment("the page's script", f"<script>{js}</script></body></html>"))
    return frags


def _subtitle(runs: Sequence[RunView]) -> str:
    if len(runs) == 1:
        return (
            '<p class="mute">One run: its progress, context pressure and token spend over steps, '
            "then its transcript.</p>"
        )
    return f'<p class="mute">{len(runs)} runs: an overview, then each run.</p>'


def _all_problems(runs: Sequence[RunView]) -> str:
    items = [
        f'<li><a href="#run-{i + 1}">run {i + 1}</a> ({escape(str(run.path))}): {escape(problem)}</li>'
        for i, run in enumerate(runs)
        for problem in run.problems
    ]
    if not items:
        return ""
    kind = "problems bad" if any(run.damaged for run in runs) else "problems"
    return (
        f'<div class="{kind}" id="problems"><strong>Read with problems:</strong>'
        f"<ul>{''.join(items)}</ul></div>"
    )


@dataclass(frozen=True)
class SectionParts:
    """A run's section as the parts the live console's page puts together (`redraw.py`): `outer`,
    the section's own content (its header, charts, metrics), then `transcript`, the content of its
    transcript (its intro and each step kept whole). `fragments()` is the section as a page holds it."""

    index: int
    where: str
    outer: list[Fragment]
    transcript: list[Fragment]

    @property
    def opening(self) -> str:
        return f'<section class="run" id="run-{self.index + 1}" data-run="{self.index}">'

    def fragments(self) -> list[Fragment]:
        head, *rest = self.outer
        intro, *records = self.transcript
        return [
            Fragment(head.place, self.opening + head.text),
            *rest,
            Fragment(intro.place, TRANSCRIPT_OPENING + intro.text),
            *records,
            Fragment(intro.place, "</section>"),
            Fragment(self.where, "</section>"),
        ]


TRANSCRIPT_OPENING = '<section class="transcript">'


def run_section(
    index: int,
    run: RunView,
    chart: Drawn,
    *,
    charts: str | None = None,
    record: Callable[[int, StepRecord], str] | None = None,
) -> list[Fragment]:
    """One run's section of the page: its header, charts, metrics and transcript."""
    return section_parts(index, run, chart, charts=charts, record=record).fragments()


def section_parts(
    index: int,
    run: RunView,
    chart: Drawn,
    *,
    charts: str | None = None,
    record: Callable[[int, StepRecord], str] | None = None,
) -> SectionParts:
    """`run_section`, in its parts. `charts` (`charts_html(run, chart)`) and `record`
    (`record_html`) are for a caller that keeps what it drew before (the live console,
    `redraw.py`): they must give what those functions give."""
    where = f"run {index + 1} ({run.path})"
    outer = [
        Fragment(f"{where}: its header", header.run_header(index, run)),
        Fragment(f"{where}: its charts", charts if charts is not None else charts_html(run, chart)),
        Fragment(f"{where}: its metrics", header.metrics_table(run.metrics)),
    ]
    return SectionParts(index, where, outer, _transcript(index, run, where, record or record_html))


def run_data(
    run: RunView, chart: Drawn, *, lines: bool = True, series: dict[str, Any] | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The run's data for the script: as the page holds it, and as a reader sees it (unpacked).
    Without `lines`, the all-steps text is left for the script to ask for when it is opened (the
    live console's updates: packing every step's line again at each update would cost the most).
    `series`: `series_json(run.series, chart.calls, chart.progress)`, made before (the live console)."""
    shown: dict[str, Any] = {
        "x": chart.x.last,
        "series": series if series is not None else series_json(run.series, chart.calls, chart.progress),
        "steps": run.transcript.steps,
    }
    if not lines:
        return shown, shown
    shown["lines_z"] = pack(run.transcript.lines)
    return shown, {**shown, "lines_z": run.transcript.lines}


def draw(
    run: RunView, context_windows: Mapping[str, int] | None = None, calls: CallBuckets | None = None
) -> Drawn:
    """A run's charts' scales and buckets (for `run_section`, `run_data` and the overview).
    `calls`: `bucket_calls(run.series.calls)`, made before (the live console, for the same calls)."""
    return _draw(run, context_windows, calls)


def draw_inputs(run: RunView) -> tuple[Any, ...]:
    """What `draw` and `series_json` draw from, for a caller that draws a growing run again (the
    live console, `redraw.py`): equal while the run's series (which only grow), its compactions and
    its last model are the same, so the same inputs draw the same buckets."""
    series = run.series
    models = run.metrics.models
    return (
        len(series.calls),
        len(series.progress),
        len(series.markers),
        series.budget,
        len(run.compactions),
        models[-1] if models else None,
    )


def charts_inputs(run: RunView) -> tuple[Any, ...]:
    """What `charts_html` draws from beyond `draw_inputs`: the numbers its legends show. A number
    added to a legend goes here too, or the live console would show it stale (tests/report/test_live.py
    compares its sections with fresh ones at every update)."""
    m = run.metrics
    return (
        *draw_inputs(run),
        m.progress_auc,
        m.step_budget,
        m.verified_at_step,
        m.peak_context_pressure,
        m.peak_context_step,
        m.peak_context_tokens,
        m.cost_usd,
    )


# -- charts -------------------------------------------------------------------------------------------


def _last_step(run: RunView) -> int:
    series = run.series
    candidates = [0]
    if series.calls:
        candidates.append(series.calls[-1].step)
    candidates.extend(point.step for point in series.progress[-1:])
    candidates.extend(marker.step for marker in series.markers[-1:])
    return max(candidates)


def _draw(run: RunView, context_windows: Mapping[str, int] | None, calls: CallBuckets | None = None) -> Drawn:
    budgets = Budgets.of(run.series.budget)
    last = _last_step(run)
    calls = calls if calls is not None else bucket_calls(run.series.calls)
    return Drawn(
        charts.x_domain(last, budgets),
        calls,
        bucket_progress(run.series.progress, last),
        _mark(run, calls, context_windows),
    )


def _mark(run: RunView, calls: CallBuckets, context_windows: Mapping[str, int] | None) -> Mark | None:
    """The compaction high-water mark: the one the harness said, else the lowest context compacted at."""
    if not run.compactions:
        return None
    said = [c.high_water for c in run.compactions if c.high_water]
    tokens = said[-1] if said else min(c.tokens_before for c in run.compactions)
    if calls.unit == "tokens":
        return Mark(float(tokens), tokens, bool(said))
    window = ContextWindows(context_windows).window(run.metrics.models[-1]) if run.metrics.models else None
    return Mark(tokens / window, tokens, bool(said)) if window else None


ChartMemo = dict[str, tuple[tuple[Any, ...], Any]]
_T = TypeVar("_T")


def _kept(memo: ChartMemo | None, name: str, key: tuple[Any, ...], make: Callable[[], _T]) -> _T:
    """`make()`, or what it made for the same `key` the last time (in `memo`, when there is one)."""
    if memo is None:
        return make()
    known = memo.get(name)
    if known is None or known[0] != key:
        known = memo[name] = (key, make())
    made: _T = known[1]
    return made


def charts_html(run: RunView, drawn: Drawn, memo: ChartMemo | None = None) -> str:
    """A run's three charts with their legends. `memo` (the live console, `redraw.py`) keeps each
    chart with what it was drawn from, for the same run as it grows (its series only grow: their
    lengths say what changed), so a chart is drawn again only when what it shows changed."""
    m, series = run.metrics, run.series
    budgets = Budgets.of(series.budget)
    markers = series.markers
    x, calls, last = drawn.x, len(series.calls), _last_step(run)
    placed = (len(markers), x)
    layout = _kept(memo, "layout", placed, lambda: charts.marker_layout(markers, x))  # for all three
    spend, notes = _kept(
        memo,
        "spend",
        (calls, x, budgets, placed),
        lambda: charts.spend_chart(drawn.calls, x, markers, budgets, layout),
    )
    progress = _kept(
        memo,
        "progress",
        (len(series.progress), calls, last, x, budgets, m.verified_at_step, placed),
        lambda: charts.progress_chart(
            drawn.progress, x, drawn.calls, markers, budgets, m.verified_at_step, last, layout
        ),
    )
    context = _kept(
        memo,
        "context",
        (calls, x, budgets, drawn.mark, placed),
        lambda: charts.context_chart(drawn.calls, x, markers, budgets, drawn.mark, layout),
    )
    downsampled = len(drawn.calls) < len(series.calls)
    shown = (
        f" Drawn from {len(series.calls):,} calls in {len(drawn.calls)} buckets (each keeps its extremes)."
        if downsampled
        else ""
    )
    failed_checks = sum(1 for point in series.progress if not point.passed)
    progress_legend = (
        '<span class="sw line l-level"></span>verified progress (the most verified so far)'
        " · a dash: a check passed (at its value) · "
        + (
            f'<strong class="failed-checks" data-count="{failed_checks}">▲ {failed_checks:,} '
            f"check{'s' if failed_checks != 1 else ''} failed</strong> (in red, up the chart)"
            if failed_checks
            else "▲ a check failed (none did)"
        )
        + f" · progress-AUC {numbers.ratio(m.progress_auc)} over {m.step_budget:,} steps"
        + (
            f" · verified pass at step {m.verified_at_step:,}"
            if m.verified_at_step is not None
            else " · no verified pass"
        )
    )
    unit = (
        "share of the model's context window" if drawn.calls.unit == "pressure" else "tokens (window unknown)"
    )
    peak = (
        f" · peak {numbers.percent(m.peak_context_pressure)} at step {m.peak_context_step:,}"
        if m.peak_context_pressure is not None and m.peak_context_step is not None
        else f" · peak {m.peak_context_tokens:,} tokens"
    )
    mark = (
        '<span class="sw line l-hwm"></span>compaction mark'
        + ("" if drawn.mark.said else " (the lowest context compacted at)")
        if drawn.mark
        else ""
    )
    context_legend = f'<span class="sw line l-context"></span>each call\'s context, as a {unit}{mark}{peak}'
    kinds = "".join(
        f'<span class="sw {kind_class}"></span>{label}'
        for kind_class, label in (
            ("t-input", "uncached input"),
            ("t-cache_write", "cache write"),
            ("t-cache_read", "cache read"),
            ("t-output", "output"),
        )
    )
    budget_text = _budget_text(series.budget)
    spend_legend = (
        f"tokens per call by kind{kinds}"
        + ('<span class="sw line l-largest"></span>largest call' if downsampled else "")
        + f'<span class="sw line l-cost"></span>cumulative cost ({numbers.usd(m.cost_usd)})'
        + (f'<span class="sw line l-budget"></span>{escape(budget_text)}' if budget_text else "")
        + "".join(f" · {escape(note)}" for note in notes)
    )
    return (
        f'<div class="charts">{_marker_legend(series.markers)}'
        f'<h3>Verified progress</h3><p class="legend">{progress_legend}</p>'
        + progress
        + f'<h3>Context pressure</h3><p class="legend">{context_legend}</p>'
        + context
        + f'<h3>Token spend and cost</h3><p class="legend">{spend_legend}</p>'
        + spend
        + f'<p class="readout mute">Point at a chart to read a step.{shown}</p></div>'
    )


def _budget_text(budget: dict[str, Any] | None) -> str:
    if not budget:
        return ""
    return "budget: " + ", ".join(f"{key} {value}" for key, value in budget.items())


def _marker_legend(markers: Sequence[Any]) -> str:
    counts: dict[str, int] = {}
    for marker in markers:
        counts[marker.kind] = counts.get(marker.kind, 0) + 1
    if not counts:
        return (
            '<p class="legend">Markers: none (no checkpoint, compaction, watchdog, loop, restart, crash, '
            "retry, guard or divergence).</p>"
        )
    chips = "".join(
        f'<span class="mk k-{kind}" data-kind="{kind}">▼ {escape(charts.KIND_NAMES[kind])} {count}</span>'
        for kind, count in ((k, counts[k]) for k in charts.KIND_NAMES if k in counts)
    )
    return (
        '<p class="legend">Markers on every chart (point at one for what it was, click it for its step):'
        f"{chips}</p>"
    )


# -- the overview -------------------------------------------------------------------------------------


def overview(runs: Sequence[RunView], drawn: Sequence[Drawn]) -> str:
    rows = []
    for index, (run, chart) in enumerate(zip(runs, drawn, strict=True)):
        m = run.metrics
        last = float(chart.x.last)
        progress = [
            (0.0, 0.0),
            *((float(s), p) for s, p in zip(chart.progress.step, chart.progress.level, strict=True)),
        ]
        progress.append((last, progress[-1][1]))
        context = [
            (float(s), max(a, b))
            for s, a, b in zip(chart.calls.step_lo, chart.calls.ctx_a, chart.calls.ctx_b, strict=True)
        ]
        cost = [(float(s), c) for s, c in zip(chart.calls.step_hi, chart.calls.cost, strict=True)]
        top_context = max((v for _, v in context), default=0.0)
        incidents = len(run.series.markers)
        name, tag = header.run_label(index, run)
        cells = [
            f'<td class="name"><a href="#run-{index + 1}" title="{escape(str(run.path))}">'
            f'{escape(_short(name))} <span class="tag">{escape(tag)}</span></a></td>',
            f"<td>{header.status_badge(run.status, m.crashed)}</td>",
            "<td>"
            + charts.sparkline(
                "progress",
                progress,
                last,
                1.0,
                f"verified progress: {numbers.percent(m.progress_end, 0)} at the end",
            )
            + "</td>",
            "<td>"
            + charts.sparkline(
                "context", context, last, top_context, f"context: peak {m.peak_context_tokens:,} tokens"
            )
            + "</td>",
            "<td>"
            + charts.sparkline(
                "cost",
                cost,
                last,
                cost[-1][1] if cost else 0.0,
                f"cumulative cost: {numbers.usd(m.cost_usd)}",
            )
            + "</td>",
            f'<td class="num">{m.steps:,}</td>',
            f"<td>{'pass' if m.verified_pass else 'unverified' if m.unverified else 'no'}"
            f"{' (false claim)' if m.false_claim else ''}</td>",
            f'<td class="num">{numbers.ratio(m.progress_auc)}</td>',
            f'<td class="num">{numbers.percent(m.loop_rate, 0)}</td>',
            f'<td class="num">{numbers.usd(m.cost_usd)}</td>',
            f'<td class="num">{numbers.percent(m.peak_context_pressure)}</td>',
            f'<td class="num">{incidents:,}</td>',
            f'<td class="num">{len(run.problems)}</td>',
        ]
        rows.append(f'<tr data-run="{index}">{"".join(cells)}</tr>')
    numeric = ' class="num"'
    head = "".join(
        f"<th{numeric if num else ''}>{name}</th>"
        for name, num in (
            ("run", False),
            ("status", False),
            ("progress", False),
            ("context", False),
            ("cost", False),
            ("steps", True),
            ("verified", False),
            ("AUC", True),
            ("loops", True),
            ("cost", True),
            ("peak ctx", True),
            ("markers", True),
            ("problems", True),
        )
    )
    return (
        f'<section id="overview"><h2>Overview</h2><table class="overview"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>{_metrics_matrix(runs)}</section>"
    )


def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _metrics_matrix(runs: Sequence[RunView]) -> str:
    """Every metric of every run side by side, one column per run."""
    columns = [header.metric_rows(run.metrics) for run in runs]
    head = "".join(
        f'<th class="num">{escape(header.run_label(i, run)[1])}</th>' for i, run in enumerate(runs)
    )
    body = []
    for position, (_, name, label, _) in enumerate(columns[0]):
        values = "".join(f'<td class="num">{escape(column[position][3])}</td>' for column in columns)
        body.append(f'<tr data-metric="{escape(name)}"><th>{escape(label)}</th>{values}</tr>')
    return (
        '<details class="metrics"><summary>Every metric of every run</summary>'
        f"<table><thead><tr><th>metric</th>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></details>"
    )


# -- the transcript -----------------------------------------------------------------------------------


def _transcript(
    index: int, run: RunView, where: str, record_of: Callable[[int, StepRecord], str]
) -> list[Fragment]:
    transcript = run.transcript
    records = _within_budget(transcript.records)
    sampled = transcript.sampled
    intro = (
        f'<h3>Transcript</h3><p class="mute">{transcript.steps:,} steps. '
        f"{len(records):,} are shown whole below: the first and last steps and those with an incident, a "
        "failure or a marker"
        + (", sampled evenly over the run" if sampled else "")
        + ". Every step in one line: "
        f'</p><details class="all-steps" data-steps="{transcript.steps}">'
        f"<summary>all {transcript.steps:,} steps as text"
        "</summary><pre></pre></details>"
    )
    frags = [Fragment(f"{where}: its transcript", intro)]
    for record in records:
        frags.append(Fragment(f"{where}: step {record.step} of its transcript", record_of(index, record)))
    return frags


def _within_budget(records: list[StepRecord]) -> list[StepRecord]:
    total = sum(record.chars for record in records)
    if total <= TRANSCRIPT_BUDGET:
        return records
    out = list(records)
    for position in sorted(range(len(out)), key=lambda i: out[i].chars, reverse=True):
        total -= out[position].chars
        out[position] = out[position].light()
        total += out[position].chars
        if total <= TRANSCRIPT_BUDGET:
            break
    return out


def record_html(run_index: int, record: StepRecord) -> str:
    """A step kept whole, as the transcript shows it."""
    failed = any(item.failed for item in record.items)
    chips = "".join(
        f'<span class="mk k-{reason if reason in charts.KIND_NAMES else "other"}">'
        f"{escape(reason.replace('_', ' '))}</span>"
        for reason in record.reasons
    )
    items = "".join(
        f'<div class="item{" fail" if item.failed else ""}" data-kind="{escape(item.kind)}">'
        f"<h4>{escape(item.title)}</h4>"
        + "".join(_text(label, text) for label, text in item.texts)
        + "</div>"
        for item in record.items
    )
    return (
        f'<details class="step{" fail" if failed else ""}" id="r{run_index}-i{record.index}" '
        f'data-step="{record.step}">'
        f"<summary>{escape(record.line)}{chips}</summary>{items}</details>"
    )


def _text(label: str, text: Text) -> str:
    out = f'<div class="lbl">{escape(label)}</div><pre>{escape(text.preview)}</pre>'
    if text.more:
        out += (
            f'<details class="more"><summary>the rest: {len(text.more):,} more characters '
            f"({numbers.size(text.size)} in all)</summary><pre>{escape(text.more)}</pre></details>"
        )
    elif text.chars > len(text.preview):
        left = text.chars - len(text.preview)
        size = numbers.size(text.size)
        out += f'<div class="lbl">{left:,} more characters ({size} in all) are in the trace</div>'
    if text.more and text.cut:
        shown = len(text.preview) + len(text.more)
        out += (
            f'<div class="lbl">cut at {shown:,} of {text.chars:,} characters: the trace holds the whole</div>'
        )
    return out
