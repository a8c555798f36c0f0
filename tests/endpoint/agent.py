"""A small agent on the anthropic SDK, run as a subprocess (`python agent.py CALLS`) or in-process
(`run(client, calls)`): streamed calls, then one that is not, each growing the history."""

from __future__ import annotations

import sys
from typing import Any

MODEL = "claude-sonnet-4-6"


def run(client: Any, calls: int) -> str:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Fix the failing test."}]
    text = ""
    for number in range(calls):
        if number < calls - 1:
            with client.messages.stream(model=MODEL, max_tokens=200, messages=messages) as stream:
                message = stream.get_final_message()
        else:
            message = client.messages.create(model=MODEL, max_tokens=200, messages=messages)
        text = message.content[0].text
        messages += [
            {"role": "assistant", "content": [block.model_dump() for block in message.content]},
            {"role": "user", "content": f"Go on ({number + 1})."},
        ]
    return text


if __name__ == "__main__":
    import anthropic

    # The key and the base URL come from the environment, as any agent's do.
    print(run(anthropic.Anthropic(max_retries=2), int(sys.argv[1]) if len(sys.argv) > 1 else 3))
