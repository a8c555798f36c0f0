"""A flakiness report as terminal lines, as JSON, and as Markdown for a CI job summary; and what
`agentevals flaky ingest | report | check` print around it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..settings.layers import LAYER_NAMES
from ..trace.terminal import safe
from .analysis import FlakinessReport, LayerReport
from .budgets import BREACH, FLAKY_EXIT_CODE, NO_BUDGET, NOT_ENOUGH_DATA, OK, WARN
from .ci_env import Commit
from .ingest import IngestSummary

Line = tuple[str, str | None]  # text, and a colour for a terminal: "red", "yellow", "green" or None

_COLOURS = {BREACH: "red", WARN: "yellow", OK: "green", NOT_ENOUGH_DATA: None, NO_BUDGET: None}
_ICONS = {BREACH: "❌", WARN: "⚠️", OK: "✅", NOT_ENOUGH_DATA: "…", NO_BUDGET: "·"}

NO_LAYER = "(no layer)"
FALSE_RED_NOTE = (
    "false-red: a layer's recent runs that went red only because of flaky tests (each test failing "
    "there was FLAKY on that commit)"
)
NO_LAYER_NOTE = (
    f"{NO_LAYER}: tests without a layer marker, shown but held to no budget; give a test its layer with "
    "@pytest.mark.step (or replay, resume, marathon), and write JUnit XML from a run with the plugin "
    "installed so the layer travels with it"
)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def _ci(report: LayerReport) -> str:
    m = report.metrics
    if not m.verdicts:
        return "-"
    return f"{m.interval.low * 100:.1f}-{m.interval.high * 100:.1f}%"


def _false_red(report: LayerReport) -> str:
    fr = report.metrics.false_red
    return f"{fr.false_red}/{fr.runs}" if fr.runs else "-"


def _name(report: LayerReport) -> str:
    return report.metrics.layer or NO_LAYER


def _ordered(report: FlakinessReport) -> list[LayerReport]:
    """The top of the pyramid first, as the pyramid is drawn."""
    return [report.layer(name) for name in reversed(LAYER_NAMES)]


@dataclass(frozen=True)
class _View:
    """What a report has to say: the rows worth a table, and the layers still gathering verdicts."""

    rows: list[LayerReport]  # judged layers (ok, warn, breach), then the tests outside the pyramid
    waiting: list[LayerReport]  # layers with verdicts, but fewer than they need to be judged
    min_samples: int

    @property
    def outside(self) -> bool:
        return any(r.metrics.layer is None for r in self.rows)


def _view(report: FlakinessReport) -> _View:
    rows = [r for r in _ordered(report) if r.decision.status != NOT_ENOUGH_DATA]
    waiting = [r for r in _ordered(report) if r.decision.status == NOT_ENOUGH_DATA and r.metrics.verdicts]
    layered = sum(r.metrics.verdicts for r in report.layers)
    outside = report.outside.metrics
    # Tests outside the pyramid get a row when they have something to say: a flaky verdict, or when
    # they are all there is (a suite run without the plugin, ingested from JUnit XML).
    if outside.verdicts and (outside.flaky or not layered):
        rows.append(report.outside)
    return _View(rows, waiting, report.outside.decision.min_samples)


def _waiting_line(view: _View) -> str | None:
    if not view.waiting:
        return None
    counts = [
        f"{r.metrics.layer} {_verdicts(r.metrics.verdicts)}"
        + (f" ({r.metrics.flaky} FLAKY)" if r.metrics.flaky else "")
        for r in view.waiting
    ]
    return (
        f"not enough data yet: {', '.join(counts)}; a layer is judged once it has {view.min_samples} "
        "(min_samples)"
    )


def _offenders(reports: list[LayerReport]) -> list[Line]:
    return [
        (f"    flaky {o.flaky} of {o.verdicts}: {o.test_id}{_variant(o.variant)}", None)
        for r in reports
        for o in r.metrics.offenders
    ]


def _verdicts(count: int) -> str:
    return f"{count} verdict" + ("" if count == 1 else "s")


def text_lines(report: FlakinessReport) -> list[Line]:
    """The per-layer table (the layers it can say something about) and what stands behind it."""
    view = _view(report)
    lines: list[Line] = []
    if view.rows:
        lines.append(
            (
                f"{'layer':<11}{'verdicts':>8}{'flaky':>7}{'rate':>8}{'95% CI':>14}{'budget':>8}"
                f"{'false-red':>11}  status",
                None,
            )
        )
        for r in view.rows:
            m, d = r.metrics, r.decision
            row = (
                f"{_name(r):<11}{m.verdicts:>8}{m.flaky:>7}{_pct(m.rate):>8}{_ci(r):>14}{_pct(d.budget):>8}"
                f"{_false_red(r):>11}  {d.status}"
            )
            lines.append((row, _COLOURS[d.status]))
        fr = report.false_red
        lines.append((f"{FALSE_RED_NOTE}; over every layer: {fr.false_red} of {fr.runs} runs", None))
        if view.outside:
            lines.append((NO_LAYER_NOTE, None))
        for r in view.rows:
            lines.append(
                (f"  {_name(r)}: {r.decision.status}: {r.decision.reason}", _COLOURS[r.decision.status])
            )
            lines += _offenders([r])
    waiting = _waiting_line(view)
    if waiting:
        lines.append((waiting, None))
        lines += _offenders(view.waiting)
    if not view.rows and not view.waiting:
        lines.append(("no verdicts yet: a verdict is a test's outcome on a known commit", None))
    stops = stops_line(report)
    if stops:
        lines.append((stops, "yellow"))
    for entry in report.quarantined:
        lines.append((f"quarantined: {entry.describe()}", None))
    for entry in report.expired:
        lines.append((f"quarantine EXPIRED: {entry.describe()}; renew or remove the entry", "red"))
    for source in report.excluded:
        lines.append((f"not judged: run {source.run_id}: {source.reason}", None))
    if report.unjudged:
        lines.append((f"not judged: {report.unjudged} attempts without a commit sha", None))
    lines.append((f"history: {report.location} (window: {report.window} verdicts per layer)", None))
    return lines


def _variant(variant: str) -> str:
    return f" {variant}" if variant else ""


def stops_line(report: FlakinessReport) -> str | None:
    """What budget stops there were, per layer, and what they counted as; None when there were none."""
    stopped = [r for r in (*_ordered(report), report.outside) if r.metrics.stopped]
    if not stopped:
        return None
    parts = [
        f"{_name(r)}: {r.metrics.stopped} of {r.metrics.attempts} attempt"
        + ("" if r.metrics.attempts == 1 else "s")
        + " stopped by budget"
        for r in stopped
    ]
    if report.budget_stops == "fail":
        counted = 'counted as failures (budget_stops = "fail")'
    else:
        counted = 'left out of the verdicts and flaky rates (budget_stops = "fail" counts them as failures)'
    return f"{'; '.join(parts)}: {counted}"


def to_json(report: FlakinessReport) -> dict[str, Any]:
    """The report as plain JSON-able data (`agentevals flaky report --format json`)."""

    def layer(r: LayerReport) -> dict[str, Any]:
        m, d = r.metrics, r.decision
        return {
            "layer": m.layer,
            "status": d.status,
            "reason": d.reason,
            "verdicts": m.verdicts,
            "flaky": m.flaky,
            "rate": m.rate,
            "ci95": [m.interval.low, m.interval.high] if m.verdicts else None,
            "demonstrated_upper95": m.demonstrated,
            "budget": d.budget,
            "min_samples": d.min_samples,
            "attempts": m.attempts,
            "stopped_by_budget": m.stopped,
            "false_red": {
                "runs": m.false_red.runs,
                "red": m.false_red.red,
                "false_red": m.false_red.false_red,
                "rate": m.false_red.rate,
            },
            "worst": [
                {"test": o.test_id, "variant": o.variant, "flaky": o.flaky, "verdicts": o.verdicts}
                for o in m.offenders
            ],
        }

    def entry(e: Any) -> dict[str, str]:
        return {"test": e.test, "owner": e.owner, "reason": e.reason, "expires": e.expires.isoformat()}

    return {
        "history": report.location,
        "window": report.window,
        "breached": report.breached,
        "breaches": report.breaches,
        "layers": [layer(r) for r in _ordered(report)],
        "outside_pyramid": {**layer(report.outside), "tests": report.outside.metrics.tests},
        "false_red": {
            "runs": report.false_red.runs,
            "red": report.false_red.red,
            "false_red": report.false_red.false_red,
            "rate": report.false_red.rate,
        },
        "budget_stops": {"mode": report.budget_stops, "attempts": report.attempts, "stopped": report.stopped},
        "quarantined": [entry(e) for e in report.quarantined],
        "expired": [entry(e) for e in report.expired],
        "not_judged": {
            "outage_runs": [{"run_id": s.run_id, "sha": s.sha, "reason": s.reason} for s in report.excluded],
            "attempts_without_sha": report.unjudged,
        },
    }


def _md(text: str) -> str:
    return text.replace("|", "\\|")


def markdown(report: FlakinessReport) -> str:
    """The report as GitHub-flavoured Markdown (for `$GITHUB_STEP_SUMMARY` and the like)."""
    view = _view(report)
    out = ["## Flakiness by layer", ""]
    if view.rows:
        out.append("| layer | status | verdicts | flaky | rate | 95% CI | budget | false-red runs |")
        out.append("|---|---|---:|---:|---:|---:|---:|---:|")
        for r in view.rows:
            m, d = r.metrics, r.decision
            out.append(
                f"| {_name(r)} | {_ICONS[d.status]} {d.status} | {m.verdicts} | {m.flaky} | {_pct(m.rate)} "
                f"| {_ci(r)} | {_pct(d.budget)} | {_false_red(r)} |"
            )
        out.append("")
        out.append(f"_{_md(FALSE_RED_NOTE)}._")
        if view.outside:
            out.append(f"_{_md(NO_LAYER_NOTE)}._")
        out.append("")
    waiting = _waiting_line(view)
    if waiting:
        out += [waiting[0].upper() + waiting[1:] + ".", ""]
    if not view.rows and not view.waiting:
        out += ["No verdicts yet.", ""]
    stops = stops_line(report)
    if stops:
        out += [_md(stops) + ".", ""]
    if report.breaches:
        out.append("**Breaches**")
        out.append("")
        out += [f"- {_md(line)}" for line in report.breaches]
        out.append("")
    worst = [(_name(r), o) for r in view.rows + view.waiting for o in r.metrics.offenders]
    if worst:
        out.append("**Worst offenders**")
        out.append("")
        out.append("| layer | test | flaky verdicts |")
        out.append("|---|---|---:|")
        for layer, o in worst:
            out.append(
                f"| {layer} | `{_md(o.test_id)}{_md(_variant(o.variant))}` | {o.flaky} of {o.verdicts} |"
            )
        out.append("")
    if report.quarantined:
        out.append("**Quarantined**")
        out.append("")
        out += [
            f"- `{_md(e.test)}`: {_md(e.owner)}, until {e.expires.isoformat()}: {_md(e.reason)}"
            for e in report.quarantined
        ]
        out.append("")
    notes = [f"{_md(s.run_id)}: {_md(s.reason)}" for s in report.excluded]
    if report.unjudged:
        notes.append(f"{report.unjudged} attempts without a commit sha")
    if notes:
        out.append("<details><summary>Not judged</summary>")
        out.append("")
        out += [f"- {note}" for note in notes]
        out.append("")
        out.append("</details>")
        out.append("")
    out.append(f"_Window: {report.window} most recent verdicts per layer._")
    return "\n".join(out) + "\n"


# -- what `agentevals flaky` prints (each without its last newline) -----------------------------------------


def rendered(report: FlakinessReport, format: str, check: dict[str, Any] | None = None) -> str:
    """The report in `format` (text, json or markdown); a check's verdict goes inside the JSON."""
    if format == "json":
        return json.dumps({**to_json(report), **({"check": check} if check else {})}, indent=2)
    if format == "markdown":
        return markdown(report).removesuffix("\n")
    return safe("\n".join(text for text, _colour in text_lines(report)))  # ids from JUnit files


def checked(report: FlakinessReport, format: str, layers: Sequence[str], breaches: Sequence[str]) -> str:
    """The report, then each breach of the `layers` judged and the verdict: a CI step's output."""
    code = FLAKY_EXIT_CODE if breaches else 0
    out = rendered(report, format, {"layers": list(layers), "breaches": list(breaches), "exit_code": code})
    if format == "json":
        return out
    bullet = "- " if format == "markdown" else ""
    lines = [out, ""] if format == "markdown" else [out]
    lines += [f"{bullet}BREACH {line}" for line in breaches]
    if breaches:
        lines.append(f"{bullet}flakiness budget breached: exit code {FLAKY_EXIT_CODE}")
    else:
        lines.append(f"{bullet}flakiness within budget")
    return "\n".join(lines)


# Where the commit sha came from, by the source of the `sha` setting (else: the CI, or git).
_SHA_FROM = {"cli": "the option", "pyproject": "[tool.agentevals] sha"}


def filing(commit: Commit, sha_source: str) -> str:
    """Which commit and run ingested files are filed under, and where the sha came from (`sha_source`:
    the `sha` setting's source)."""
    where = _SHA_FROM.get(sha_source, commit.provider)
    lines = [
        f"filing under commit {commit.sha or 'unknown'} (from {where}), run {commit.run_id or 'one per file'}"
    ]
    if commit.sha is None:
        lines.append("no commit sha: the attempts are kept but never judged; give --sha")
    return "\n".join(lines)


def ingested(summary: IngestSummary, location: str) -> str:
    """What an ingest stored into the history at `location`, and what it could not judge."""
    lines = [
        f"ingested {summary.stored} of {summary.files} files ({summary.attempts} attempts) into "
        f"{location}; {summary.already} already there, {summary.outage_runs} outage runs "
        f"skipped, {len(summary.errors)} unreadable"
    ]
    if summary.unlayered:
        lines.append(
            f"{len(summary.unlayered)} of the tests carry no layer: the report shows them as (no layer), "
            "held to no budget; give a test its layer with @pytest.mark.step (or replay, resume, "
            "marathon) and write the XML from a run with pytest-agentevals installed"
        )
    return "\n".join(lines)


# What the docs and a user may import from here; the rest is this module's own.
__all__ = [
    "checked",
    "filing",
    "ingested",
    "markdown",
    "rendered",
    "stops_line",
    "text_lines",
    "to_json",
]
