"""pydantic-ai tools recorded and replayed as they are: a `Tool`, or any toolset.

A `Tool` comes back as a copy of itself (same class, name, description and parameter schema) whose
function records the call; the `RunContext` pydantic-ai passes first is never recorded nor matched.
A toolset (a `FunctionToolset`, an MCP server, a combined one) comes back wrapped in a
`WrapperToolset` that records each call by the name the model used, with the arguments pydantic-ai
validated.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterable
from typing import Any

from pydantic_ai import RunContext, Tool
from pydantic_ai.toolsets import AbstractToolset, WrapperToolset
from pydantic_ai.toolsets.abstract import ToolsetTool

from ..recording import tools as recorded


def wrap_tool(tool: Tool[Any], *, name: str | None = None, exclude: Iterable[str] = ()) -> Tool[Any]:
    """A recorded copy of a pydantic-ai `Tool`, under `name` (default: the tool's)."""
    tool_name = name or tool.name
    function = recorded.wrap_function(tool.function, tool_name, frozenset(exclude))
    wrapped = copy.copy(tool)
    wrapped.name = tool_name
    wrapped.function = function
    wrapped.function_schema = dataclasses.replace(tool.function_schema, function=function, name=tool_name)
    return wrapped


@dataclasses.dataclass
class RecordedToolset(WrapperToolset[Any]):
    """A toolset whose every call is recorded (or answered from the recording, in a replay)."""

    exclude: frozenset[str] = frozenset()

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        if not recorded.recording():
            return await self.wrapped.call_tool(name, tool_args, ctx, tool)
        tool_input = {key: value for key, value in tool_args.items() if key not in self.exclude}
        return await recorded.call_async(
            name, tool_input, lambda: self.wrapped.call_tool(name, tool_args, ctx, tool)
        )


def wrap_toolset(toolset: AbstractToolset[Any], *, exclude: Iterable[str] = ()) -> RecordedToolset:
    return RecordedToolset(wrapped=toolset, exclude=frozenset(exclude))
