"""One model call, streamed or not, with the per-step timeout, returned as plain JSON-able content."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import anthropic


@dataclass(frozen=True)
class Turn:
    """What a model call returned: its content blocks as API params, why it stopped, and its tokens."""

    content: list[dict[str, Any]]
    stop_reason: str | None
    prompt_tokens: int  # input + cache creation + cache read: the size of the context sent
    output_tokens: int

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.output_tokens

    @property
    def tool_uses(self) -> list[dict[str, Any]]:
        return [block for block in self.content if block["type"] == "tool_use"]

    @property
    def text(self) -> str:
        return "\n".join(block["text"] for block in self.content if block["type"] == "text")


def call_model(client: anthropic.Anthropic, *, stream: bool, timeout: float, **params: Any) -> Turn:
    """`messages.create` or `messages.stream`; `timeout` bounds each HTTP attempt (the SDK retries)."""
    message: anthropic.types.Message
    if stream:
        with client.messages.stream(**params, timeout=timeout) as events:
            message = events.get_final_message()
    else:
        message = client.messages.create(**params, timeout=timeout)
    usage = message.usage
    prompt = (
        usage.input_tokens + (usage.cache_creation_input_tokens or 0) + (usage.cache_read_input_tokens or 0)
    )
    return Turn(
        [_param(block) for block in message.content], message.stop_reason, prompt, usage.output_tokens
    )


def _param(block: Any) -> dict[str, Any]:
    # Only the fields the API takes back: SDK objects carry extra ones (citations, parsed_output...).
    if block.type == "text":
        return {"type": "text", "text": block.text}
    if block.type == "tool_use":
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": dict(block.input)}
    param: dict[str, Any] = block.to_dict()
    return param
