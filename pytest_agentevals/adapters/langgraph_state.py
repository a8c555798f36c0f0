"""A LangGraph checkpoint's channel values as plain JSON, and back.

LangGraph's own savers store msgpack blobs (base64 in JSON), which the scrubber and `agentevals scan`
cannot read into: a secret in the state would pass both. Here the state is JSON a person can read:
LangChain messages as their `message_to_dict` form under a `"$langchain"` marker, pydantic models as
their JSON dump, anything else JSON-able as it is. A value with no JSON form is refused naming its
field, and a codec declared for that field (`codecs={"field": (to_json, from_json)}`) takes over;
nothing is ever pickled.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.messages import BaseMessage, message_to_dict, messages_from_dict

from ..errors import RecordingError

Codec = tuple[Callable[[Any], Any], Callable[[Any], Any]]
MESSAGE = "message"
MARKER = "$langchain"
# LangGraph's own channels: the edges still to take (`branch:to:NODE`) and its bookkeeping (`__...`).
BRANCH = "branch:to:"


def user_channels(values: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in values.items() if not key.startswith((BRANCH, "__"))}


def next_nodes(values: Mapping[str, Any]) -> list[str]:
    return sorted(key[len(BRANCH) :] for key in values if key.startswith(BRANCH))


def encode(values: Mapping[str, Any], codecs: Mapping[str, Codec]) -> dict[str, Any]:
    """The graph's own channels as plain JSON."""
    return {
        key: codecs[key][0](value) if key in codecs else _encode(value, key)
        for key, value in user_channels(values).items()
    }


def decode(state: Mapping[str, Any], codecs: Mapping[str, Codec]) -> dict[str, Any]:
    """What `encode` made, as LangGraph's channel values again."""
    return {key: codecs[key][1](value) if key in codecs else _decode(value) for key, value in state.items()}


def _encode(value: Any, where: str) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, BaseMessage):
        return {MARKER: MESSAGE, **message_to_dict(value)}
    if isinstance(value, list | tuple):
        return [_encode(item, f"{where}[{index}]") for index, item in enumerate(value)]
    if isinstance(value, dict):
        found: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise _refused(where, f"a dict with a {type(key).__name__} key ({key!r})")
            found[key] = _encode(item, f"{where}.{key}")
        return found
    dump = getattr(value, "model_dump", None)
    if callable(dump):  # a pydantic model
        return dump(mode="json")
    raise _refused(where, f"a {type(value).__module__}.{type(value).__qualname__}")


def _decode(value: Any) -> Any:
    if isinstance(value, list):
        return [_decode(item) for item in value]
    if isinstance(value, dict):
        if value.get(MARKER) == MESSAGE:
            return messages_from_dict([{"type": value.get("type"), "data": value.get("data")}])[0]
        return {key: _decode(item) for key, item in value.items()}
    return value


def _refused(where: str, what: str) -> RecordingError:
    field = where.split(".")[0].split("[")[0]
    return RecordingError(
        f"LangGraph state field {where!r} holds {what}, which has no JSON form, and a checkpoint's "
        f"state is JSON only (it is never pickled): declare a codec for the field, "
        f"RecordedCheckpointer(saver, codecs={{{field!r}: (to_json, from_json)}})"
    )
