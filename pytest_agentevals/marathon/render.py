"""Verdicts as people and programs read them: a terminal table per test, Markdown, JSON.

A failed bar names the metric, its interval and the seeds that missed it, each with the one command
that turns its trace into a replay test (`agentevals promote`).
"""

from __future__ import annotations

import json
import math
import os
import shlex
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..settings.seeds import describe
from ..trace.naming import safe_name
from ..trace.terminal import safe
from .results import SeedResult
from .rows import VerdictRow
from .verdict import (
    ABOVE,
    BELOW,
    INCONCLUSIVE,
    MET,
    METRICS,
    Estimate,
    Judgement,
    Verdict,
    format_value,
    stop_note,
)

TracePath = Callable[[SeedResult], Path | None]  # where a result's trace is on this machine


def interval_text(estimate: Estimate, unit: str) -> str:
    if estimate.low is None or estimate.high is None:
        return "n/a"
    return f"{format_value(estimate.low, unit)} to {format_value(estimate.high, unit)}"


def promote_name(result: SeedResult) -> str:
    """The cassette name `agentevals promote` gets for a seed: the test's name and the seed."""
    name = result.test.rsplit("::", 1)[-1]
    return f"{safe_name(name)}-seed-{result.seed}"


def promote_command(result: SeedResult, trace_of: TracePath) -> str | None:
    """The command that promotes a seed's trace to a replay test; None when its trace is not here."""
    path = trace_of(result)
    if path is None:
        return None
    return shlex.join(["agentevals", "promote", _shown(path), "--name", promote_name(result)])


def _shown(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:  # another drive
        return str(path)


def headline(verdict: Verdict) -> str:
    commits = ", ".join(c[:12] if c else "an unknown commit" for c in verdict.commits) or "no commit"
    seeds = describe(verdict.seeds)
    outcome = {
        BELOW: "BELOW THE BAR",
        INCONCLUSIVE: "INCONCLUSIVE",
        MET: "met",
        "none": "no bar set",
    }[verdict.outcome]
    partial = " (partial: a seed selection)" if verdict.partial else ""
    return f"{verdict.test}: n={verdict.n} seeds ({seeds}) at {commits}: {outcome}{partial}"


def _verdict_word(judgement: Judgement | None) -> str:
    if judgement is None:
        return ""
    return judgement.verdict.upper() if judgement.verdict in (BELOW, ABOVE, INCONCLUSIVE) else "met"


def table_rows(verdict: Verdict) -> list[tuple[str, str, str, str, str]]:
    """(metric, value, 95% interval, bar, verdict) for each metric."""
    bars = {j.threshold.metric: j for j in verdict.judgements}
    rows = []
    for metric, (label, unit) in METRICS.items():
        estimate = verdict.estimates[metric]
        judgement = bars.get(metric)
        rows.append(
            (
                label,
                format_value(estimate.value, unit),
                interval_text(estimate, unit) + (" (too few seeds)" if estimate.method == "range" else ""),
                judgement.threshold.describe(judgement.bar) if judgement else "",
                _verdict_word(judgement),
            )
        )
    return rows


def text_lines(verdict: Verdict, trace_of: TracePath) -> list[tuple[str, str | None]]:
    """(line, colour) of one test's verdict, for the terminal."""
    colour = {BELOW: "red", INCONCLUSIVE: "yellow", MET: "green"}.get(verdict.outcome)
    lines: list[tuple[str, str | None]] = [(headline(verdict), colour)]
    header = ("metric", "value", "95% interval", "bar", "verdict")
    rows = table_rows(verdict)
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(5)]
    for index, row in enumerate([header, *rows]):
        text = "  " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        word = row[4]
        lines.append((text.rstrip(), None if index == 0 else _colour(word)))
    lines.append(("  pass@k  " + _ks(verdict.pass_at_k), None))
    lines.append(("  pass^k  " + _ks(verdict.pass_hat_k), None))
    statuses = ", ".join(f"{status} {count}" for status, count in verdict.statuses.items())
    restarts = verdict.restarts
    restart_text = (
        f"{sum(restarts.values())} ("
        + ", ".join(f"seed {seed}: {count}" for seed, count in sorted(restarts.items()))
        + ")"
        if restarts
        else "0"
    )
    lines.append((f"  statuses: {statuses or 'none'}; restarts: {restart_text}", None))
    if verdict.missing:
        lines.append(
            (
                f"  no result for seed(s) {describe(verdict.missing)} (a killed job or worker?): "
                "run the same "
                "command again to run them",
                "yellow",
            )
        )
    for note in verdict.notes:
        lines.append((f"  {note}", "yellow"))
    if verdict.unknown_thresholds:
        lines.append(
            (f"  thresholds this version does not know: {', '.join(verdict.unknown_thresholds)}", "yellow")
        )
    for judgement in verdict.judgements:
        if judgement.verdict == INCONCLUSIVE:
            lines.append((f"  {inconclusive_text(verdict, judgement)}", "yellow"))
    if verdict.partial and any(j.failed for j in verdict.judgements):
        lines.append(
            (
                "  a bar failed over this selection of seeds; the marathon's verdict is over every seed: "
                "agentevals marathon merge, then agentevals marathon report",
                "yellow",
            )
        )
    for judgement in verdict.judgements:
        if judgement.failed:
            lines.extend((line, "red") for line in failure_lines(verdict, judgement, trace_of))
    # Test ids and commits come from results files in pull requests: escaped for the terminal.
    return [(safe(line), colour) for line, colour in lines]


def inconclusive_text(verdict: Verdict, judgement: Judgement) -> str:
    unit = METRICS[judgement.threshold.metric][1]
    if judgement.why:  # the interval met the bar, but the seeds cannot be believed (most stopped)
        return (
            f"INCONCLUSIVE: {judgement.threshold.label} {interval_text(judgement.estimate, unit)} meets "
            f"the bar {judgement.threshold.describe(judgement.bar)}, but {judgement.why}"
        )
    text = (
        f"INCONCLUSIVE: {judgement.threshold.label} {interval_text(judgement.estimate, unit)} holds the bar "
        f"{judgement.threshold.describe(judgement.bar)}; {verdict.n} seed(s) cannot tell"
    )
    if verdict.partial:
        text += " (this job's share of the seeds: the marathon's verdict is over all of them, after merge)"
    elif verdict.grow:
        text += (
            f"; run the same command again to add seed(s) {describe(verdict.grow)} "
            f"(max_seeds={verdict.plan.max_seeds})"
        )
    elif verdict.plan.max_seeds is None:
        text += " (more seeds could: raise seeds=, or set max_seeds= to add them while inconclusive)"
    else:
        text += f" (max_seeds={verdict.plan.max_seeds} reached, or its budget spent)"
    return text


def failure_lines(verdict: Verdict, judgement: Judgement, trace_of: TracePath) -> list[str]:
    """The failed bar: metric, interval and the seeds that missed it, each with its promote command."""
    unit = METRICS[judgement.threshold.metric][1]
    word = "BELOW" if judgement.verdict == BELOW else "ABOVE"
    lines = [
        f"  {word} THE BAR: {judgement.threshold.label} = {format_value(judgement.estimate.value, unit)}, "
        f"95% interval {interval_text(judgement.estimate, unit)}, entirely "
        f"{'below' if judgement.verdict == BELOW else 'above'} {judgement.threshold.keyword}="
        f"{judgement.bar:g} over n={verdict.n} seeds"
    ]
    by_seed = verdict.by_seed()
    for seed in judgement.failed_seeds:
        result = by_seed[seed]
        command = promote_command(result, trace_of)
        how = command or "its trace is not on this machine"
        lines.append(f"    seed {seed} ({result.status}): {how}")
    return lines


def session_outcome(verdict: Verdict, trace_of: TracePath) -> tuple[str, list[str]] | None:
    """How a verdict counts in the session's outcome: ("failed", its failed bars with metric, interval
    and seeds) when it fails the session, ("inconclusive", why) when it is undecided — over the seeds
    of a partial selection too —, None when met or with no bar."""
    if verdict.fails:
        failed = [j for j in verdict.judgements if j.failed]
        lines = [failure_lines(verdict, judgement, trace_of)[0].strip() for judgement in failed]
        seeds = describe(sorted({seed for judgement in failed for seed in judgement.failed_seeds}))
        lines.append(
            f"seed(s) that missed it: {seeds or 'none alone'}; the agentevals marathon section below "
            "has the table and the command that promotes each seed's trace to a replay test"
        )
        return "failed", [safe(line) for line in lines]
    if verdict.outcome in (BELOW, INCONCLUSIVE):
        undecided = [j for j in verdict.judgements if j.verdict == INCONCLUSIVE or j.failed]
        return "inconclusive", [safe(inconclusive_text(verdict, j)) for j in undecided]
    return None


def _ks(values: Sequence[float]) -> str:
    return "  ".join(f"k={k} {value:.2f}" for k, value in enumerate(values, start=1)) or "n/a"


def _colour(word: str) -> str | None:
    return {"BELOW": "red", "ABOVE": "red", "INCONCLUSIVE": "yellow", "met": "green"}.get(word)


def text(verdicts: Sequence[Verdict], trace_of: TracePath) -> str:
    if not verdicts:
        return "no marathon results"  # lines below are escaped by text_lines
    blocks = ["\n".join(line for line, _ in text_lines(v, trace_of)) for v in verdicts]
    return "\n\n".join(blocks)


def markdown(verdicts: Sequence[Verdict], trace_of: TracePath) -> str:
    if not verdicts:
        return "### Marathon verdicts\n\nNo marathon results."
    out = ["### Marathon verdicts", ""]
    for verdict in verdicts:
        out.append(f"#### `{_cell(verdict.test)}`")
        out.append("")
        out.append(_cell(headline(verdict).split(": ", 1)[1]))
        out.append("")
        out.append("| metric | seeds | value | 95% interval | bar | verdict |")
        out.append("|---|---:|---:|---:|---|---|")
        for (label, value, interval, bar, word), metric in zip(table_rows(verdict), METRICS, strict=True):
            n = verdict.estimates[metric].n
            out.append(
                f"| {label} | {n} | {_cell(value)} | {_cell(interval)} | {_cell(bar)} | "
                f"{'**' + word + '**' if word and word != 'met' else word} |"
            )
        statuses = ", ".join(f"{status} {count}" for status, count in verdict.statuses.items())
        out.append("")
        out.append(
            f"pass@k: {_ks(verdict.pass_at_k)}; pass^k: {_ks(verdict.pass_hat_k)}; statuses: {statuses}"
        )
        for judgement in verdict.judgements:
            if judgement.failed:
                out.append("")
                out.extend(f"- {_cell(line.strip())}" for line in failure_lines(verdict, judgement, trace_of))
            elif judgement.verdict == INCONCLUSIVE:
                out.append("")
                out.append(f"- {_cell(inconclusive_text(verdict, judgement))}")
        if verdict.missing:
            out.append("")
            out.append(f"- no result for seed(s) {describe(verdict.missing)}")
        if verdict.notes:
            out.append("")
            out.extend(f"- {_cell(note)}" for note in verdict.notes)
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def as_json(verdicts: Sequence[Verdict], extra: dict[str, Any] | None = None) -> str:
    return json.dumps(
        {**(extra or {}), "verdicts": [v.to_json() for v in verdicts]}, indent=2, allow_nan=False
    )


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def verdict_rows(verdicts: Sequence[Verdict], trace_of: TracePath | None = None) -> list[VerdictRow]:
    """The run report's marathon slot: one row per bar a test set, named by the test, each with how
    the test's verdict counts in the session (`session_outcome`)."""
    rows: list[VerdictRow] = []
    for verdict in verdicts:
        counted = session_outcome(verdict, trace_of or (lambda result: None))
        counts = counted[0] if counted is not None else None
        name = verdict.test.rsplit("::", 1)[-1]
        if len(verdict.commits) == 1 and len(verdicts) > 1 and verdict.commits[0]:
            name += f" @ {verdict.commits[0][:8]}"
        notes = []
        if verdict.partial:
            notes.append(f"partial: seeds {describe(verdict.seeds)} of this job")
        if verdict.missing:
            notes.append(f"no result for seed(s) {describe(verdict.missing)}")
        if verdict.stopped:
            notes.append(stop_note(verdict.stopped, verdict.n, verdict.budget_stops))
        for judgement in verdict.judgements:
            estimate = judgement.estimate
            rows.append(
                VerdictRow(
                    metric=f"{name}: {judgement.threshold.label}",
                    n=estimate.n,
                    value=_finite(estimate.value),
                    low=_finite(estimate.low),
                    high=_finite(estimate.high),
                    threshold=judgement.threshold.describe(judgement.bar),
                    verdict=judgement.verdict,
                    note="; ".join(notes),
                    test=verdict.test,
                    counts=counts,
                )
            )
    return rows


def _finite(value: float | None) -> float | None:
    return None if value is None or math.isinf(value) else value
