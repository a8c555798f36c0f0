"""Any LangGraph checkpoint saver, made to report each checkpoint it saves to the recorder.

`RecordedCheckpointer(saver)` saves exactly as `saver` does (every method is the saver's) and, when a
recorder is active, writes each saved checkpoint as a harness `checkpoint` event: the graph's state
as plain JSON (`langgraph_state.py`: scrubbed like every event, so a secret in the state never
reaches the trace), the nodes to run next, the step, and the snapshot of `workspace` taken then.

A snapshot matches its state only if nothing runs while it is taken. LangGraph's default durability,
`"async"`, saves a checkpoint on a worker thread while the next step already runs, so with a
workspace the adapter refuses it at the first checkpoint, saying to invoke the graph with
`durability="sync"` (or `"exit"`, one checkpoint at the end). Without a workspace any durability is
fine: the state is the saver's copy.

The refusal is made where the graph's loop loads the thread (`get_tuple` / `aget_tuple`, on the
caller's thread, before any step runs), from the loop's own `durability`: LangGraph puts the
durability into the config only when it is given, and a `put` refused on the worker thread is held
in its future, every later save waiting on it, until the graph ends — a whole run with no checkpoint
and the error at its end. `put` checks the config too, for a loop that loads the thread another way.

`boot_thread` is the way back: a fixture's (or a trace's) checkpoint state written into a saver as a
thread's latest checkpoint, so `graph.invoke(None, config)` goes on from there, live or replayed.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Coroutine, Mapping
from pathlib import Path
from types import FrameType
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, empty_checkpoint

from ..errors import RecordingError
from ..recording.harness import checkpoint as harness_checkpoint
from ..recording.recorder import current_recorder
from . import langgraph_state
from .langgraph_state import Codec

try:  # the graph loop, whose own `durability` says how this run saves
    from langgraph.pregel._loop import PregelLoop as _Loop
except ImportError:  # pragma: no cover - a LangGraph that moved it: `put` still checks the config
    _Loop = None  # type: ignore[assignment,misc]

FRAMEWORK = "langgraph"
DURABILITY_KEY = "__pregel_durability"  # where LangGraph puts the durability, when it is given
CONSISTENT = ("sync", "exit")
CALLERS = 3  # how far up from get_tuple the loop may be (its __enter__, or a helper of it)


class RecordedCheckpointer(BaseCheckpointSaver[Any]):
    """A LangGraph checkpointer that saves with `saver` and records each checkpoint (see the module)."""

    def __init__(
        self,
        saver: BaseCheckpointSaver[Any],
        *,
        workspace: str | Path | None = None,
        codecs: Mapping[str, Codec] | None = None,
    ) -> None:
        super().__init__(serde=saver.serde)
        self.saver = saver
        self.workspace = workspace
        self.codecs = dict(codecs or {})
        self._memo = langgraph_state.MessageMemo()  # each thread's messages, encoded once each

    @property
    def config_specs(self) -> list[Any]:
        return self.saver.config_specs

    def put(
        self, config: RunnableConfig, checkpoint: Any, metadata: Any, new_versions: Any
    ) -> RunnableConfig:
        state = self._state(config, checkpoint, metadata)  # refused before anything is saved
        saved = self.saver.put(config, checkpoint, metadata, new_versions)
        self._record(state)
        return saved

    async def aput(
        self, config: RunnableConfig, checkpoint: Any, metadata: Any, new_versions: Any
    ) -> RunnableConfig:
        state = self._state(config, checkpoint, metadata)
        saved = await self.saver.aput(config, checkpoint, metadata, new_versions)
        self._record(state)
        return saved

    def get_tuple(self, config: RunnableConfig) -> Any:
        """The wrapped saver's `get_tuple`; called by a graph's loop as it starts, it refuses a
        durability that cannot record the workspace (before any step ran)."""
        self._check_loop(sys._getframe(1))
        return self.saver.get_tuple(config)

    def aget_tuple(self, config: RunnableConfig) -> Coroutine[Any, Any, Any]:
        """The wrapped saver's `aget_tuple` (checked as `get_tuple`, when it is called: the loop is
        the caller then)."""
        self._check_loop(sys._getframe(1))
        return self.saver.aget_tuple(config)

    def _check_loop(self, frame: FrameType | None) -> None:
        if self.workspace is None or _Loop is None or current_recorder() is None:
            return
        for _ in range(CALLERS):
            if frame is None:
                return
            loop = frame.f_locals.get("self")
            if isinstance(loop, _Loop):
                self._refuse(str(loop.durability))
                return
            frame = frame.f_back

    def _check_durability(self, config: RunnableConfig) -> None:
        if self.workspace is None:
            return
        self._refuse(config.get("configurable", {}).get(DURABILITY_KEY, "async"))

    def _refuse(self, durability: str) -> None:
        if durability not in CONSISTENT:
            raise RecordingError(
                f"the graph runs with durability={durability!r}: LangGraph then saves each checkpoint "
                "while the next step runs, so the workspace snapshot would not match the state. "
                'Invoke the graph with durability="sync" (or "exit"), or record without workspace='
            )

    def _state(self, config: RunnableConfig, checkpoint: Any, metadata: Any) -> dict[str, Any] | None:
        """What the checkpoint event will hold, or None when nothing records."""
        if current_recorder() is None:
            return None
        self._check_durability(config)
        return checkpoint_state(config, checkpoint, metadata, self.codecs, self._memo)

    def _record(self, state: dict[str, Any] | None) -> None:
        if state is not None:
            harness_checkpoint(state, workspace=self.workspace, name=f"langgraph step {state['step']}")


def checkpoint_state(
    config: RunnableConfig,
    checkpoint: Any,
    metadata: Any,
    codecs: Mapping[str, Codec],
    memo: langgraph_state.MessageMemo | None = None,
) -> dict[str, Any]:
    """What a checkpoint event holds of one LangGraph checkpoint: plain JSON (`langgraph_state.py`;
    with `memo`, the thread's unchanged messages as they were encoded at its previous checkpoint)."""
    values = checkpoint.get("channel_values", {})
    configurable = config.get("configurable", {})
    step = metadata.get("step") if isinstance(metadata, Mapping) else None
    thread_id, namespace = configurable.get("thread_id"), configurable.get("checkpoint_ns", "")
    return {
        "framework": FRAMEWORK,
        "thread_id": thread_id,
        "checkpoint_ns": namespace,
        "step": step,
        "source": metadata.get("source") if isinstance(metadata, Mapping) else None,
        "next": langgraph_state.next_nodes(values),
        "values": langgraph_state.encode(values, codecs, memo, (thread_id, namespace)),
    }


def _forward(name: str) -> Any:
    def method(self: RecordedCheckpointer, *args: Any, **kwargs: Any) -> Any:
        return getattr(self.saver, name)(*args, **kwargs)

    method.__name__ = name
    method.__doc__ = f"The wrapped saver's `{name}`."
    return method


# Everything else is the saver's own: reading, writes of pending tasks, deleting, copying, pruning.
for _name in (
    "get", "list", "put_writes", "delete_thread", "delete_for_runs", "copy_thread", "prune",
    "aget", "alist", "aput_writes", "adelete_thread", "adelete_for_runs", "acopy_thread",
    "aprune", "get_delta_channel_history", "aget_delta_channel_history", "get_next_version",
):  # fmt: skip
    if hasattr(BaseCheckpointSaver, _name):
        setattr(RecordedCheckpointer, _name, _forward(_name))


def boot_thread(
    saver: BaseCheckpointSaver[Any],
    state: Mapping[str, Any],
    thread_id: str,
    *,
    codecs: Mapping[str, Codec] | None = None,
) -> RunnableConfig:
    """Write a recorded checkpoint state as the latest checkpoint of thread `thread_id` in `saver`,
    and return the config that resumes it: `graph.invoke(None, config)` runs the nodes that were next.
    """
    if state.get("framework") != FRAMEWORK or not isinstance(state.get("values"), dict):
        raise RecordingError(
            "this checkpoint state was not written by RecordedCheckpointer (it has no framework "
            "'langgraph' and values): boot it with the harness that wrote it"
        )
    next_nodes = state.get("next", [])
    if not isinstance(next_nodes, list) or not all(isinstance(node, str) for node in next_nodes):
        raise RecordingError("the checkpoint state's 'next' must be a list of node names")
    values = langgraph_state.decode(state["values"], dict(codecs or {}))
    values.update({langgraph_state.BRANCH + node: None for node in next_nodes})
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = values
    checkpoint["channel_versions"] = {key: saver.get_next_version(None, None) for key in values}
    checkpoint["updated_channels"] = sorted(values)
    config: RunnableConfig = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    metadata: Any = {"source": "update", "step": state.get("step") or 0, "parents": {}}
    return saver.put(config, checkpoint, metadata, checkpoint["channel_versions"])


def graph_contract(graph: Any) -> dict[str, Any]:
    """The contract keys a compiled graph implies: its nodes and edges, and each tool node's tool
    schemas, hashed (the model, system prompt and model-facing tools are in the model calls)."""
    drawn = graph.get_graph()
    shape = {
        "nodes": sorted(drawn.nodes),
        "edges": sorted([edge.source, edge.target, bool(edge.conditional)] for edge in drawn.edges),
    }
    tools: dict[str, Any] = {}
    for name, node in graph.nodes.items():
        bound = getattr(node, "bound", None)
        by_name = getattr(bound, "tools_by_name", None)
        if isinstance(by_name, dict):
            for tool_name, tool in sorted(by_name.items()):
                schema = tool.tool_call_schema
                tools[f"{name}.{tool_name}"] = _hash(
                    schema if isinstance(schema, dict) else schema.model_json_schema()
                )
    return {"langgraph": {"graph": _hash(shape), "tools": tools}}


def _hash(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
