"""What `@ae.tool` does to a call: recorded with its input, output or exception and duration.

A plain pass-through when nothing records or replays: a context variable's look-up per call. A
call belongs to the run of its context (`active.py`).

What a framework injects into a tool (LangGraph's `RunnableConfig`, injected state or store, a
tool-call id, pydantic-ai's `RunContext`) is not what the model asked for: it is neither recorded as
input nor matched in a replay (`injected.py`); `exclude=` names the user's own such arguments.
The decorator itself, `pytest_agentevals.tool`, is one (`adapters/wrap.py`): it takes a function
(`wrap_function` here) or a framework's tool object (a LangChain `BaseTool`, a pydantic-ai `Tool`
or toolset), which `pytest_agentevals.adapters` wraps on `call` and `call_async` here.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from . import active
from .injected import injected_parameters, is_injected_value

F = TypeVar("F", bound=Callable[..., Any])


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
    bind = binder(signature)

    def arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        bound = bind(args, kwargs)
        return {
            key: value for key, value in bound.items() if key not in skipped and not is_injected_value(value)
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


Binder = Callable[[tuple[Any, ...], dict[str, Any]], dict[str, Any]]
_PLAIN = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def binder(signature: inspect.Signature) -> Binder:
    """{name: value} of a call, in the signature's order with defaults applied: what
    `signature.bind(*args, **kwargs)` and `apply_defaults()` give, and the same TypeError for a call
    that does not fit. A signature of plain parameters (no positional-only, no `*args` or
    `**kwargs`) is bound without `inspect`'s general machinery, a tenth of its time per tool call;
    any call that does not simply fit is handed to `bind`, which raises as before."""

    def general(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return dict(bound.arguments)

    parameters = list(signature.parameters.values())
    if not all(parameter.kind in _PLAIN for parameter in parameters):
        return general
    positional = tuple(p.name for p in parameters if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD)
    order = tuple((p.name, p.default) for p in parameters)
    empty = inspect.Parameter.empty

    def plain(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        if len(args) > len(positional):
            return general(args, kwargs)
        given = dict(zip(positional, args, strict=False))
        for key, value in kwargs.items():
            if key in given:
                return general(args, kwargs)
            given[key] = value
        out: dict[str, Any] = {}
        for name, default in order:
            if name in given:
                out[name] = given.pop(name)
            elif default is not empty:
                out[name] = default
            else:
                return general(args, kwargs)  # a required argument left out
        return out if not given else general(args, kwargs)  # a keyword it does not have

    return plain


def unsupported(thing: Any) -> str:
    """The one error for what `@tool` does not know: what it was given and what it takes."""
    kind = thing if isinstance(thing, type) else type(thing)
    what = "the class" if isinstance(thing, type) else "a"
    return (
        f"@tool cannot wrap {what} {kind.__module__}.{kind.__qualname__}: it takes a function (sync or "
        "async), a LangChain BaseTool (pytest-agentevals[langgraph]) or a pydantic-ai Tool or toolset "
        "(pytest-agentevals[pydantic-ai])"
    )
