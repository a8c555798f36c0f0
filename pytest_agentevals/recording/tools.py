"""`@tool`: a tool call recorded with its input, output or exception and duration.

A plain pass-through when nothing records or replays: one list look-up per call.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar, overload

from . import active

F = TypeVar("F", bound=Callable[..., Any])


@overload
def tool(fn: F, *, name: str | None = None) -> F: ...


@overload
def tool(fn: None = None, *, name: str | None = None) -> Callable[[F], F]: ...


def tool(fn: F | None = None, *, name: str | None = None) -> F | Callable[[F], F]:
    """Mark a function as one of the agent's tools, so its calls are recorded and can be replayed.

    Use bare (`@tool`) or with a name (`@tool(name="read_file")`). Sync and async functions work.
    """
    if fn is None:
        return lambda f: _wrap(f, name or f.__name__)
    return _wrap(fn, name or fn.__name__)


def _wrap(fn: F, tool_name: str) -> F:
    signature = inspect.signature(fn)

    def arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        # The receiver of a method is not part of what the model asked for.
        return {k: v for k, v in bound.arguments.items() if k not in ("self", "cls")}

    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            recorder, source = active.recorder(), active.source()
            if recorder is None and source is None:
                return await fn(*args, **kwargs)
            tool_input = arguments(args, kwargs)
            if source is not None:
                answer = source

                async def run() -> Any:
                    return answer.tool_result(tool_name, tool_input)

            else:

                async def run() -> Any:
                    return await fn(*args, **kwargs)

            if recorder is None:
                return await run()
            return await recorder.record_tool_async(tool_name, tool_input, run)

        return async_wrapper  # type: ignore[return-value]

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        recorder, source = active.recorder(), active.source()
        if recorder is None and source is None:
            return fn(*args, **kwargs)
        tool_input = arguments(args, kwargs)
        if source is not None:
            answer = source

            def run() -> Any:
                return answer.tool_result(tool_name, tool_input)

        else:

            def run() -> Any:
                return fn(*args, **kwargs)

        if recorder is None:
            return run()
        return recorder.record_tool(tool_name, tool_input, run)

    return wrapper  # type: ignore[return-value]
