"""An existing LangGraph thread, saved by any checkpointer (`SqliteSaver` from
langgraph-checkpoint-sqlite, `PostgresSaver`, `InMemorySaver`...), written as a trace of checkpoint
events: what `agentevals resume extract` turns into a checkpoint fixture with its contract.

The saver is the framework's own, so its blobs are read by the code that wrote them; each checkpoint
is then stored as the adapter's plain JSON (`langgraph_state.py`), scrubbed like every event. A
checkpoint written in a newer checkpoint format than the installed LangGraph writes is refused,
naming both versions.

Every checkpoint of the thread is written, oldest first, each at its own LangGraph step (the saver's
`metadata["step"]`; the input checkpoint, LangGraph's step -1, at step 0 before step 0's own), so
`agentevals resume extract TRACE --at N` takes the checkpoint after step N. A saver keeps the graph's
state, never the files the graph wrote: the imported checkpoints have no workspace, which the trace
(a note) and the result (`ImportedThread.summary()`) say once; a fixture extracted from one
restores an empty workspace.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, empty_checkpoint

from ..errors import RecordingError
from ..recording.recorder import Recorder
from .langgraph_checkpointer import checkpoint_state
from .langgraph_state import Codec


def _newest_format() -> int:
    """The newest checkpoint format the installed LangGraph writes: its graph loop's (which moves
    ahead of `langgraph.checkpoint.base`'s `empty_checkpoint`), where that can be read."""
    newest = int(empty_checkpoint()["v"])
    try:
        from langgraph.pregel import _checkpoint
    except ImportError:  # pragma: no cover - a LangGraph that moved it: the base's number stands
        return newest
    return max(newest, int(getattr(_checkpoint, "LATEST_VERSION", newest)))


NO_WORKSPACE = (
    "the imported checkpoints have no workspace: a LangGraph saver keeps the graph's state, not the "
    "files it wrote, so a fixture extracted from one restores an empty workspace"
)


@dataclass(frozen=True)
class ImportedThread:
    """What `import_thread` wrote: the trace, the thread, and each checkpoint's step, oldest first."""

    trace: Path
    thread_id: str
    steps: tuple[int, ...]

    @property
    def checkpoints(self) -> int:
        return len(self.steps)

    def summary(self) -> str:
        return (
            f"imported {self.checkpoints} checkpoint(s) of thread {self.thread_id!r} (steps "
            f"{', '.join(map(str, self.steps))}) into {self.trace}; {NO_WORKSPACE}"
        )


def import_thread(
    saver: BaseCheckpointSaver[Any],
    thread_id: str,
    trace: str | Path,
    *,
    checkpoint_ns: str = "",
    contract: Mapping[str, Any] | None = None,
    codecs: Mapping[str, Codec] | None = None,
    agent: str = "langgraph",
) -> ImportedThread:
    """Write every checkpoint of thread `thread_id` of `saver` to `trace`, oldest first, each at its
    LangGraph step; what was written (see the module: the checkpoints have no workspace). `contract`
    (say, `graph_contract(graph)`) is the run's, for the fixture's contract check."""
    known = _newest_format()
    config: RunnableConfig = {"configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns}}
    saved = list(saver.list(config))
    if not saved:
        raise RecordingError(
            f"thread {thread_id!r} has no checkpoint in {type(saver).__name__}: name a thread it saved "
            "(the thread_id the graph was invoked with)"
        )
    for item in saved:
        version = item.checkpoint.get("v")
        if isinstance(version, int) and version > known:
            raise RecordingError(
                f"checkpoint {item.checkpoint.get('id')} of thread {thread_id!r} is in LangGraph's "
                f"checkpoint format version {version}, newer than the {known} the installed langgraph "
                "writes: upgrade langgraph (and langgraph-checkpoint) to import it"
            )
    steps: list[int] = []
    with Recorder(trace, agent=agent, http=False, contract=contract, packages=("langgraph",)) as recorder:
        recorder.emit("note", message=NO_WORKSPACE, data={"by": "import_thread", "thread_id": thread_id})
        for item in reversed(saved):  # a saver lists a thread newest first
            state = checkpoint_state(item.config, item.checkpoint, item.metadata, dict(codecs or {}))
            step = state["step"] if isinstance(state["step"], int) else (steps[-1] if steps else 0)
            steps.append(step)
            recorder.count("checkpoints")
            recorder.emit(
                "checkpoint", sync=True, step=max(step, 0), state=state, name=f"langgraph step {step}"
            )
    return ImportedThread(Path(trace), thread_id, tuple(steps))
