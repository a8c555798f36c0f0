"""Booting from a checkpoint: a restored workspace, the agent's state, and where it all came from.

The one object every resume hands the user's harness is a `ResumePoint` — what the
`pytest_agentevals_resume_agent(checkpoint)` hook receives, whether the checkpoint is a fixture
booted by the resume layer (`name` is the fixture's) or a live run's own last checkpoint, from which
the marathon layer's supervisor restarts a crashed seed (`name` is None):

```python
point = resume_point_from_trace(Path("run.trace.jsonl"), "latest", workspace=tmp / "ws")
result = hook.pytest_agentevals_resume_agent(checkpoint=point)
```

No pytest here: an engine module, usable from plain Python and the command line.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..trace.messages import conversation_at
from ..trace.openai_chat import to_openai
from .restore import restore
from .source import lineage_of as _lineage_of
from .source import read_checkpoint, snapshot_entries


@dataclass
class ResumePoint:
    """What `pytest_agentevals_resume_agent(checkpoint)` receives (the fixture's object has these too).

    - `name`: the fixture's name, or None for a live run's own checkpoint;
    - `state`: the agent's state, as the harness reported it (JSON);
    - `workspace`: the restored workspace, a folder the caller gave (a test's temporary folder);
    - `task`, `seed`: the source run's `run_start.task` and `seed`;
    - `step`: the checkpoint's step in the source run;
    - `lineage`: the source trace and its SHA-256, the step, the time into the run, the tokens and
      cost spent so far, the verified progress made (`progress`), compactions and restarts;
    - `events`: the source trace up to and including the checkpoint (its workspace whole; an
      earlier checkpoint's as the trace stores it, a delta against the one before).
    """

    name: str | None
    state: dict[str, Any]
    workspace: Path
    task: Any
    seed: Any
    step: int
    lineage: dict[str, Any]
    events: list[dict[str, Any]] = field(repr=False)

    def conversation(self) -> tuple[Any, list[dict[str, Any]]]:
        """`(system, messages)` of the conversation at the checkpoint, in the Anthropic shape: the last
        model request before it and that request's answer; `(None, [])` when no model call came first."""
        return conversation_at(self.events)

    def openai_messages(self) -> list[dict[str, Any]]:
        """The conversation at the checkpoint (`conversation()`) in the OpenAI / litellm chat shape,
        for a harness that keeps its history so (`pytest_agentevals.trace.to_openai`)."""
        system, messages = self.conversation()
        return to_openai(messages, system)

    @property
    def progress(self) -> float:
        """The verified progress the source run had made by the checkpoint (0 when unknown)."""
        value = self.lineage.get("progress")
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def resume_point_from_trace(
    trace: Path, at: int | str, workspace: Path, *, files_from: Path | None = None
) -> ResumePoint:
    """Boot from a recorded run's checkpoint at or before step `at` (or its last, `"latest"`): its
    workspace is restored into `workspace` (new, or an empty folder), checked entry by entry and whole
    or not at all; its state is returned with the run's task, seed, lineage and events.

    A trace cut off mid-write (a crashed run) is read as far as it goes. `files_from` supplies the
    content of files the trace keeps only the hash of (over 256 KiB), checked against it.
    Raises `CheckpointError` naming the trace, the line and the fix.
    """
    source = read_checkpoint(trace, at)
    entries, content = snapshot_entries(source.checkpoint, source.where, files_from)
    restore(Path(workspace), entries, lambda entry: content[entry.path], source.where)
    start = source.run_start
    return ResumePoint(
        name=None,
        state=copy.deepcopy(source.checkpoint["state"]),
        workspace=Path(workspace),
        task=start.get("task"),
        seed=start.get("seed"),
        step=source.step,
        lineage=_lineage_of(source),
        events=source.events,
    )
