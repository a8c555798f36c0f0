"""A LangGraph checkpoint's channel values as plain JSON, and back.

LangGraph's own savers store msgpack blobs (base64 in JSON), which the scrubber and `agentevals scan`
cannot read into: a secret in the state would pass both. Here the state is JSON a person can read:
LangChain messages as their `message_to_dict` form under a `"$langchain"` marker, pydantic models as
their JSON dump, anything else JSON-able as it is. A value with no JSON form is refused naming its
field, and a codec declared for that field (`codecs={"field": (to_json, from_json)}`) takes over;
nothing is ever pickled.

Every checkpoint holds the whole history, so encoding each message at every checkpoint made the work
grow with the square of the run's length. A `MessageMemo` keeps each message's encoded form while the
message is unchanged; a message a node edited in place is encoded again (see `MessageMemo`).
"""

from __future__ import annotations

import marshal
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.messages import BaseMessage, message_to_dict, messages_from_dict

from ..errors import RecordingError
from ..trace.delta import Frozen

Codec = tuple[Callable[[Any], Any], Callable[[Any], Any]]
MESSAGE = "message"
MARKER = "$langchain"
# LangGraph's own channels: the edges still to take (`branch:to:NODE`) and its bookkeeping (`__...`).
BRANCH = "branch:to:"


def user_channels(values: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in values.items() if not key.startswith((BRANCH, "__"))}


def next_nodes(values: Mapping[str, Any]) -> list[str]:
    return sorted(key[len(BRANCH) :] for key in values if key.startswith(BRANCH))


def encode(
    values: Mapping[str, Any],
    codecs: Mapping[str, Codec],
    memo: MessageMemo | None = None,
    thread: Any = None,
) -> dict[str, Any]:
    """The graph's own channels as plain JSON. With `memo`, the messages of `thread` (any key: a
    checkpointer's thread and namespace) that are unchanged since its previous checkpoint are not
    encoded again: each comes back as the very object encoded then."""
    visit = None if memo is None else _Visit(memo.entries(thread))
    found = {
        key: codecs[key][0](value) if key in codecs else _encode(value, key, visit)
        for key, value in user_channels(values).items()
    }
    if memo is not None and visit is not None:
        memo.keep(thread, visit.kept)
    return found


def decode(state: Mapping[str, Any], codecs: Mapping[str, Codec]) -> dict[str, Any]:
    """What `encode` made, as LangGraph's channel values again."""
    return {key: codecs[key][1](value) if key in codecs else _decode(value) for key, value in state.items()}


def encode_message(message: BaseMessage) -> dict[str, Any]:
    """One LangChain message as a checkpoint state holds it."""
    return {MARKER: MESSAGE, **message_to_dict(message)}


# A message's encoded form, remembered with the message (held, so its id is not reused meanwhile), its
# class and its fingerprint then.
_Entry = tuple[BaseMessage, type, bytes, Frozen]
_PLAIN = (str, int, float, bool, type(None))


class MessageMemo:
    """Each message's encoded form, per thread, for as long as the message is unchanged.

    What `message_to_dict` makes of a message (a pydantic model) is a function of its class and its
    fields: `__dict__`, and `__pydantic_extra__` for the extra ones. The fingerprint is
    `marshal.dumps` of those fields (format 2, which writes no references, so the same values always
    give the same bytes): C code, a fraction of the encoding's cost, and exact where it is used: it is
    kept only for a message whose fields hold nothing but str, int, float, bool, None, lists, tuples
    and dicts, which marshal writes each with a type code of its own (True, 1 and 1.0 differ; so do
    0.0 and -0.0, and two orders of a dict's keys). Any edit in place of any field, however deep,
    changes the bytes, and the message is encoded again; a message holding anything else (an object
    whose state marshal cannot see) is encoded every time.

    A thread keeps what its latest checkpoint held, so memory follows the state; the MAX_THREADS
    threads last checkpointed are kept.
    """

    MAX_THREADS = 16

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._threads: OrderedDict[Any, dict[int, _Entry]] = OrderedDict()

    def entries(self, thread: Any) -> dict[int, _Entry]:
        with self._lock:
            return self._threads.get(thread, {})

    def keep(self, thread: Any, entries: dict[int, _Entry]) -> None:
        with self._lock:
            self._threads[thread] = entries
            self._threads.move_to_end(thread)
            while len(self._threads) > self.MAX_THREADS:
                self._threads.popitem(last=False)


class _Visit:
    """One encode's use of a memo: the entries of the thread's previous checkpoint, and this one's."""

    __slots__ = ("kept", "seen")

    def __init__(self, seen: dict[int, _Entry]) -> None:
        self.seen = seen
        self.kept: dict[int, _Entry] = {}

    def message(self, message: BaseMessage) -> dict[str, Any]:
        fields = (message.__dict__, message.__pydantic_extra__)
        try:
            fingerprint = marshal.dumps(fields, 2)
        except ValueError:  # a value marshal cannot write: never remembered
            return encode_message(message)
        key = id(message)
        entry = self.seen.get(key)
        if (
            entry is None
            or entry[0] is not message
            or entry[1] is not type(message)
            or entry[2] != fingerprint
        ):
            if not _plain(fields):
                return encode_message(message)
            # Frozen: nothing changes it once made (`model_dump` makes every list and dict anew, the
            # rest is immutable), so the trace writer keeps it itself for the next checkpoint's delta.
            entry = (message, type(message), fingerprint, Frozen(encode_message(message)))
        self.kept[key] = entry
        return entry[3]


def _plain(value: Any) -> bool:
    """Whether `value` holds only what marshal writes with a type of its own (see MessageMemo)."""
    kind = type(value)
    if kind in _PLAIN:
        return True
    if kind is dict:
        return all(type(key) in _PLAIN and _plain(item) for key, item in value.items())
    if kind is list or kind is tuple:
        return all(_plain(item) for item in value)
    return False


def _encode(value: Any, where: str, visit: _Visit | None = None) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, BaseMessage):
        return encode_message(value) if visit is None else visit.message(value)
    if isinstance(value, list | tuple):
        return [
            # A message needs no place named (it is never refused): the common case, kept short.
            visit.message(item)
            if visit is not None and isinstance(item, BaseMessage)
            else _encode(item, f"{where}[{index}]", visit)
            for index, item in enumerate(value)
        ]
    if isinstance(value, dict):
        found: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise _refused(where, f"a dict with a {type(key).__name__} key ({key!r})")
            found[key] = _encode(item, f"{where}.{key}", visit)
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
