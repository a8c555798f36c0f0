"""A LangChain tool (`BaseTool`: `@tool`-decorated, `StructuredTool`, a prebuilt one) recorded and
replayed as it is.

The wrapped tool is a copy of the same class (a subclass made for it), with the same name, description
and schema: LangChain and LangGraph see the tool they were given. Only its `_run` / `_arun` change:
they record (or answer from the recording) what the model chose, the fields of the tool's
`tool_call_schema`. What LangChain injects (a `RunnableConfig`, `InjectedState`, `InjectedStore`,
`InjectedToolCallId`, `ToolRuntime`, the callback manager) is passed to the tool as before and never
recorded nor matched; `exclude` names more.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
from collections.abc import Iterable
from typing import Any

from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import run_in_executor
from langchain_core.tools import BaseTool
from langchain_core.tools.base import _get_injected_args_keys_from_signature, _get_runnable_config_param

from ..recording import tools as recorded

# Set while a wrapped tool runs, so that a tool whose `_arun` falls back on its `_run` (LangChain's
# default) records the call once, not twice.
_inside: contextvars.ContextVar[bool] = contextvars.ContextVar("agentevals_langchain_tool", default=False)


def wrap(tool: BaseTool, *, name: str | None = None, exclude: Iterable[str] = ()) -> BaseTool:
    """A recorded copy of `tool`, of its own class, under `name` (default: the tool's)."""
    original = type(tool)
    model_fields = _model_fields(tool)
    excluded = frozenset(exclude)
    unknown = excluded - model_fields
    if unknown:
        raise ValueError(
            f"exclude= names {', '.join(sorted(unknown))}, which tool {tool.name!r} does not take from the "
            f"model; its arguments are {', '.join(sorted(model_fields)) or 'none'}"
        )
    keep = model_fields - excluded
    run_wants = _wants(original._run)
    arun_wants = _wants(original._arun)
    arun_is_default = original._arun is BaseTool._arun

    def _run(
        self: BaseTool,
        *args: Any,
        config: RunnableConfig = None,  # type: ignore[assignment]  # LangChain passes it when annotated so
        run_manager: Any = None,
        **kwargs: Any,
    ) -> Any:
        def run() -> Any:
            return original._run(self, *args, **kwargs, **run_wants(config, run_manager))

        if _inside.get() or not recorded.recording():
            return run()
        token = _inside.set(True)
        try:
            return _restore(self, recorded.call(self.name, _input(args, kwargs, keep), run))
        finally:
            _inside.reset(token)

    async def _arun(
        self: BaseTool,
        *args: Any,
        config: RunnableConfig = None,  # type: ignore[assignment]  # LangChain passes it when annotated so
        run_manager: Any = None,
        **kwargs: Any,
    ) -> Any:
        async def run() -> Any:
            if arun_is_default:  # LangChain runs the sync tool in an executor
                call = functools.partial(
                    original._run, self, *args, **kwargs, **run_wants(config, run_manager)
                )
                return await run_in_executor(config, call)
            return await original._arun(self, *args, **kwargs, **arun_wants(config, run_manager))

        if _inside.get() or not recorded.recording():
            return await run()
        token = _inside.set(True)
        try:
            answer = await recorded.call_async(self.name, _input(args, kwargs, keep), run)
            return _restore(self, answer)
        finally:
            _inside.reset(token)

    namespace: dict[str, Any] = {"_run": _run, "_arun": _arun, "__module__": original.__module__}
    if inspect.getattr_static(original, "_injected_args_keys") is BaseTool.__dict__["_injected_args_keys"]:
        # LangChain reads what it injects off `_run`'s signature: the original's, not this one's.
        def _injected_args_keys(self: BaseTool) -> frozenset[str]:
            for method in (original._run, original._arun):
                keys = _get_injected_args_keys_from_signature(method.__get__(self))
                if keys:
                    return keys
            return frozenset()

        namespace["_injected_args_keys"] = functools.cached_property(_injected_args_keys)
    subclass = type(original.__name__, (original,), namespace)
    subclass.__qualname__ = original.__qualname__
    copy = tool.model_copy()
    if copy.args_schema is None:
        # Without one, LangChain derives the schema from `_run`'s signature: keep the original's.
        copy.args_schema = tool.get_input_schema()
    object.__setattr__(copy, "__class__", subclass)
    if name is not None:
        copy.name = name
    return copy


def _model_fields(tool: BaseTool) -> frozenset[str]:
    """The arguments the model chooses: the fields of the schema LangChain sends it."""
    schema = tool.tool_call_schema
    if isinstance(schema, dict):
        return frozenset(schema.get("properties", {}))
    fields = getattr(schema, "model_fields", None)
    if fields is None:  # a pydantic v1 model
        fields = getattr(schema, "__fields__", {})
    return frozenset(fields)


def _wants(method: Any) -> Any:
    """How the original `method` takes what LangChain passes besides the model's arguments: its
    config under the name it declares (if it declares one), its run manager if it takes one."""
    config_name = _get_runnable_config_param(method)
    takes_manager = "run_manager" in inspect.signature(method).parameters

    def extra(config: RunnableConfig | None, run_manager: Any) -> dict[str, Any]:
        found: dict[str, Any] = {}
        if config_name is not None:
            found[config_name] = config
        if takes_manager:
            found["run_manager"] = run_manager
        return found

    return extra


def _input(args: tuple[Any, ...], kwargs: dict[str, Any], keep: frozenset[str]) -> dict[str, Any]:
    found = {key: value for key, value in kwargs.items() if key in keep}
    if args:  # a single-input tool gets the model's string as its one positional argument
        found["input"] = args[0] if len(args) == 1 else list(args)
    return found


def _restore(tool: BaseTool, output: Any) -> Any:
    """A recorded `(content, artifact)` pair comes back from JSON as a list: LangChain wants a tuple."""
    if tool.response_format == "content_and_artifact" and isinstance(output, list) and len(output) == 2:
        return tuple(output)
    return output
