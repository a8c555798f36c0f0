"""How faithful a trace is to the run it tells: its fidelity tier, stated in its run_start.

A trace this project recorded is `exact`: every request as sent, byte for byte. A trace imported from
another format (`imports/`: a Claude Code session, OpenTelemetry GenAI spans, an ATIF trajectory) is
`content` when it holds the messages and tool I/O but not the exact requests, or `outline` when it
holds the shape of the run only (which model, which tool, how many tokens), no content. An imported
run_start carries `"fidelity": {"tier", "source", "missing": [...]}`; a run_start without it (every
trace written before tiers existed) is `exact`.

Each use of a trace names what it needs; `require` refuses what the tier cannot feed in one sentence
naming the tier and what is missing.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import AgentEvalsError
from .reader import TraceReader

EXACT = "exact"
CONTENT = "content"
OUTLINE = "outline"
TIERS = (EXACT, CONTENT, OUTLINE)

# What each use takes, and why a lower tier cannot feed it.
USES: dict[str, tuple[tuple[str, ...], str]] = {
    "promote": (
        (EXACT, CONTENT),
        "a replay test serves the recorded model answers to requests matched on their messages",
    ),
    "step extract": (
        (EXACT, CONTENT),
        "a step case freezes the messages a decision was taken on and the decision the model answered",
    ),
    "replay": (
        (EXACT, CONTENT),
        "a replay serves the recorded model answers to requests matched on their messages",
    ),
    "resume extract": (
        (EXACT,),
        "a checkpoint fixture boots from a harness checkpoint's state and replays requests byte-strict",
    ),
}


@dataclass(frozen=True)
class Fidelity:
    """A trace's tier, the format it was imported from (None: recorded here), what it lacks, and the
    texts that varied with where the source run ran (its working folder), for content matching."""

    tier: str = EXACT
    source: str | None = None
    missing: tuple[str, ...] = ()
    volatile: Mapping[str, str] | None = None

    def as_event(self) -> dict[str, Any]:
        """The run_start field (absent for `exact`: a recorded trace is unchanged)."""
        data: dict[str, Any] = {"tier": self.tier, "source": self.source, "missing": list(self.missing)}
        if self.volatile:
            data["volatile"] = dict(self.volatile)
        return data

    def describe(self) -> str:
        """The tier in a sentence's words: "`content` (imported from claude-code; missing: ...)"."""
        if self.tier == EXACT and self.source is None:
            return f"`{EXACT}` (recorded by pytest-agentevals)"
        parts = [f"imported from {self.source}"] if self.source else []
        if self.missing:
            parts.append("missing: " + ", ".join(self.missing))
        return f"`{self.tier}`" + (f" ({'; '.join(parts)})" if parts else "")


def fidelity_of(run_start: Mapping[str, Any]) -> Fidelity:
    """The fidelity a run_start states; `exact` when it states none. A malformed one (an untrusted
    trace's) is read as the lowest tier, never as a higher one than it says."""
    data = run_start.get("fidelity")
    if data is None:
        return Fidelity()
    if not isinstance(data, Mapping):
        return Fidelity(OUTLINE, None, ("a readable fidelity field",))
    tier = data.get("tier")
    source = data.get("source")
    missing = data.get("missing")
    volatile = data.get("volatile")
    return Fidelity(
        tier if tier in TIERS else OUTLINE,
        source if isinstance(source, str) else None,
        tuple(str(item) for item in missing) if isinstance(missing, list) else (),
        {str(k): v for k, v in volatile.items() if isinstance(v, str)}
        if isinstance(volatile, Mapping)
        else None,
    )


def require(run_start: Mapping[str, Any], use: str, where: object) -> Fidelity:
    """The trace's fidelity when `use` (a key of USES) can take it; else AgentEvalsError in one
    sentence naming the trace `where`, its tier and what is missing."""
    fidelity = fidelity_of(run_start)
    allowed, why = USES[use]
    if fidelity.tier not in allowed:
        need = " or ".join(f"`{tier}`" for tier in allowed)
        raise AgentEvalsError(
            f"{where}: cannot {use} a trace of fidelity {fidelity.describe()}: {why}, so it needs "
            f"fidelity {need}; import the run from a source that captured more (for OpenTelemetry, turn "
            "content capture on), or record it with agentevals"
        )
    return fidelity


def require_trace(path: str | Path, use: str) -> Fidelity:
    """`require` for the trace at `path`, from its first event only. A trace that cannot be read is
    left to the caller's own reading, which names what is wrong with it."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            first = next(iter(TraceReader(path, resolve=False)), None)
    except AgentEvalsError:
        return Fidelity()
    return Fidelity() if first is None else require(first, use, path)
