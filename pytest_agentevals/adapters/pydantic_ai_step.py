"""A step case's conversation as pydantic-ai message history, and its first answer as a decision.

pydantic-ai keeps the system prompt inside the history it is given (it adds the agent's own only to
an empty one), so a case replayed with the recorded history would send the recorded prompt: a
changed prompt would pass unseen. `pydantic_ai_history` puts **today's** system prompt in place of
the recorded one. `first_decision` runs the agent on that history up to its first model response,
never running a tool, and returns it as the Message JSON a case checks.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    ModelResponsePart,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)


def pydantic_ai_history(case: Any, *, system: str | Sequence[str] | None) -> list[ModelMessage]:
    """`case.messages` (or a list of Messages API messages) as pydantic-ai messages, the first
    request opening with today's `system` prompt (or prompts, as the agent's `system_prompt` has them)."""
    messages: Sequence[Mapping[str, Any]] = case if isinstance(case, list) else case.messages
    prompts = [system] if isinstance(system, str) else list(system or ())
    names: dict[str, str] = {}  # tool_use id -> tool name, for the results that answer them
    history: list[ModelMessage] = []
    for message in messages:
        role, content = message.get("role"), message.get("content")
        if role == "assistant":
            history.append(_response(content, names))
        elif role == "user":
            parts = _request_parts(content, names)
            if not history:
                parts = [*(SystemPromptPart(content=prompt) for prompt in prompts), *parts]
            history.append(ModelRequest(parts=parts))
        else:
            raise ValueError(f"a step case message has role {role!r}; expected 'user' or 'assistant'")
    return history


def _response(content: Any, names: dict[str, str]) -> ModelResponse:
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    parts: list[ModelResponsePart] = []
    for block in blocks:
        if block.get("type") == "text":
            parts.append(TextPart(content=block.get("text", "")))
        elif block.get("type") == "tool_use":
            names[block.get("id", "")] = block["name"]
            parts.append(
                ToolCallPart(
                    tool_name=block["name"], args=block.get("input", {}), tool_call_id=block.get("id", "")
                )
            )
    return ModelResponse(parts=parts)


def _request_parts(content: Any, names: dict[str, str]) -> list[ModelRequestPart]:
    if isinstance(content, str):
        return [UserPromptPart(content=content)]
    parts: list[ModelRequestPart] = []
    for block in content:
        if block.get("type") == "tool_result":
            call_id = block.get("tool_use_id", "")
            name = names.get(call_id, "")
            result = block.get("content", "")
            if isinstance(result, list):
                result = "".join(item.get("text", "") for item in result if isinstance(item, Mapping))
            if block.get("is_error"):
                parts.append(RetryPromptPart(content=result, tool_name=name, tool_call_id=call_id))
            else:
                parts.append(ToolReturnPart(tool_name=name, content=result, tool_call_id=call_id))
        elif block.get("type") == "text":
            parts.append(UserPromptPart(content=block.get("text", "")))
    return parts


def pydantic_ai_decision(response: ModelResponse) -> dict[str, Any]:
    """A pydantic-ai ModelResponse as Messages API JSON (content blocks and stop reason)."""
    blocks: list[dict[str, Any]] = []
    for part in response.parts:
        if isinstance(part, TextPart):
            blocks.append({"type": "text", "text": part.content})
        elif isinstance(part, ToolCallPart):
            blocks.append(
                {
                    "type": "tool_use",
                    "name": part.tool_name,
                    "input": part.args_as_dict(),
                    "id": part.tool_call_id,
                }
            )
    calls = any(block["type"] == "tool_use" for block in blocks)
    return {"content": blocks, "stop_reason": "tool_use" if calls else "end_turn"}


def first_decision(agent: Agent[Any, Any], history: list[ModelMessage], **run: Any) -> dict[str, Any]:
    """The agent's first model response on `history` (its tools never run), as a decision. `run`
    goes to `agent.iter` (deps=..., model_settings=...)."""
    last = history[-1] if history else None
    prompt = None
    if isinstance(last, ModelRequest) and all(
        isinstance(part, UserPromptPart | SystemPromptPart) for part in last.parts
    ):
        # A conversation that ends with the user's prompt: the prompt is the run's.
        history = history[:-1]
        prompt = " ".join(str(part.content) for part in last.parts if isinstance(part, UserPromptPart))
        if not history:
            history = [
                ModelRequest(parts=[part for part in last.parts if isinstance(part, SystemPromptPart)])
            ]
    return asyncio.run(_first(agent, prompt, history, run))


async def _first(agent: Agent[Any, Any], prompt: str | None, history: list[ModelMessage], run: Any) -> Any:
    async with agent.iter(prompt, message_history=history, **run) as running:
        async for node in running:
            if Agent.is_call_tools_node(node):
                return pydantic_ai_decision(node.model_response)
    raise RuntimeError("the agent ended without a model response")
