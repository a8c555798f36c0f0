"""A LangGraph agent (pytest-agentevals[langgraph]): a model node and LangGraph's prebuilt ToolNode in
a loop, writing the notes a task asks for into a workspace, checkpointed after every step.

Everything the pyramid needs is the framework's own objects, wrapped once:
- `write_note` is a LangChain `@tool` taking LangGraph's injected `RunnableConfig` (it finds the
  workspace there), wrapped by `ae.tool`: recorded and replayed, the config never part of its input;
- the checkpointer is `RecordedCheckpointer(InMemorySaver(), workspace=...)`: each checkpoint a
  harness checkpoint event with the state as JSON and the workspace beside it, the graph invoked with
  `durability="sync"` so the two agree;
- the model is langchain-anthropic's `ChatAnthropic`, pointed at the simulated model
  (`examples/notes_policy.py`) on loopback with a fake key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_anthropic import ChatAnthropic
from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool as langchain_tool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from pydantic import SecretStr

import pytest_agentevals as ae
from pytest_agentevals.adapters import RecordedCheckpointer

from ..notes_policy import MODEL, SYSTEM, TASK

FAKE_KEY = "sim-" + "notes"  # the simulated model takes any key; nothing real is ever needed


@langchain_tool
def write_note(name: str, text: str, config: RunnableConfig) -> str:
    """Write a note into the workspace, replacing one of the same name."""
    folder = Path(config["configurable"]["workspace"])
    (folder / f"{name}.txt").write_text(text + "\n", encoding="utf-8")
    return f"wrote {name}.txt"


TOOLS = [ae.tool(write_note)]


def model(base_url: str) -> Any:
    chat = ChatAnthropic(  # type: ignore[call-arg]
        model_name=MODEL, base_url=base_url, api_key=SecretStr(FAKE_KEY), max_retries=0, timeout=30
    )
    return chat.bind_tools(TOOLS)


def messages_for_model(messages: list[AnyMessage], system: str = SYSTEM) -> list[AnyMessage]:
    """What the model node sends: today's system prompt, then the conversation."""
    return [SystemMessage(content=system), *messages]


def build(base_url: str, checkpointer: BaseCheckpointSaver[Any] | None = None) -> CompiledStateGraph[Any]:
    bound = model(base_url)

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [bound.invoke(messages_for_model(state["messages"]))]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode(TOOLS))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(checkpointer=checkpointer)


def config(workspace: Path, thread_id: str, notes: int) -> RunnableConfig:
    return {
        "configurable": {"thread_id": thread_id, "workspace": str(workspace)},
        "recursion_limit": 2 * notes + 10,
    }


def run(base_url: str, workspace: Path, notes: int, *, thread_id: str = "notes") -> dict[str, Any]:
    """Write `notes` notes into `workspace`; the final state. (Recorded when a recorder is active.)"""
    graph = build(base_url, RecordedCheckpointer(InMemorySaver(), workspace=workspace))
    start = {"messages": [HumanMessage(content=TASK.format(count=notes))]}
    return graph.invoke(start, config(workspace, thread_id, notes), durability="sync")
