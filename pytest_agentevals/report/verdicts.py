"""The marathon section's slot: verdicts over seeds, one row per bar (the marathon's `VerdictRow`,
in its own words), in the HTML page and in the markdown summary. The session's rows come from the
`pytest_agentevals_verdicts` hook and are handed to `build_report(..., verdicts=rows)`; with none,
the section is left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from ..marathon import VerdictRow
from .markdown_text import cell


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
        verdict = row.verdict.upper() if row.verdict != "met" else "met"
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
