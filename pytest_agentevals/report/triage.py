"""The triage section's slot: what `agentevals triage rank --json` and `triage fork --json` printed,
as its own section of the page (the ranked steps of each failing run with their evidence, each fork's
outcome) and of the Markdown summary. Read from files people pass around, so read as untrusted: the
bounded JSON loader, every field checked for its type, every text escaped where it is written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

from ..errors import ReportError
from ..trace.loaders import load_json
from .markdown_text import cell

MAX_TRIAGE_BYTES = 4 * 1024 * 1024
MAX_SHOWN = 5  # candidates a failing run shows
VERDICTS = ("fixed", "not", "cannot tell")


@dataclass(frozen=True)
class RankedStep:
    step: int
    score: float
    decision: str
    evidence: tuple[tuple[str, int, int], ...]  # feature, failing runs with it, passing runs with it
    divergence: bool


@dataclass(frozen=True)
class RankedRun:
    run: str
    status: str
    steps: int
    closest: str | None
    candidates: tuple[RankedStep, ...]


@dataclass(frozen=True)
class Ranked:
    failing: int
    passing: int
    runs: tuple[RankedRun, ...]


@dataclass(frozen=True)
class Forked:
    run: str
    step: int
    verdict: str
    line: str
    source: str
    model_calls: int
    live_calls: int
    cost_usd: float


Triage = Ranked | Forked


def load_triage(path: str | Path) -> Triage:
    """A triage result from a file (rank's or fork's --json); ReportError naming the file and the key."""
    source = Path(path)
    try:
        size = source.stat().st_size
        if size > MAX_TRIAGE_BYTES:
            raise ReportError(f"{source}: {size} bytes, more than a triage result holds ({MAX_TRIAGE_BYTES})")
        raw = source.read_bytes()
    except OSError as exc:
        raise ReportError(f"{source}: cannot be read ({exc.strerror})") from None
    return triage_of(
        load_json(raw, lambda line, problem: ReportError(f"{source}:{line}: {problem}")), str(source)
    )


def triage_of(data: Any, where: str) -> Triage:
    if not isinstance(data, Mapping):
        raise ReportError(f"{where}: not a triage result (agentevals triage rank --json or fork --json)")
    if "verdict" in data:
        verdict = _get(data, "verdict", str, where)
        if verdict not in VERDICTS:
            raise ReportError(f"{where}: verdict {verdict!r}: one of {', '.join(VERDICTS)}")
        cost = _get(data, "cost", Mapping, where)
        return Forked(
            run=_get(data, "run", str, where),
            step=_get(data, "step", int, where),
            verdict=verdict,
            line=_get(data, "line", str, where),
            source=_get(data, "source", str, where),
            model_calls=_get(cost, "model_calls", int, f"{where}: cost"),
            live_calls=_get(cost, "live_calls", int, f"{where}: cost"),
            cost_usd=float(_get(cost, "cost_usd", (int, float), f"{where}: cost")),
        )
    if "runs" in data and "failing" in data:
        runs = []
        for i, run in enumerate(_get(data, "runs", list, where)):
            at = f"{where}: runs[{i}]"
            if not isinstance(run, Mapping):
                raise ReportError(f"{at}: not a mapping")
            candidates = []
            for j, c in enumerate(_get(run, "candidates", list, at)):
                cat = f"{at}.candidates[{j}]"
                if not isinstance(c, Mapping):
                    raise ReportError(f"{cat}: not a mapping")
                evidence = []
                for k, e in enumerate(_get(c, "evidence", list, cat)):
                    eat = f"{cat}.evidence[{k}]"
                    if not isinstance(e, Mapping):
                        raise ReportError(f"{eat}: not a mapping")
                    evidence.append((_get(e, "feature", str, eat), _get(e, "failing", int, eat),
                                     _get(e, "passing", int, eat)))  # fmt: skip
                candidates.append(
                    RankedStep(
                        step=_get(c, "step", int, cat),
                        score=float(_get(c, "score", (int, float), cat)),
                        decision=_get(c, "decision", str, cat),
                        evidence=tuple(evidence),
                        divergence=bool(c.get("divergence")),
                    )
                )
            closest = run.get("closest_passing")
            runs.append(
                RankedRun(
                    run=_get(run, "run", str, at),
                    status=str(run.get("status") or "incomplete"),
                    steps=_get(run, "steps", int, at),
                    closest=closest if isinstance(closest, str) else None,
                    candidates=tuple(candidates),
                )
            )
        failing, passing = _get(data, "failing", list, where), _get(data, "passing", list, where)
        return Ranked(len(failing), len(passing), tuple(runs))
    raise ReportError(f"{where}: not a triage result (agentevals triage rank --json or fork --json)")


def _get(data: Mapping[str, Any], key: str, kind: Any, where: str) -> Any:
    value = data.get(key)
    if (isinstance(value, bool) and kind in (int, (int, float))) or not isinstance(value, kind):
        raise ReportError(f"{where}: '{key}' is missing or not of the right type")
    return value


def triage_html(results: Sequence[Triage], anchors: Mapping[str, str] | None = None) -> str:
    """The page's triage section; empty with no result. `anchors`: a run's label -> its section's id
    on this page, for links from a ranked step to the run."""
    if not results:
        return ""
    anchors = anchors or {}
    parts = ['<section id="triage"><h2>Triage</h2>']
    for result in results:
        if isinstance(result, Forked):
            verdict, who = escape(result.verdict), escape(result.run)
            parts.append(
                f'<div class="fork" data-verdict="{verdict}"><h3>Fork: {who} at step {result.step}</h3>'
                f'<p class="verdict-{_css(result.verdict)}">{escape(result.line)}</p>'
                f'<p class="mute">The decision put there: {escape(result.source)}. '
                f"Cost: {result.model_calls} model calls ({result.live_calls} live), "
                f"${result.cost_usd:.4f}.</p></div>"
            )
            continue
        parts.append(
            f'<p class="mute">Ranked over {result.failing} failing and {result.passing} passing run(s): '
            "a step's suspicion is its most telling feature's Ochiai score.</p>"
        )
        for run in result.runs:
            name = escape(run.run)
            if run.run in anchors:
                name = f'<a href="#{escape(anchors[run.run])}">{name}</a>'
            closest = f"; closest passing run {escape(run.closest)}" if run.closest else ""
            rows = "".join(
                f'<tr data-step="{c.step}"><td class="num">{place}</td><td class="num">{c.step}</td>'
                f'<td class="num">{c.score:.2f}</td><td><code>{escape(c.decision)}</code></td><td>'
                + "<br>".join(
                    f"{escape(feature)}: {fails}/{result.failing} failing, {passes}/{result.passing} passing"
                    for feature, fails, passes in c.evidence[:3]
                )
                + (" <em>(first divergence)</em>" if c.divergence else "")
                + "</td></tr>"
                for place, c in enumerate(run.candidates[:MAX_SHOWN], 1)
            )
            parts.append(
                f'<div class="ranked" data-run="{escape(run.run)}"><h3>{name} ({escape(run.status)}, '
                f"{run.steps} steps{closest})</h3>"
                '<table><thead><tr><th class="num">#</th><th class="num">step</th>'
                '<th class="num">suspicion</th><th>decision</th><th>evidence</th></tr></thead>'
                f"<tbody>{rows}</tbody></table></div>"
            )
    parts.append("</section>")
    return "".join(parts)


def _css(verdict: str) -> str:
    # The verdict classes the page already colours: fixed reads as met, not as below.
    return {"fixed": "met", "not": "below"}.get(verdict, "inconclusive")


def triage_markdown(results: Sequence[Triage]) -> str:
    if not results:
        return ""
    lines = ["### Triage", ""]
    for result in results:
        if isinstance(result, Forked):
            lines.append(
                f"- fork of {cell(result.run)}: **{cell(result.line)}** ({result.model_calls} calls)"
            )
            continue
        for run in result.runs:
            top = ", ".join(f"step {c.step} ({c.score:.2f})" for c in run.candidates[:3])
            lines.append(f"- {cell(run.run)} ({cell(run.status)}): {top or 'no candidate'}")
    return "\n".join(lines)
