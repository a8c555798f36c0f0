"""An existing LangGraph thread, saved by any checkpointer (`SqliteSaver` from
langgraph-checkpoint-sqlite, `PostgresSaver`, `InMemorySaver`...), written as a trace of checkpoint
events: what `agentevals resume extract` turns into a checkpoint fixture with its contract.

The saver is the framework's own, so its blobs are read by the code that wrote them; each checkpoint
is then stored as the adapter's plain JSON (`langgraph_state.py`), scrubbed like every event. A
checkpoint written in a newer checkpoint format than the installed LangGraph writes is refused,
naming both versions.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, empty_checkpoint

from ..errors import RecordingError
from ..recording.harness import checkpoint as harness_checkpoint
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


def import_thread(
    saver: BaseCheckpointSaver[Any],
    thread_id: str,
    trace: str | Path,
    *,
    checkpoint_ns: str = "",
    contract: Mapping[str, Any] | None = None,
    codecs: Mapping[str, Codec] | None = None,
    agent: str = "langgraph",
) -> int:
    """Write thread `thread_id` of `saver` to `trace`, oldest checkpoint first; how many it wrote.
    `contract` (say, `graph_contract(graph)`) is the run's, for the fixture's contract check."""
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
    with Recorder(trace, agent=agent, http=False, contract=contract, packages=("langgraph",)):
        for item in reversed(saved):  # a saver lists a thread newest first
            state = checkpoint_state(item.config, item.checkpoint, item.metadata, dict(codecs or {}))
            harness_checkpoint(state, name=f"langgraph step {state['step']}")
    return len(saved)
