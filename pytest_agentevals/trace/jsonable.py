"""What the writer stores for values JSON cannot hold, so that recording never fails a run.

Tool inputs and outputs, checkpoint states and notes are whatever the user's code passes. The
common cases go through `json.dumps` with `jsonable_default`; anything that makes that fail (a
circular object, an integer too long for a decimal string, a `repr` that raises, a key that is not
a string, nesting deeper than JSON can take) or that UTF-8 cannot encode (a lone surrogate, as
`os.listdir` returns for a file name in another encoding) is stored by `to_jsonable` instead: a
faithful copy wherever one exists, and a note in angle brackets where none does. The agent always
gets the real value; only the trace holds the stand-in. docs/trace-format.md lists the forms.

`canonical_json` is the one canonical JSON text of the package (sorted keys, compact, UTF-8 kept):
what request fingerprints, contract hashes, loop detection's actions and history's variant keys are
made of. For a JSON value it is exactly `json.dumps(value, sort_keys=True, separators=(",", ":"),
ensure_ascii=False)`, the bytes every stored hash and key was made from.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

MAX_DEPTH = 200  # deeper than any real tool output; json.dumps itself overflows near 1,000


def jsonable_default(value: Any) -> Any:
    """How `json.dumps` stores what JSON cannot hold (bytes, sets, tuples, paths, other objects)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    if isinstance(value, Path):
        return str(value)
    return repr(value)


def text(value: str) -> str:
    """`value`, with any lone surrogate written as the escape `\\udcXX` (UTF-8 cannot hold one)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-8", errors="backslashreplace").decode("utf-8")
    return value


def _integer(value: int) -> int | str:
    try:
        str(value)
    except ValueError:  # over sys.get_int_max_str_digits() decimal digits
        return f"<integer of {value.bit_length()} bits: {value:#x}>"
    return value


def _key(key: Any) -> str | int | float | bool | None:
    if isinstance(key, str):
        return text(key)
    if key is None or isinstance(key, bool | float):
        return key
    if isinstance(key, int):
        return _integer(key)
    try:
        return text(repr(key))
    except Exception as exc:
        return _describe(key, f"repr() raised {type(exc).__qualname__}")


def _describe(value: Any, why: str) -> str:
    return f"<{type(value).__qualname__}: {why}>"


def to_jsonable(value: Any) -> Any:
    """A copy of `value` that `json.dumps` accepts and UTF-8 can encode, as close to it as JSON allows."""
    return _convert(value, 0, set())


def _convert(value: Any, depth: int, path: set[int]) -> Any:
    if isinstance(value, str):
        return text(value)
    if value is None or isinstance(value, bool | float):
        return value
    if isinstance(value, int):
        return _integer(value)
    if depth >= MAX_DEPTH:
        return _describe(value, f"nested deeper than {MAX_DEPTH} levels, not stored")
    if isinstance(value, dict | list | tuple | set | frozenset):
        if id(value) in path:
            return _describe(value, "circular reference, not stored again")
        path.add(id(value))
        try:
            if isinstance(value, dict):
                return {_key(k): _convert(v, depth + 1, path) for k, v in value.items()}
            return [_convert(item, depth + 1, path) for item in value]
        finally:
            path.discard(id(value))
    try:
        converted = jsonable_default(value)
    except Exception as exc:  # a repr that raises: the value cannot be described by itself
        return _describe(value, f"repr() raised {type(exc).__qualname__}")
    return _convert(converted, depth + 1, path)


# Built once: json.dumps with options builds a new encoder at every call, and the C encoder under it
# (when the interpreter has one) skips a layer of Python per call. Same output either way.
_ENCODER = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=jsonable_default
)
_make_c_encoder = getattr(json.encoder, "c_make_encoder", None)
_C_ENCODER = (
    _make_c_encoder(None, jsonable_default, json.encoder.encode_basestring, None, ":", ",", True, False, True)
    if _make_c_encoder is not None
    else None
)


def canonical_json(value: Any) -> str:
    """Sorted keys, compact, non-ASCII kept; a value JSON cannot hold is written as the trace writer
    stores it (so a value and the same value read back from its trace give the same text)."""
    if type(value) is str:
        return json.encoder.encode_basestring(value)
    if _C_ENCODER is not None:
        try:
            return "".join(_C_ENCODER(value, 0))
        except Exception:
            pass  # a structure holding itself, a huge integer, mixed keys...: the paths below
    try:
        return _ENCODER.encode(value)
    except Exception:
        # What the writer stores instead (a circular object, a huge integer, a key that is not a
        # string, a repr that raises): canonical JSON never fails on what the recorder let through.
        # Read back as the trace holds it (keys become strings), so it sorts and matches the trace.
        return _ENCODER.encode(json.loads(json.dumps(to_jsonable(value), ensure_ascii=False)))
