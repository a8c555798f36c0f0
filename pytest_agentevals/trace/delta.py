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


def check(previous_length: int | None, delta: Any) -> int:
    """The length of the messages list `delta` leaves, given the previous one's (None: the previous
    body has no list). Constant work: what a reader that does not resolve deltas still checks.
    Raises ValueError if they disagree."""
    if not isinstance(delta, dict):
        raise ValueError("body_delta must be an object")
    keep = delta.get("keep")
    append = delta.get("append")
    if (
        not isinstance(keep, int)
        or isinstance(keep, bool)
        or not isinstance(append, list)
        or previous_length is None
    ):
        raise ValueError("body_delta needs an integer 'keep' and a list 'append'")
    if keep < 0 or keep > previous_length:
        raise ValueError(f"body_delta keeps {keep} messages but the previous request had {previous_length}")
    if not isinstance(delta.get("set", {}), dict) or not isinstance(delta.get("unset", []), list):
        raise ValueError("body_delta's 'set' must be an object and its 'unset' a list")
    return keep + len(append)


def apply(previous: Body, delta: dict[str, Any]) -> Body:
    """Rebuild a whole body from the previous one and a delta. Raises ValueError if they disagree.

    The messages are the previous body's own objects (the list is new, its items shared), so a
    resolved trace holds each message once however many requests resend it."""
    old_messages = previous.get("messages")
    check(len(old_messages) if isinstance(old_messages, list) else None, delta)
    assert isinstance(old_messages, list)
    unset = delta.get("unset", ())
    body = {key: value for key, value in previous.items() if key not in unset}
    body.update(delta.get("set", {}))
    body["messages"] = old_messages[: delta["keep"]] + delta["append"]
    return body
