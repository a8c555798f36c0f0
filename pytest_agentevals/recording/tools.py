"""`@tool`: a tool call recorded with its input, output or exception and duration.

A plain pass-through when nothing records or replays: one list look-up per call.

What a framework injects into a tool (LangGraph's `RunnableConfig`, injected state or store, a
tool-call id, pydantic-ai's `RunContext`) is not what the model asked for: it is neither recorded as
input nor matched in a replay (`injected.py`); `exclude=` names the user's own such arguments.
Framework tool objects (a LangChain `BaseTool`, a pydantic-ai `Tool` or toolset) are wrapped by
`pytest_agentevals.adapters`, which builds on `call` and `call_async` here.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar, overload

from . import active
from .injected import injected_parameters, is_injected_value

F = TypeVar("F", bound=Callable[..., Any])


@overload
def tool(fn: F, *, name: str | None = None, exclude: Iterable[str] = ()) -> F: ...


@overload
def tool(fn: None = None, *, name: str | None = None, exclude: Iterable[str] = ()) -> Callable[[F], F]: ...


def tool(
    fn: F | None = None, *, name: str | None = None, exclude: Iterable[str] = ()
) -> F | Callable[[F], F]:
    """Mark a function as one of the agent's tools, so its calls are recorded and can be replayed.

    Use bare (`@tool`) or with a name (`@tool(name="read_file")`). Sync and async functions work.
    `exclude` names arguments that are not the model's to choose (a handle the harness passes in):
    they are neither recorded nor matched.
    """
    excluded = frozenset(exclude)
    if fn is None:
        return lambda f: wrap_function(f, name or f.__name__, excluded)
    return wrap_function(fn, name or fn.__name__, excluded)


def recording() -> bool:
    """Whether a tool call now would be recorded or answered from a recording."""
    return active.recorder() is not None or active.source() is not None


def call(tool_name: str, tool_input: dict[str, Any], run: Callable[[], Any]) -> Any:
    """One tool call: recorded when a recorder is active, answered from the recording when a replay
    is (`run` is then never called)."""
    recorder, source = active.recorder(), active.source()
    if source is not None:
        answer = source

        def run_or_answer() -> Any:
            return answer.tool_result(tool_name, tool_input)

    else:
        run_or_answer = run
    if recorder is None:
        return run_or_answer()
    return recorder.record_tool(tool_name, tool_input, run_or_answer)


async def call_async(tool_name: str, tool_input: dict[str, Any], run: Callable[[], Awaitable[Any]]) -> Any:
    """`call` for a coroutine."""
    recorder, source = active.recorder(), active.source()
    if source is not None:
        answer = source

        async def run_or_answer() -> Any:
            return answer.tool_result(tool_name, tool_input)

    else:

        async def run_or_answer() -> Any:
            return await run()

    if recorder is None:
        return await run_or_answer()
    return await recorder.record_tool_async(tool_name, tool_input, run_or_answer)


def wrap_function(fn: F, tool_name: str, exclude: frozenset[str] = frozenset()) -> F:
    if isinstance(fn, type) or not callable(fn) or not hasattr(fn, "__name__"):
        raise TypeError(unsupported(fn))
    signature = inspect.signature(fn)
    # The receiver of a method is not part of what the model asked for, nor is what a framework injects.
    skipped = {"self", "cls", *exclude, *injected_parameters(signature)}

    def arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return {
            key: value
            for key, value in bound.arguments.items()
            if key not in skipped and not is_injected_value(value)
        }

    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            if not recording():
                return await fn(*args, **kwargs)
            return await call_async(tool_name, arguments(args, kwargs), lambda: fn(*args, **kwargs))

        wrapper: Any = async_wrapper
    else:

        @functools.wraps(fn)
        def sync_wrapper(*args: Any, **kwargs: Any) -> Any:
            if not recording():
                return fn(*args, **kwargs)
            return call(tool_name, arguments(args, kwargs), lambda: fn(*args, **kwargs))

        wrapper = sync_wrapper
    # A framework that names a tool after its function (pydantic-ai reads `__name__`) sees the name
    # the tool is recorded under.
    wrapper.__name__ = tool_name
    return wrapper  # type: ignore[no-any-return]


def unsupported(thing: Any) -> str:
    """The one error for what `@tool` does not know: what it was given and what it takes."""
    kind = thing if isinstance(thing, type) else type(thing)
    what = "the class" if isinstance(thing, type) else "a"
    return (
        f"@tool cannot wrap {what} {kind.__module__}.{kind.__qualname__}: it takes a function (sync or "
        "async), a LangChain BaseTool (pytest-agentevals[langgraph]) or a pydantic-ai Tool or toolset "
        "(pytest-agentevals[pydantic-ai])"
    )
