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
    # A growing list (a history, a checkpoint's list that only appends) keeps all of the previous
    # one: a list comparison settles that in C, each item by `is` first as below, where the loop
    # would take a Python step per item at every call.
    if limit == len(previous) and previous == current[:limit]:
        return limit
    index = 0
    # `is` first: a recorded history's kept messages are the previous request's own objects
    # (recording/bodies.py), each settled without walking it.
    while index < limit and (previous[index] is current[index] or previous[index] == current[index]):
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


# -- checkpoint states -------------------------------------------------------------------------------
#
# A framework's state at every step (a LangGraph graph's messages, say) repeats the previous one but
# for what the step added. A checkpoint whose state shares most of the previous checkpoint's is
# stored as `state_delta`: `set` (keys whose value is new or replaced), `unset` (keys gone), `extend`
# (lists that keep a prefix of the previous one: `{"keep": n, "append": [...]}`) and `patch` (objects
# changed in part: a state delta of their own, at most STATE_DEPTH levels down).

STATE_DEPTH = 4
_STATE_KEYS = frozenset({"set", "unset", "extend", "patch"})


class Frozen(dict[str, Any]):
    """A JSON object in a checkpoint state that its maker never changes once it is handed over (a
    promise, not enforced): the writer keeps it as it is, not a copy, for the next state's delta to
    settle it by `is` when the next state holds it again (the LangGraph adapter's encoded messages,
    one object per message for as long as the message is unchanged). Written as any object is."""

    __slots__ = ()


def relink(copy: Any, original: Any, depth: int = STATE_DEPTH) -> Any:
    """`copy` (a state read back from its JSON) with each `Frozen` object of `original` put back where
    a state delta `depth` levels deep compares by `is`: a value of an object down to `depth` levels,
    and an item of a list there. Changes `copy` in place and returns it."""
    if type(original) is Frozen:
        return original
    if isinstance(original, dict) and isinstance(copy, dict):
        if depth > 0 and len(copy) == len(original):  # not when keys JSON made one ("1" and 1)
            for key, value in original.items():
                if isinstance(value, dict | list | tuple) and type(key) is str and key in copy:
                    copy[key] = relink(copy[key], value, depth - 1)
    elif isinstance(original, list | tuple) and isinstance(copy, list) and len(copy) == len(original):
        for index, item in enumerate(original):
            if type(item) is Frozen:
                copy[index] = item
    return copy


def relink_delta(copy: dict[str, Any], original: dict[str, Any], depth: int = STATE_DEPTH) -> dict[str, Any]:
    """`relink` for a state delta (`copy` its JSON read back): the `Frozen` objects of what it sets,
    appends and patches, so the state it makes holds them as `original` did."""
    for key, value in original.get("set", {}).items():
        if isinstance(value, dict | list | tuple) and type(key) is str:
            copy["set"][key] = relink(copy["set"][key], value, depth - 1)
    for key, grown in original.get("extend", {}).items():
        if type(key) is str:
            relink(copy["extend"][key]["append"], grown["append"], 0)
    for key, inner in original.get("patch", {}).items():
        if type(key) is str:
            relink_delta(copy["patch"][key], inner, depth - 1)
    return copy


def encode_state(previous: dict[str, Any] | None, current: dict[str, Any]) -> dict[str, Any] | None:
    """The delta from the previous checkpoint's state to `current`, or None to store it whole (no
    previous state, or one sharing nothing with it)."""
    if previous is None:
        return None
    found = _state_delta(previous, current, STATE_DEPTH)
    if len(found.get("set", ())) == len(current) and not found.keys() - {"set", "unset"}:
        return None  # nothing shared: whole is as small, and simpler to read
    return found


def _state_delta(previous: dict[str, Any], current: dict[str, Any], depth: int) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in current.items():
        if key not in previous:
            found.setdefault("set", {})[key] = value
            continue
        old = previous[key]
        if old is value or old == value:
            continue
        if isinstance(old, list) and isinstance(value, list):
            keep = common_prefix(old, value)
            if keep:
                found.setdefault("extend", {})[key] = {"keep": keep, "append": value[keep:]}
                continue
        elif isinstance(old, dict) and isinstance(value, dict) and depth > 1:
            inner = _state_delta(old, value, depth - 1)
            if len(inner.get("set", ())) < len(value) or inner.keys() - {"set", "unset"}:
                found.setdefault("patch", {})[key] = inner
                continue
        found.setdefault("set", {})[key] = value
    gone = [key for key in previous if key not in current]
    if gone:
        found["unset"] = gone
    return found


def check_state(delta: Any, depth: int = STATE_DEPTH) -> None:
    """The shape of a state delta (what a reader that does not resolve still checks). Raises
    ValueError naming what is wrong."""
    if not isinstance(delta, dict) or delta.keys() - _STATE_KEYS:
        raise ValueError(f"state_delta must be an object with only {', '.join(sorted(_STATE_KEYS))}")
    if not isinstance(delta.get("set", {}), dict) or not isinstance(delta.get("unset", []), list):
        raise ValueError("state_delta's 'set' must be an object and its 'unset' a list")
    extend = delta.get("extend", {})
    if not isinstance(extend, dict):
        raise ValueError("state_delta's 'extend' must be an object")
    for key, grown in extend.items():
        keep = grown.get("keep") if isinstance(grown, dict) else None
        if (
            not isinstance(keep, int)
            or isinstance(keep, bool)
            or keep < 0
            or not isinstance(grown.get("append"), list)
        ):
            raise ValueError(f"state_delta extends {key!r} without an integer 'keep' and a list 'append'")
    patch = delta.get("patch", {})
    if not isinstance(patch, dict):
        raise ValueError("state_delta's 'patch' must be an object")
    if patch and depth <= 1:
        raise ValueError(f"state_delta patches deeper than {STATE_DEPTH} levels")
    for inner in patch.values():
        check_state(inner, depth - 1)


def apply_state(previous: dict[str, Any], delta: dict[str, Any], depth: int = STATE_DEPTH) -> dict[str, Any]:
    """The whole state from the previous one and a delta. Raises ValueError if they disagree.
    Unchanged values (and the kept items of an extended list) are the previous state's own objects."""
    check_state(delta, depth)
    state = {key: value for key, value in previous.items() if key not in delta.get("unset", ())}
    state.update(delta.get("set", {}))
    for key, grown in delta.get("extend", {}).items():
        old = previous.get(key)
        if not isinstance(old, list) or grown["keep"] > len(old):
            have = f"a list of {len(old)}" if isinstance(old, list) else "no list"
            raise ValueError(
                f"state_delta keeps {grown['keep']} items of {key!r}, where the previous state has {have}"
            )
        state[key] = old[: grown["keep"]] + grown["append"]
    for key, inner in delta.get("patch", {}).items():
        old = previous.get(key)
        if not isinstance(old, dict):
            raise ValueError(f"state_delta patches {key!r}, which is not an object in the previous state")
        state[key] = apply_state(old, inner, depth - 1)
    return state


def state_size(state: Any, depth: int = STATE_DEPTH) -> int:
    """References a resolved state holds down to the depth a delta reaches (a list item is one, an
    object entry three), for the reader's expansion bound."""
    if isinstance(state, list):
        return len(state)
    if not isinstance(state, dict):
        return 1
    size = 3 * len(state)
    if depth > 1:
        size += sum(
            state_size(value, depth - 1) for value in state.values() if isinstance(value, dict | list)
        )
    return size
