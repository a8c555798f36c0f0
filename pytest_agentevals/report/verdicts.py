"""The marathon section's slot: verdicts over seeds, one row per metric, in the HTML page and in the
markdown summary. The marathon layer hands its verdict rows to `build_report(..., verdicts=rows)`;
with none, the section is left out. A row from JSON (a results file) is read with `from_json`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from .markdown_text import cell

VERDICTS = ("pass", "fail", "inconclusive")


@dataclass(frozen=True)
class VerdictRow:
    """One metric's verdict over a marathon's seeds: its value over `n` seeds with a 95% interval
    [`low`, `high`], the threshold it is held to, and `pass`, `fail` (the whole interval on the wrong
    side) or `inconclusive`."""

    metric: str
    n: int
    value: float | None
    low: float | None = None
    high: float | None = None
    threshold: str = ""  # as a person reads it: ">= 0.80"
    verdict: str = "inconclusive"
    note: str = ""

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> VerdictRow:
        verdict = str(data.get("verdict", "inconclusive"))
        return cls(
            metric=str(data.get("metric", "?")),
            n=int(data.get("n", 0)),
            value=_number(data.get("value")),
            low=_number(data.get("low")),
            high=_number(data.get("high")),
            threshold=str(data.get("threshold") or ""),
            verdict=verdict if verdict in VERDICTS else "inconclusive",
            note=str(data.get("note") or ""),
        )


def verdicts_html(rows: Sequence[VerdictRow]) -> str:
    """The page's marathon section; empty when there are no rows."""
    if not rows:
        return ""
    body = "".join(
        f'<tr data-metric="{escape(row.metric)}" data-verdict="{row.verdict}"><td>{escape(row.metric)}</td>'
        f'<td class="num">{row.n}</td><td class="num">{_value(row.value)}</td>'
        f'<td class="num">{_interval(row)}</td><td>{escape(row.threshold)}</td>'
        f'<td class="verdict-{row.verdict}">{escape(row.verdict.upper())}</td>'
        f"<td>{escape(row.note)}</td></tr>"
        for row in rows
    )
    return (
        '<section id="verdicts"><h2>Marathon verdicts</h2>'
        '<table><thead><tr><th>metric</th><th class="num">seeds</th><th class="num">value</th>'
        '<th class="num">95% interval</th><th>threshold</th><th>verdict</th><th></th></tr></thead>'
        f"<tbody>{body}</tbody></table></section>"
    )


def verdicts_markdown(rows: Sequence[VerdictRow]) -> str:
    if not rows:
        return ""
    lines = [
        "### Marathon verdicts",
        "",
        "| metric | seeds | value | 95% interval | threshold | verdict |",
        "|---|---:|---:|---:|---|---|",
    ]
    for row in rows:
        verdict = row.verdict.upper() if row.verdict != "pass" else "pass"
        lines.append(
            f"| {cell(row.metric)} | {row.n} | {_value(row.value)} | {_interval(row)} | "
            f"{cell(row.threshold)} | **{verdict}**{' ' + cell(row.note) if row.note else ''} |"
        )
    return "\n".join(lines)


def _value(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3g}"


def _interval(row: VerdictRow) -> str:
    if row.low is None or row.high is None:
        return "n/a"
    return f"{row.low:.3g} to {row.high:.3g}"


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
