"""`ae.tool` on the frameworks' own tool objects: the same kind, name and schema back, recorded, and
replayed strictly with what the framework injects left out of the input."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any

import pytest

import pytest_agentevals as ae
from pytest_agentevals import ReplayDivergence, Replayer, read_trace

pytest.importorskip("langchain_core", reason="needs pytest-agentevals[langgraph]")
pytest.importorskip("pydantic_ai", reason="needs pytest-agentevals[pydantic-ai]")

from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool
from langchain_core.tools import tool as langchain_tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import InjectedState, ToolNode
from pydantic import BaseModel
from pydantic_ai import Agent, RunContext, Tool
from pydantic_ai.models.test import TestModel
from pydantic_ai.toolsets import FunctionToolset

RAN: list[Any] = []


def tool_calls(trace: Path) -> list[tuple[str, Any]]:
    return [(event["name"], event["input"]) for event in read_trace(trace) if event["type"] == "tool_call"]


@langchain_tool
def lookup(city: str, config: RunnableConfig) -> str:
    """The weather in a city."""
    RAN.append(city)
    return f"sunny in {city} for thread {config['configurable'].get('thread_id')}"


class SearchInput(BaseModel):
    query: str
    limit: int = 3


class Search(BaseTool):
    """Written the way LangChain's prebuilt tools are: a BaseTool subclass with an args_schema."""

    name: str = "search"
    description: str = "Search the notes."
    args_schema: type[BaseModel] = SearchInput

    def _run(self, query: str, limit: int = 3, run_manager: Any = None) -> str:
        RAN.append(query)
        return f"{limit} notes about {query}"


def test_a_langchain_tool_taking_runnable_config_replays_strictly(tmp_path: Path) -> None:
    # Before the adapter, ae.tool(lookup) raised "'StructuredTool' object has no attribute '__name__'".
    wrapped = ae.tool(lookup)
    assert isinstance(wrapped, StructuredTool)
    assert (wrapped.name, wrapped.description) == (lookup.name, lookup.description)
    assert wrapped.tool_call_schema.model_json_schema() == lookup.tool_call_schema.model_json_schema()
    trace = tmp_path / "run.trace.jsonl"
    with ae.Recorder(trace, http=False):
        assert wrapped.invoke({"city": "Oslo"}, config={"configurable": {"thread_id": "a"}}).endswith("a")
    assert tool_calls(trace) == [("lookup", {"city": "Oslo"})]  # no config: checkpoint ids, callbacks
    RAN.clear()
    with Replayer(trace) as replay:
        answer = wrapped.invoke({"city": "Oslo"}, config={"configurable": {"thread_id": "b"}})
    assert answer.endswith("thread a")  # the recorded answer; the tool did not run
    assert RAN == []
    assert replay.report.served_tools == 1
    with pytest.raises(ReplayDivergence, match="other arguments"), Replayer(trace):
        wrapped.invoke({"city": "Rome"})


def test_a_prebuilt_style_tool_keeps_its_class_and_schema_and_replays(tmp_path: Path) -> None:
    original = Search()
    wrapped = ae.tool(original)
    assert isinstance(wrapped, Search)
    assert wrapped.args == original.args
    trace = tmp_path / "run.trace.jsonl"
    with ae.Recorder(trace, http=False):
        assert wrapped.invoke({"query": "ducks"}) == "3 notes about ducks"
        assert asyncio.run(wrapped.ainvoke({"query": "geese", "limit": 1})) == "1 notes about geese"
    # Once each, though LangChain's default _arun runs _run in an executor.
    assert tool_calls(trace) == [
        ("search", {"query": "ducks", "limit": 3}),
        ("search", {"query": "geese", "limit": 1}),
    ]
    RAN.clear()
    with Replayer(trace):
        assert wrapped.invoke({"query": "ducks"}) == "3 notes about ducks"
        assert asyncio.run(wrapped.ainvoke({"query": "geese", "limit": 1})) == "1 notes about geese"
    assert RAN == []
    assert original.invoke({"query": "x"}) == "3 notes about x"  # the original is left as it was


@langchain_tool
def note_count(
    topic: str,
    state: Annotated[dict[str, Any], InjectedState],
    tool_call_id: Annotated[str, InjectedToolCallId],
) -> str:
    """How many messages mention a topic."""
    RAN.append(tool_call_id)
    return f"{len(state['messages'])} messages; asked about {topic}"


def test_injected_state_and_tool_call_ids_are_neither_recorded_nor_matched(tmp_path: Path) -> None:
    builder = StateGraph(MessagesState)
    builder.add_node("tools", ToolNode([ae.tool(note_count)]))
    builder.add_edge(START, "tools")
    node = builder.compile()

    def ask(call_id: str, extra: int) -> str:
        asked = AIMessage(
            content="", tool_calls=[{"name": "note_count", "args": {"topic": "x"}, "id": call_id}]
        )
        result = node.invoke({"messages": [AIMessage(content="hi")] * extra + [asked]})
        return str(result["messages"][-1].content)

    trace = tmp_path / "run.trace.jsonl"
    with ae.Recorder(trace, http=False):
        assert ask("call_1", 1) == "2 messages; asked about x"
    assert tool_calls(trace) == [("note_count", {"topic": "x"})]
    RAN.clear()
    with Replayer(trace):
        assert ask("call_other", 5) == "2 messages; asked about x"
    assert RAN == []


def test_exclude_names_an_argument_of_the_users_own(tmp_path: Path) -> None:
    @ae.tool(exclude=["session"])
    def fetch(url: str, session: object) -> str:
        return f"fetched {url}"

    trace = tmp_path / "run.trace.jsonl"
    with ae.Recorder(trace, http=False):
        fetch("https://example.invalid/a", session=object())
    assert tool_calls(trace) == [("fetch", {"url": "https://example.invalid/a"})]
    with pytest.raises(ValueError, match=r"exclude= names nope, which tool 'lookup' does not take"):
        ae.tool(lookup, exclude=["nope"])


def weather(ctx: RunContext[str], city: str) -> str:
    """The weather in a city."""
    RAN.append(city)
    return f"{ctx.deps}: sunny in {city}"


def test_pydantic_ai_tools_toolsets_and_renamed_functions_replay(tmp_path: Path) -> None:
    @ae.tool(name="forecast")
    def five_days(days: int) -> str:
        """A forecast."""
        RAN.append(days)
        return f"{days} days of rain"

    def double(text: str) -> str:
        """Doubles a text."""
        RAN.append(text)
        return text * 2

    original = Tool(weather)
    wrapped = ae.tool(original)
    assert type(wrapped) is type(original)
    assert (wrapped.name, wrapped.function_schema.json_schema) == (
        "weather",
        original.function_schema.json_schema,
    )
    toolset = ae.tool(FunctionToolset([double]))
    agent = Agent(TestModel(), deps_type=str, tools=[wrapped, five_days], toolsets=[toolset])
    trace = tmp_path / "run.trace.jsonl"
    with ae.Recorder(trace, http=False):
        live = agent.run_sync("go", deps="today").output
    # The tool was renamed for pydantic-ai too (it names a tool after the function's __name__), and
    # the RunContext is not part of the input.
    assert sorted(tool_calls(trace)) == [
        ("double", {"text": "a"}),
        ("forecast", {"days": 0}),
        ("weather", {"city": "a"}),
    ]
    RAN.clear()
    with Replayer(trace):
        assert agent.run_sync("go", deps="another day").output == live
    assert RAN == []


def test_an_object_the_wrapper_does_not_know_is_one_error_naming_it() -> None:
    with pytest.raises(
        TypeError, match=r"cannot wrap a builtins\.int: it takes a function .* LangChain BaseTool"
    ):
        ae.tool(3)
    with pytest.raises(
        TypeError, match=r"cannot wrap the class tests\.adapters\.test_tools\.Search: it takes"
    ):
        ae.tool(Search)  # the class, not a tool


def test_wrapping_a_function_never_imports_a_framework() -> None:
    # The frameworks are extras: `ae.tool` on a plain function (and the package itself) loads none.
    code = (
        "import sys\n"
        "import pytest_agentevals as ae\n"
        "ae.tool(lambda path: path)\n"
        "ae.tool(name='read')(lambda path: path)\n"
        "print(sorted(m for m in ('langchain_core', 'langgraph', 'pydantic_ai') if m in sys.modules))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "[]"
