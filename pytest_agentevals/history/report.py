"""A flakiness report as terminal lines, as JSON, and as Markdown for a CI job summary."""

from __future__ import annotations

from typing import Any

from ..layers import LAYER_NAMES
from .analysis import FlakinessReport, LayerReport
from .budgets import BREACH, NOT_ENOUGH_DATA, OK, WARN

Line = tuple[str, str | None]  # text, and a colour for a terminal: "red", "yellow", "green" or None

_COLOURS = {BREACH: "red", WARN: "yellow", OK: "green", NOT_ENOUGH_DATA: None}
_ICONS = {BREACH: "❌", WARN: "⚠️", OK: "✅", NOT_ENOUGH_DATA: "…"}


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


def _ordered(report: FlakinessReport) -> list[LayerReport]:
    """The top of the pyramid first, as the pyramid is drawn."""
    return [report.layer(name) for name in reversed(LAYER_NAMES)]


def text_lines(report: FlakinessReport) -> list[Line]:
    """The per-layer table and what stands behind it, for the terminal."""
    head = (
        f"{'layer':<10}{'verdicts':>9}{'flaky':>7}{'rate':>8}{'95% CI':>14}{'budget':>8}{'false-red':>11}"
        "  status"
    )
    lines: list[Line] = [(head, None)]
    for r in _ordered(report):
        m, d = r.metrics, r.decision
        row = (
            f"{m.layer:<10}{m.verdicts:>9}{m.flaky:>7}{_pct(m.rate):>8}{_ci(r):>14}{_pct(d.budget):>8}"
            f"{_false_red(r):>11}  {d.status}"
        )
        lines.append((row, _COLOURS[d.status]))
    for r in _ordered(report):
        m, d = r.metrics, r.decision
        if d.status != NOT_ENOUGH_DATA or m.verdicts:
            lines.append((f"  {m.layer}: {d.status}: {d.reason}", _COLOURS[d.status]))
        for o in m.offenders:
            lines.append((f"    flaky {o.flaky} of {o.verdicts}: {o.test_id}{_variant(o.variant)}", None))
    fr = report.false_red
    if fr.runs:
        lines.append(
            (f"false-red runs: {fr.false_red} of {fr.runs} (went red only because of flaky tests)", None)
        )
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


def to_json(report: FlakinessReport) -> dict[str, Any]:
    """The report as plain JSON-able data (`agentevals flaky report --format json`)."""
    layers = []
    for r in _ordered(report):
        m, d = r.metrics, r.decision
        layers.append(
            {
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
        )

    def entry(e: Any) -> dict[str, str]:
        return {"test": e.test, "owner": e.owner, "reason": e.reason, "expires": e.expires.isoformat()}

    return {
        "history": report.location,
        "window": report.window,
        "breached": report.breached,
        "breaches": report.breaches,
        "layers": layers,
        "false_red": {
            "runs": report.false_red.runs,
            "red": report.false_red.red,
            "false_red": report.false_red.false_red,
            "rate": report.false_red.rate,
        },
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
    out = ["## Flakiness by layer", ""]
    out.append("| layer | status | verdicts | flaky | rate | 95% CI | budget | false-red runs |")
    out.append("|---|---|---:|---:|---:|---:|---:|---:|")
    for r in _ordered(report):
        m, d = r.metrics, r.decision
        out.append(
            f"| {m.layer} | {_ICONS[d.status]} {d.status} | {m.verdicts} | {m.flaky} | {_pct(m.rate)} "
            f"| {_ci(r)} | {_pct(d.budget)} | {_false_red(r)} |"
        )
    out.append("")
    if report.breaches:
        out.append("**Breaches**")
        out.append("")
        out += [f"- {_md(line)}" for line in report.breaches]
        out.append("")
    worst = [(r.metrics.layer, o) for r in _ordered(report) for o in r.metrics.offenders]
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
