"""Triage results as a person reads them in a terminal (the JSON forms are each result's `to_json`)."""

from __future__ import annotations

import json

from ..trace.terminal import safe
from .minimize import Shrunk, Written
from .redrive import ForkResult
from .spectrum import Ranking

MAX_DECISION = 90


def ranking_text(ranking: Ranking, top: int = 3) -> str:
    lines = [
        f"triage rank: {len(ranking.failing)} failing, {len(ranking.passing)} passing run(s) "
        f"(failing: {', '.join(run.label for run in ranking.failing)}; "
        f"passing: {', '.join(run.label for run in ranking.passing)})"
    ]
    for ranked in ranking.runs:
        run = ranked.run
        parts = [f"{run.status or 'incomplete'}", f"{len(run.steps)} steps"]
        if ranked.closest is not None:
            where = f"first parts from it at step {ranked.divergence}" if ranked.divergence else "never parts"
            parts.append(f"closest passing run {ranked.closest.label}, {where}")
        lines.append("")
        lines.append(f"{run.label} ({'; '.join(parts)}) — {run.trace}")
        if not ranked.candidates:
            lines.append("  no step shows a feature that separates the failing runs from the passing ones")
        for place, candidate in enumerate(ranked.top(top), 1):
            decision = candidate.step.decision
            if len(decision) > MAX_DECISION:
                decision = decision[: MAX_DECISION - 1] + "…"
            mark = "  (first divergence)" if candidate.divergence else ""
            lines.append(
                f"  #{place} step {candidate.step.number} (line {candidate.step.line})  "
                f"suspicion {candidate.score:.2f}{mark}  {decision}"
            )
            width = max(len(e.feature) for e in candidate.evidence[:3])
            failing, passing = len(ranking.failing), len(ranking.passing)
            for e in candidate.evidence[:3]:
                lines.append(
                    f"       {e.feature:<{width}}  in {e.failing}/{failing} failing, "
                    f"{e.passing}/{passing} passing  ({e.score:.2f})"
                )
    return safe("\n".join(lines))


def ranking_shown(ranking: Ranking, top: int, form: str) -> str:
    """`agentevals triage rank`'s output: text, or JSON (`--json`)."""
    return json.dumps(ranking.to_json(top), indent=2) if form == "json" else ranking_text(ranking, top)


def shrunk_text(shrunk: Shrunk, written: Written | None = None) -> str:
    run = shrunk.run
    share = shrunk.steps / len(run.steps)
    lines = [
        f"triage shrink: {run.label} step {shrunk.step.number}: {len(run.steps)} steps -> {shrunk.steps} "
        f"({share:.1%}), the agent asked {shrunk.tests} times",
        f"  in this context the agent still decides {shrunk.key}",
        f"  kept: the steps {', '.join(str(s) for s in shrunk.kept_steps) or '(none)'} before it"
        + (f"; {shrunk.elided_answers} tool answer(s) elided" if shrunk.elided_answers else ""),
    ]
    if written is not None:
        lines += [
            f"wrote {written.test}",
            f"wrote {written.case}",
            f"wrote {written.original} (the original run)",
        ]
    return safe("\n".join(lines))


def fork_text(result: ForkResult) -> str:
    seeds = [r.seed for r in result.redrives]
    span = f"{seeds[0]}-{seeds[-1]}" if len(seeds) > 1 else str(seeds[0])
    cost = result.cost
    guards = ", ".join(f"{k}={v:g}" for k, v in result.budget.as_dict().items()) if result.budget else "none"
    lines = [
        f"triage fork: {result.run.label} at step {result.step.number}, {len(result.redrives)} re-drive(s) "
        f"(seeds {span}); the decision put there: {result.source}",
        f"  {result.line()}",
        f"  cost: {cost['model_calls']} model calls ({cost['live_calls']} live after step "
        f"{result.step.number}), {cost['tokens']:,} tokens, ${cost['cost_usd']:.4f}; guards: {guards}; "
        f"at most {result.cap} live calls a re-drive",
    ]
    for redrive in result.redrives:
        how = redrive.status or "incomplete"
        extra = f"; left the recording: {redrive.diverged}" if redrive.diverged else ""
        extra += f"; {redrive.error}" if redrive.error else ""
        lines.append(
            f"  seed {redrive.seed}: {'recovered' if redrive.passed else 'failed'} ({how}), "
            f"{redrive.model_calls} calls ({redrive.live_calls} live){extra}"
        )
    return safe("\n".join(lines))


def fork_shown(result: ForkResult, form: str) -> str:
    return json.dumps(result.to_json(), indent=2) if form == "json" else fork_text(result)
