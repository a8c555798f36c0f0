"""vcrpy's request of an httpx exchange, built in one pass over the headers.

vcrpy's httpx stub builds `VcrRequest(method, url, body, real_request.headers)`, whose `HeadersDict`
walks the httpx `Headers` as a Mapping: a name, then `headers[name]`, which scans the whole header
list for it (httpx's `__getitem__`), so a request's twenty-odd headers cost twenty-odd scans, a
fifth of what recording adds to a model call. `make_vcr_request` makes the very same request
(names lowered as httpx's `keys()` gives them, in their order, repeated names joined with ", ", the
values decoded with the headers' own encoding) reading the list once; `patching.patched` puts it in
place of vcrpy's builder while a block is entered, and puts vcrpy's back after.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

_STUBS = "vcr.stubs.httpx_stubs"
_NAME = "_make_vcr_request"

_lock = threading.Lock()
_holds = 0  # blocks holding ours in place; vcrpy's is back when the last one leaves
# While held: the stubs module, vcrpy's builder it had, and vcrpy's two classes ours builds.
_held: tuple[Any, Any, Any, Any] | None = None
_types: tuple[type, ...] = ()  # the httpx families' own Headers classes, found on first use


def _header_types() -> tuple[type, ...]:
    """The httpx families' own Headers classes (exactly these: a subclass may read differently)."""
    found = []
    for name in ("httpx", "httpx2"):
        cls = getattr(sys.modules.get(name), "Headers", None)
        if isinstance(cls, type):
            found.append(cls)
    return tuple(found)


def make_vcr_request(real_request: Any, real_request_body: Any) -> Any:
    """What vcrpy's `_make_vcr_request(real_request, real_request_body)` returns, built faster."""
    global _types
    held = _held
    if held is None:  # a request still in flight when the last block left: vcrpy's is back
        builder = getattr(sys.modules[_STUBS], _NAME)
        if builder is make_vcr_request:  # pragma: no cover - release() puts vcrpy's back first
            raise RuntimeError("agentevals: the vcrpy request builder outlived its patched() block")
        return builder(real_request, real_request_body)
    _, vcrpy_builder, headers_dict, vcr_request = held
    headers = real_request.headers
    if type(headers) not in _types:
        _types = _header_types()
    store = _store(headers) if type(headers) in _types else None
    if store is None:  # not a header list this reads as vcrpy would: vcrpy's own way
        return vcrpy_builder(real_request, real_request_body)
    built = headers_dict.__new__(headers_dict)
    built._store = store
    return vcr_request(real_request.method, str(real_request.url), real_request_body, built)


def _store(headers: Any) -> dict[str, tuple[str, str]] | None:
    """The `_store` of the HeadersDict vcrpy would build from `headers` ({lowered name: (name,
    value)}), or None to leave it to vcrpy's own builder: a header list of another shape, bytes
    its encoding cannot decode, or a name that is not ASCII (httpx's `keys()` lowers it as bytes,
    its `__getitem__` as text, and the two disagree)."""
    entries = getattr(headers, "_list", None)
    if not isinstance(entries, list):
        return None
    chosen = getattr(headers, "_encoding", None)
    try:
        # httpx picks ASCII when every name and value is ASCII, which is what decoding them as ASCII
        # finds out: its `encoding` property would decode them all once more to say so.
        return _decoded(entries, chosen or "ascii", names_checked=chosen is None)
    except UnicodeDecodeError:
        if chosen is not None:
            return None
    try:
        return _decoded(entries, headers.encoding, names_checked=False)
    except UnicodeDecodeError:  # pragma: no cover - httpx's encoding decodes its own headers
        return None


def _decoded(entries: list[Any], encoding: str, names_checked: bool) -> dict[str, tuple[str, str]] | None:
    store: dict[str, tuple[str, str]] = {}
    for entry in entries:
        lower = entry[1]
        if not names_checked and not lower.isascii():
            return None
        name = lower.decode(encoding)
        value = entry[2].decode(encoding)
        known = store.get(name)
        store[name] = (name, value) if known is None else (name, known[1] + ", " + value)
    return store


def hold() -> bool:
    """Put ours in place of vcrpy's builder, once vcrpy's httpx stubs are loaded: True if it is now
    held (to be `release()`d once), False if vcrpy is not loaded yet. Nested blocks, and blocks of
    other threads, share one hold."""
    global _holds, _held
    stubs = sys.modules.get(_STUBS)
    if stubs is None:
        return False
    with _lock:
        if _holds == 0:
            from vcr.request import HeadersDict
            from vcr.request import Request as VcrRequest

            _held = (stubs, getattr(stubs, _NAME), HeadersDict, VcrRequest)
            setattr(stubs, _NAME, make_vcr_request)
        _holds += 1
    return True


def release() -> None:
    """Undo one `hold()`: the last one out puts vcrpy's builder back."""
    global _holds, _held
    with _lock:
        _holds -= 1
        if _holds == 0 and _held is not None:
            stubs, vcrpy_builder = _held[0], _held[1]
            if getattr(stubs, _NAME) is make_vcr_request:
                setattr(stubs, _NAME, vcrpy_builder)
            _held = None
