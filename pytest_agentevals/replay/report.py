"""What a replay saw: how much it served, and every divergence, ready to print."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..contract import Drift, table
from ..trace.terminal import safe
from .normalize import Folds


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
    """What a replay served, every divergence it reported, and `failure`: the first line of the error
    that failed it (a strict divergence, an unrecorded request, a blocked connection, a stale
    cassette), so that the summary never says less than the verdict; and `tolerated`, the contract
    drifts a declared tolerance (`contract_tolerate`) let the replay go on despite."""

    path: Path
    mode: str
    recorded_http: int = 0
    recorded_tools: int = 0
    served_http: int = 0
    served_sdk: int = 0
    """Of `served_http`, those answered at the SDK's request method (`sdk.py`), never sent to its
    HTTP transport; the summary reads the same whichever path answered."""
    served_tools: int = 0
    divergences: list[Divergence] = field(default_factory=list)
    failure: str | None = None
    tolerated: list[Drift] = field(default_factory=list)
    folds: Folds | None = None
    """What declared normalization folded (None: no rule applied, the comparison was strict)."""
    metadata_left_out: int = 0
    """Requests whose `metadata` (user and session ids) the canonical form left out of the match."""
    metadata_differed: int = 0
    notes: list[str] = field(default_factory=list)
    """What the report must say about how requests were compared (a client no profile covers)."""

    @property
    def diverged(self) -> bool:
        return bool(self.divergences) or self.failure is not None

    def failed(self, error: BaseException) -> None:
        """Note the error that failed the replay (the first one only)."""
        if self.failure is None:
            first = str(error).splitlines()[0] if str(error) else ""
            self.failure = f"{type(error).__name__}: {first}"

    def summary(self) -> str:
        tools = f", {self.served_tools} of {self.recorded_tools} tool calls" if self.recorded_tools else ""
        head = (
            f"replayed {self.path} ({self.mode}): served {self.served_http} of {self.recorded_http} "
            f"recorded HTTP exchanges{tools}"
        )
        verdict = []
        if self.divergences:
            verdict.append(f"{len(self.divergences)} divergence(s)")
        if self.failure is not None:
            verdict.append(f"failed: {self.failure}")
        tolerated = ""
        if self.tolerated:
            keys = ", ".join(f"{drift.key} ({drift.severity})" for drift in self.tolerated)
            tolerated = f"; contract drift tolerated (contract_tolerate): {keys}"
        folded = ""
        if self.folds is not None:
            folded = f"; {self.folds.total} volatile text(s) folded by {self.folds.label}"
        return head + "; " + ("; ".join(verdict) or "no divergence") + tolerated + folded

    def fold_lines(self) -> list[str]:
        """Every fold, rule by rule (each rule listed, folded or not), the built-in leaving out of
        `metadata`, and the notes: how the requests were compared, never left unsaid."""
        lines = self.folds.lines() if self.folds is not None else []
        if self.metadata_left_out:
            lines.append(
                f"metadata left out of the comparison (built in, every client): {self.metadata_left_out} "
                f"request(s), {self.metadata_differed} differed from the recording"
            )
        return lines + self.notes

    def text(self, limit: int = 10) -> str:
        """The summary, the tolerated drift's table, the first divergence in full, and the next ones
        as one line each."""
        lines = [self.summary()]
        if self.tolerated:
            lines.append(table(self.tolerated))
        lines.extend(self.fold_lines())
        for i, divergence in enumerate(self.divergences[:limit]):
            lines.append(divergence.render() if i == 0 else "  " + divergence.headline)
        if len(self.divergences) > limit:
            lines.append(f"  … and {len(self.divergences) - limit} more")
        return safe("\n".join(lines))  # requests, names and contract values come from cassettes
