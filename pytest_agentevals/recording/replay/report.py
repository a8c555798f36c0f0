"""What a replay saw: how much it served, and every divergence, ready to print."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


class ReplayDivergenceWarning(UserWarning):
    """A sequential replay whose run asked for other things than the recording (not an error in
    sequential mode: the report lists where)."""


@dataclass(frozen=True)
class Divergence:
    """One place where the replayed run left the recording.

    `kind` is "model" (an HTTP request), "tool" or "end" (the run stopped early); `call` the 1-based
    number of the call in the replayed run; `headline` one line; `detail` the diff and candidates.
    """

    kind: str
    call: int
    headline: str
    detail: str = ""

    def render(self) -> str:
        return self.headline + (f"\n{self.detail}" if self.detail else "")


@dataclass
class ReplayReport:
    path: Path
    mode: str
    recorded_http: int = 0
    recorded_tools: int = 0
    served_http: int = 0
    served_tools: int = 0
    divergences: list[Divergence] = field(default_factory=list)

    @property
    def diverged(self) -> bool:
        return bool(self.divergences)

    def summary(self) -> str:
        tools = f", {self.served_tools} of {self.recorded_tools} tool calls" if self.recorded_tools else ""
        head = (
            f"replayed {self.path} ({self.mode}): served {self.served_http} of {self.recorded_http} "
            f"recorded HTTP exchanges{tools}"
        )
        if not self.divergences:
            return head + "; no divergence"
        return head + f"; {len(self.divergences)} divergence(s)"

    def text(self, limit: int = 10) -> str:
        """The summary, the first divergence in full, and the next ones as one line each."""
        lines = [self.summary()]
        for i, divergence in enumerate(self.divergences[:limit]):
            lines.append(divergence.render() if i == 0 else "  " + divergence.headline)
        if len(self.divergences) > limit:
            lines.append(f"  … and {len(self.divergences) - limit} more")
        return "\n".join(lines)
