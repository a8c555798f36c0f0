"""A step case's conversation as LangChain messages, and a LangChain answer as a decision.

A case freezes the model request as the Messages API carried it. `langchain_messages` turns its
messages back into what a LangGraph state holds (HumanMessage, AIMessage with its tool calls,
ToolMessage) behind **today's** system prompt, so `ChatAnthropic` sends the request the harness
sends now: an unchanged one is served from the recorded decision, a changed prompt or tool schema
makes the case stale. `langchain_decision` turns the model's AIMessage into the Message JSON a case checks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage


def langchain_messages(case: Any, *, system: str | None) -> list[BaseMessage]:
    """`case.messages` (or a list of Messages API messages) as LangChain messages, after a
    SystemMessage with `system` (today's prompt; None: no system message)."""
    messages: Sequence[Mapping[str, Any]] = case if isinstance(case, list) else case.messages
    converted: list[BaseMessage] = [SystemMessage(content=system)] if system is not None else []
    for message in messages:
        role, content = message.get("role"), message.get("content")
        if role == "assistant":
            converted.append(_assistant(content))
        elif role == "user":
            converted.extend(_user(content))
        else:
            raise ValueError(f"a step case message has role {role!r}; expected 'user' or 'assistant'")
    return converted


def _assistant(content: Any) -> AIMessage:
    if isinstance(content, str):
        return AIMessage(content=content)
    calls = [
        {"name": block["name"], "args": block.get("input", {}), "id": block.get("id"), "type": "tool_call"}
        for block in content
        if block.get("type") == "tool_use"
    ]
    return AIMessage(content=list(content), tool_calls=calls)


def _user(content: Any) -> list[BaseMessage]:
    if isinstance(content, str):
        return [HumanMessage(content=content)]
    found: list[BaseMessage] = []
    rest: list[Any] = []
    for block in content:
        if block.get("type") == "tool_result":
            found.append(
                ToolMessage(
                    content=block.get("content", ""),
                    tool_call_id=block.get("tool_use_id", ""),
                    status="error" if block.get("is_error") else "success",
                )
            )
        else:
            rest.append(block)
    if rest:
        found.append(HumanMessage(content=rest))
    return found


def langchain_decision(message: BaseMessage) -> dict[str, Any]:
    """The model's AIMessage as Messages API JSON (content blocks and stop reason): a decision."""
    content = message.content
    blocks: list[dict[str, Any]] = (
        [{"type": "text", "text": content}] if isinstance(content, str) and content else []
    )
    if isinstance(content, list):
        blocks = [
            dict(block) if isinstance(block, Mapping) else {"type": "text", "text": str(block)}
            for block in content
            if not (isinstance(block, Mapping) and block.get("type") == "tool_use")
        ]
    calls = getattr(message, "tool_calls", []) or []
    blocks += [
        {"type": "tool_use", "name": call["name"], "input": call["args"], "id": call.get("id")}
        for call in calls
    ]
    return {"content": blocks, "stop_reason": "tool_use" if calls else "end_turn"}
