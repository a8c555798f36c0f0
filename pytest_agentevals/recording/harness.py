"""What the harness tells and asks its current run: checkpoints, compactions, verifications and notes
(events), the budget left (`budget_left`) and room for long work (`expect_progress`).

Each is a no-op when nothing records, so a harness can call them unconditionally.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..guards.left import BudgetLeft, Grace, left_of
from ..guards.protocol import Guard
from .recorder import current_recorder


def checkpoint(
    state: Mapping[str, Any], *, workspace: str | Path | None = None, name: str | None = None
) -> None:
    """A resumable point: the harness's state (JSON-able) and, optionally, a snapshot of its workspace.

    The trace is fsynced here, so a crash after a checkpoint never loses it.
    """
    recorder = current_recorder()
    if recorder is None:
        return
    fields: dict[str, Any] = {"state": dict(state)}
    if name is not None:
        fields["name"] = name
    if workspace is not None:
        fields["workspace"] = recorder.snapshots.snapshot(workspace)
    recorder.count("checkpoints")
    recorder.emit("checkpoint", sync=True, **fields)


def compaction(*, tokens_before: int, tokens_after: int, summary: str, **extra: Any) -> None:
    """The harness compacted its context: how many tokens before and after, and the summary kept."""
    if tokens_before < 0 or tokens_after < 0:
        raise ValueError(f"token counts must be >= 0, got before={tokens_before} after={tokens_after}")
    recorder = current_recorder()
    if recorder is None:
        return
    recorder.count("compactions")
    recorder.emit(
        "compaction", tokens_before=tokens_before, tokens_after=tokens_after, summary=summary, **extra
    )


def verification(name: str, passed: bool, progress: float | None = None, **detail: Any) -> None:
    """A check of the agent's work: its name, whether it passed, and progress in [0, 1] if known."""
    if progress is not None and not 0.0 <= progress <= 1.0:
        raise ValueError(f"progress must be in [0, 1], got {progress!r}")
    recorder = current_recorder()
    if recorder is None:
        return
    fields: dict[str, Any] = {"name": name, "passed": bool(passed)}
    if progress is not None:
        fields["progress"] = progress
    fields.update(detail)
    recorder.count("verification", passed=passed)
    recorder.emit("verification", **fields)


def note(message: str, **data: Any) -> None:
    """Anything else worth reading later: a watchdog firing, a restart, a budget warning."""
    recorder = current_recorder()
    if recorder is None:
        return
    fields: dict[str, Any] = {"message": message}
    if data:
        fields["data"] = data
    recorder.emit("note", **fields)


def _current_guards() -> Sequence[Guard]:
    """The guards of the run being recorded in this context, or none."""
    recorder = current_recorder()
    return recorder.guards if recorder is not None else ()


def budget_left() -> BudgetLeft:
    """What is left of the current run's budgets (all None when nothing records or nothing limits)."""
    return left_of(_current_guards())


class expect_progress(Grace):
    """Announce long work: the current run's watchdog allows `within` model calls without verified
    progress from here (see `guards.left.Grace`); a no-op when nothing records or no watchdog is on."""

    def __init__(self, within: int, reason: str) -> None:
        super().__init__(_current_guards(), within, reason)
