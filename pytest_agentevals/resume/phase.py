"""A resumed leg's metrics: `phase`, computed from the leg's own trace by `metrics.compute`.

Progress counts from the checkpoint's (`progress_start` is the verified progress the source run had
made when it was checkpointed), so `verified_gain` is what this leg verified. Every field of
`RunMetrics` is there (`phase.watchdog_fires`, `phase.progress_auc`...), with these beside them:
`calls` (successful model calls), `tokens` (every token: input, output, cache writes and reads),
`stalls` (watchdog firings), `until`, `until_reached`, and `trace` (the leg's trace file).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..metrics import RunMetrics, compute
from ..trace.events import Event


@dataclass(frozen=True)
class Phase:
    metrics: RunMetrics
    trace: Path
    until: str | None = None
    until_reached: bool = False

    @classmethod
    def of(
        cls, events: list[Event], trace: Path, progress_start: float, until: str | None, reached: bool
    ) -> Phase:
        return cls(compute(events, progress_start=progress_start), trace, until, reached)

    def __getattr__(self, name: str) -> Any:
        # Only called for what the dataclass lacks: every metric of the leg.
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.metrics, name)

    @property
    def verified_gain(self) -> float:
        return self.metrics.verified_gain

    @property
    def progress_start(self) -> float:
        return self.metrics.progress_start

    @property
    def progress_end(self) -> float:
        return self.metrics.progress_end

    @property
    def status(self) -> str | None:
        return self.metrics.status

    @property
    def calls(self) -> int:
        return self.metrics.steps

    @property
    def tokens(self) -> int:
        return sum(self.metrics.tokens.values())

    @property
    def cost_usd(self) -> float:
        return self.metrics.cost_usd

    @property
    def stalls(self) -> int:
        return self.metrics.watchdog_fires

    def summary(self) -> str:
        """One line for a person: what the leg did."""
        until = (
            f", until {self.until}: {'reached' if self.until_reached else 'not reached'}"
            if self.until
            else ""
        )
        return (
            f"the leg ran {self.calls} model calls ({self.tokens:,} tokens, ${self.cost_usd:.4f}), "
            f"verified progress {self.progress_start:.3g} -> {self.progress_end:.3g} "
            f"(gain {self.verified_gain:+.3g}), "
            f"{self.stalls} watchdog firing(s), {self.metrics.restarts} restart(s), status "
            f"{self.status}{until}; trace {self.trace}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            **self.metrics.to_json(),
            "calls": self.calls,
            "total_tokens": self.tokens,
            "stalls": self.stalls,
            "until": self.until,
            "until_reached": self.until_reached,
            "trace": str(self.trace),
        }
