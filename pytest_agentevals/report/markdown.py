"""The report as a short Markdown summary, for `$GITHUB_STEP_SUMMARY`: the headline numbers of every
run and the marathon verdicts, with the problems of the traces it was built from."""

from __future__ import annotations

from collections.abc import Sequence

from ..marathon import VerdictRow
from . import numbers
from .markdown_text import cell
from .run import RunView
from .verdicts import verdicts_markdown


def summary_markdown(runs: Sequence[RunView], *, title: str, verdicts: Sequence[VerdictRow] = ()) -> str:
    passes = sum(1 for run in runs if run.metrics.verified_pass)
    cost = sum(run.metrics.cost_usd for run in runs)
    steps = sum(run.metrics.steps for run in runs)
    lines = [
        f"## {cell(title, 200)}",
        "",
        f"**{len(runs)} run(s)** · **{passes} verified pass(es)** · {steps:,} steps · {numbers.usd(cost)}",
        "",
    ]
    verdict_table = verdicts_markdown(verdicts)
    if verdict_table:
        lines += [verdict_table, ""]
    if runs:
        lines += [
            "| run | status | verified | steps | progress-AUC | loop rate | cost | peak context | markers |",
            "|---|---|---|---:|---:|---:|---:|---:|---:|",
        ]
        for index, run in enumerate(runs):
            m = run.metrics
            verified = "pass" if m.verified_pass else "unverified" if m.unverified else "no"
            if m.false_claim:
                verified += " (**false claim**)"
            status = run.status + (" (crashed)" if m.crashed else "")
            lines.append(
                f"| {index + 1}. {cell(m.agent or 'run')} ({cell(run.path.name, 80)}) | {cell(status)} | "
                f"{verified} | "
                f"{m.steps:,} | {numbers.ratio(m.progress_auc)} | {numbers.percent(m.loop_rate, 0)} | "
                f"{numbers.usd(m.cost_usd)} | {numbers.percent(m.peak_context_pressure)} | "
                f"{len(run.series.markers):,} |"
            )
    else:
        lines.append("No run was recorded.")
    problems = [(i, run, p) for i, run in enumerate(runs) for p in run.problems]
    if problems:
        lines += ["", "**Read with problems:**", ""]
        lines += [f"- run {i + 1} ({cell(run.path.name, 80)}): {cell(p, 300)}" for i, run, p in problems]
    return "\n".join(lines) + "\n"
