"""`ae.tool`: a function, or a framework's own tool object, recorded and replayed.

A framework's object is told by its class's lineage (names and modules, read without importing the
framework) and handed to the module that knows it, imported then: a session that never wraps a
LangChain tool never imports LangChain.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar, overload

from ..recording import tools as recorded

T = TypeVar("T")


def _lineage(thing: Any) -> set[tuple[str, str]]:
    return {(klass.__module__.split(".")[0], klass.__name__) for klass in type(thing).__mro__}


def kind_of(thing: Any) -> str | None:
    """Which framework's tool `thing` is: "langchain", "pydantic-ai-tool", "pydantic-ai-toolset"."""
    lineage = _lineage(thing)
    if ("langchain_core", "BaseTool") in lineage:
        return "langchain"
    if ("pydantic_ai", "Tool") in lineage:
        return "pydantic-ai-tool"
    if ("pydantic_ai", "AbstractToolset") in lineage:
        return "pydantic-ai-toolset"
    return None


def wrap(thing: T, name: str | None = None, exclude: Iterable[str] = ()) -> T:
    kind = kind_of(thing)
    if kind == "langchain":
        from . import langchain_tools

        return langchain_tools.wrap(thing, name=name, exclude=exclude)  # type: ignore[arg-type, return-value]
    if kind == "pydantic-ai-tool":
        from . import pydantic_ai_tools

        return pydantic_ai_tools.wrap_tool(thing, name=name, exclude=exclude)  # type: ignore[arg-type, return-value]
    if kind == "pydantic-ai-toolset":
        if name is not None:
            raise ValueError("a toolset holds several tools: name= renames one tool, not a toolset")
        from . import pydantic_ai_tools

        return pydantic_ai_tools.wrap_toolset(thing, exclude=exclude)  # type: ignore[arg-type, return-value]
    if isinstance(thing, type) or not callable(thing) or not hasattr(thing, "__name__"):
        raise TypeError(recorded.unsupported(thing))
    return recorded.wrap_function(thing, name or thing.__name__, frozenset(exclude))


@overload
def tool(fn: T, *, name: str | None = None, exclude: Iterable[str] = ()) -> T: ...


@overload
def tool(fn: None = None, *, name: str | None = None, exclude: Iterable[str] = ()) -> Callable[[T], T]: ...


def tool(fn: Any = None, *, name: str | None = None, exclude: Iterable[str] = ()) -> Any:
    """Mark one of the agent's tools, so its calls are recorded and can be replayed.

    Takes a function (sync or async; bare `@tool` or `@tool(name="read_file")`), a LangChain
    `BaseTool` (`@tool`-decorated, `StructuredTool`, a prebuilt one) or a pydantic-ai `Tool` or
    toolset, and returns one of the same kind, name and schema. What the framework injects
    (`RunnableConfig`, injected state or store, a tool-call id, `RunContext`) is never recorded nor
    matched; `exclude` names the arguments of your own that are not the model's to choose.
    """
    excluded = tuple(exclude)
    if fn is None:
        return lambda thing: wrap(thing, name, excluded)
    return wrap(fn, name, excluded)


def wrap_tools(tools: Iterable[T], *, exclude: Iterable[str] = ()) -> list[T]:
    """`tool` applied to each of a list of tools (a framework's prebuilt set, say)."""
    excluded = tuple(exclude)
    return [wrap(each, None, excluded) for each in tools]
