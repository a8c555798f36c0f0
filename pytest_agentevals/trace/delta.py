"""Request bodies stored as deltas against the previous request in the same trace.

An agent's loop resends its whole history every step, so storing each request whole makes a trace
grow with the square of the step count. A delta keeps the length of the common message prefix, the
messages appended after it, and only the top-level fields that changed.
"""

from __future__ import annotations

from typing import Any

Body = dict[str, Any]


def common_prefix(previous: list[Any], current: list[Any]) -> int:
    limit = min(len(previous), len(current))
    index = 0
    while index < limit and previous[index] == current[index]:
        index += 1
    return index


def encode(previous: Body | None, current: Body) -> dict[str, Any] | None:
    """The delta from `previous` to `current`, or None when the body should be stored whole."""
    if previous is None:
        return None
    old_messages = previous.get("messages")
    new_messages = current.get("messages")
    if not isinstance(old_messages, list) or not isinstance(new_messages, list):
        return None
    keep = common_prefix(old_messages, new_messages)
    delta: dict[str, Any] = {"keep": keep, "append": new_messages[keep:]}
    changed = {
        key: value
        for key, value in current.items()
        if key != "messages" and (key not in previous or previous[key] != value)
    }
    if changed:
        delta["set"] = changed
    removed = [key for key in previous if key not in current and key != "messages"]
    if removed:
        delta["unset"] = removed
    return delta


def apply(previous: Body, delta: dict[str, Any]) -> Body:
    """Rebuild a whole body from the previous one and a delta. Raises ValueError if they disagree."""
    keep = delta.get("keep")
    append = delta.get("append")
    old_messages = previous.get("messages")
    if not isinstance(keep, int) or not isinstance(append, list) or not isinstance(old_messages, list):
        raise ValueError("body_delta needs an integer 'keep' and a list 'append'")
    if keep < 0 or keep > len(old_messages):
        raise ValueError(f"body_delta keeps {keep} messages but the previous request had {len(old_messages)}")
    body = {key: value for key, value in previous.items() if key not in delta.get("unset", ())}
    body.update(delta.get("set", {}))
    body["messages"] = old_messages[:keep] + append
    return body
