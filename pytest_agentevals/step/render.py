"""The step layer as a person reads it: a failing case (the expectation and the decision side by side,
by field), a recorded run's decision points, and the cases `agentevals step extract` wrote.

What a goldens file or a trace holds comes from pull requests: every text here is terminal-safe
(`trace/terminal.py`), a table's cells escaped before they are wrapped so the columns stay aligned.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Sequence
from dataclasses import replace

from ..trace.scrub import Scrubber
from ..trace.terminal import safe
from .expectation import Outcome
from .extract import DecisionPoint
from .matchers import Row
from .write import Written

FIELD_WIDTH = 22
VALUE_WIDTH = 44
MAX_CELL_LINES = 6


class StepMismatch(AssertionError):
    """A decision that does not match its golden; the message is the side-by-side table."""


def _cell(text: str, width: int) -> list[str]:
    lines = textwrap.wrap(text, width, break_long_words=True, replace_whitespace=True, drop_whitespace=False)
    lines = [line.rstrip() for line in lines] or [""]
    if len(lines) > MAX_CELL_LINES:
        lines = [*lines[: MAX_CELL_LINES - 1], lines[MAX_CELL_LINES - 1][: width - 1] + "…"]
    return lines


def table(rows: Sequence[Row]) -> str:
    """Rows as aligned columns: field, expected, decision, and a mark on the rows that disagree."""
    head = f"  {'field':<{FIELD_WIDTH}} {'expected':<{VALUE_WIDTH}} {'decision':<{VALUE_WIDTH}}"
    out = [head.rstrip(), "  " + "-" * (FIELD_WIDTH + 2 * VALUE_WIDTH + 2)]
    for row in rows:
        mark = "" if row.ok else "✗" + (f" {row.note}" if row.note else "")
        field = _cell(safe(row.field), FIELD_WIDTH)
        expected = _cell(safe(row.expected), VALUE_WIDTH)
        actual = _cell(safe(row.actual), VALUE_WIDTH)
        for index in range(max(len(field), len(expected), len(actual))):
            line = (
                f"{'>' if index == 0 and not row.ok else ' '} "
                f"{field[index] if index < len(field) else '':<{FIELD_WIDTH}} "
                f"{expected[index] if index < len(expected) else '':<{VALUE_WIDTH}} "
                f"{actual[index] if index < len(actual) else '':<{VALUE_WIDTH}}"
            )
            if index == 0 and mark:
                line += f"  {mark}"
            out.append(line.rstrip())
    return "\n".join(out)


def explain(label: str, kind: str, outcome: Outcome) -> str:
    """The whole message of a failing case. A secret in what the model said (a key it echoed into
    a tool's arguments) is redacted cell by cell, before wrapping could split it past recognition:
    the message reaches the terminal and the JUnit XML a CI run keeps."""
    scrub = Scrubber().scrub_text
    rows = [
        replace(row, field=scrub(row.field), expected=scrub(row.expected), actual=scrub(row.actual))
        for row in outcome.rows
    ]
    failing = sum(not row.ok for row in rows)
    parts = [
        f"{label}: the decision does not match the golden ({kind}; {failing} of {len(rows)} fields differ)",
        table(rows),
    ]
    parts.extend(f"  note: {scrub(note)}" for note in outcome.notes)
    verdict = outcome.verdict
    if verdict is not None and verdict.passed is False:
        checks_ok = all(row.ok for row in outcome.rows if row.note != "judge")
        alone = "; every other check passed, so the judge alone failed this case" if checks_ok else ""
        parts.append(f"  judge: {verdict.model} failed it{alone}")
    if outcome.detail:
        parts.append(textwrap.indent(scrub(outcome.detail), "  "))
    return safe("\n".join(parts))


# -- extraction ---------------------------------------------------------------------------------------


def written(done: Written, points: Sequence[DecisionPoint]) -> str:
    """What `extract` wrote: each case with the decision it froze, the seeded exchanges, what next."""
    lines = [f"wrote {len(done.case_ids)} step case(s) to {done.path}:"]
    for case_id, point in zip(done.case_ids, points, strict=True):
        lines.append(f"  {case_id}  ({point.kind}, from line {point.line}: {point.what})")
    if done.exchanges:
        lines.append(f"seeded {done.store} with their recorded model exchanges ({done.exchanges} in all)")
    lines.append(f"edit the expectations, then run: pytest {done.path} -m step")
    return safe("\n".join(lines))


def points_table(trace: str, points: Sequence[DecisionPoint]) -> str:
    """A recorded run's decision points, one a line: step, kind, line in the trace, the decision."""
    if not points:
        return safe(f"{trace}: no decision points")
    lines = [f"{'step':>5}  {'kind':<12} {'line':>5}  what"]
    for point in points:
        lines.append(
            f"{point.step:>5}  {point.kind:<12} {point.line:>5}  {point.what}: {_decision_line(point)}"
        )
    return safe("\n".join(lines))


def _decision_line(point: DecisionPoint) -> str:
    decision = point.decision
    if decision.tool_calls:
        return ", ".join(f"{call.name}({json.dumps(dict(call.input))[:60]})" for call in decision.tool_calls)
    if decision.escalation is not None:
        return f"{decision.escalation.action} ({decision.escalation.kind})"
    if point.kind == "escalation":
        return "carried on (no escalation)"
    return repr(decision.summary_text[:60])
