"""What a client sends the endpoint, checked before anything else reads it: the request's path,
normalized or refused before the guards see it, and its body, read within a bound whatever its
framing says.

A client is any process on the machine, so both are input to distrust: a chunk size of `-1` once
read the stream to its end past the body bound, and `/v1//messages` passed the guards uncounted (it
is no `/v1/messages` to them) while an upstream that merges slashes answered it.
"""

from __future__ import annotations

import re
from email.message import Message
from typing import Protocol

MAX_BODY_BYTES = 256 * 1024 * 1024  # the API takes 32 MB; far above it a body is a mistake
_PIECE = 64 * 1024  # a chunk is read this much at a time: memory follows what arrived, not a claim
_CHUNK_LINE = 1024  # a chunk-size line (its size and extensions)
_TRAILERS = 100  # lines of trailer fields after the last chunk, as many as headers
_HEX = re.compile(rb"[0-9A-Fa-f]{1,16}")  # no sign, no 0x, no underscore: what int(x, 16) also takes
_DIGITS = re.compile(r"[0-9]{1,20}")
# The characters a path of the API is made of (RFC 3986 unreserved and sub-delimiters, `:` `@` `/`).
# A `%` escape, a `;` parameter or a backslash is what a server decodes differently from the guards,
# so it is refused rather than guessed at.
_PATH = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,=:@/]*")


class Refused(ValueError):
    """A request the endpoint will not read: the sentence to answer it with (a 400)."""


class _Reader(Protocol):
    """What the body is read from: the handler's `rfile`."""

    def read(self, size: int = ..., /) -> bytes: ...

    def readline(self, size: int = ..., /) -> bytes: ...


def normalized_path(path: str) -> str:
    """`path` (after the endpoint's token: `/v1/messages?beta=true`) with empty and `.` segments
    dropped, so the guards, the recording and the upstream see one path; raises `Refused` for a
    `..` segment or a character a server may decode differently (a `%` escape, `;`, `\\`)."""
    route, mark, query = path.partition("?")
    if not _PATH.fullmatch(route):
        odd = next(char for char in route if not _PATH.fullmatch(char))
        raise Refused(
            f"the request path {route!r} holds {odd!r}, which a server may read differently from the "
            "endpoint's guards (a % escape, a ; parameter, a backslash): send the path as the API spells it"
        )
    segments = route.split("/")
    if ".." in segments:
        raise Refused(f"the request path {route!r} holds a '..' segment: send the path as the API spells it")
    kept = [segment for segment in segments if segment not in ("", ".")]
    clean = "/" + "/".join(kept)
    if route.endswith("/") and kept:
        clean += "/"
    return clean + mark + query


def read_body(rfile: _Reader, headers: Message, limit: int = MAX_BODY_BYTES) -> bytes:
    """The request's body as its headers frame it, never more than `limit` bytes read into memory;
    raises `Refused` for a framing that is ambiguous (both a length and chunked, two lengths), not
    one this reads (a transfer coding but chunked), malformed, over `limit`, or cut short."""
    encodings = headers.get_all("Transfer-Encoding") or []
    lengths = headers.get_all("Content-Length") or []
    if encodings:
        if lengths:
            raise Refused(
                "the request has both a Content-Length and a Transfer-Encoding, which a server may read "
                "two ways: send one"
            )
        codings = [part.strip().lower() for value in encodings for part in value.split(",") if part.strip()]
        if codings != ["chunked"]:
            raise Refused(
                f"the request's Transfer-Encoding {', '.join(encodings)!r} is not one the endpoint "
                "reads: send it chunked or with a Content-Length"
            )
        return _chunked(rfile, limit)
    if not lengths:
        return b""
    values = {value.strip() for value in lengths}
    if len(values) != 1:
        raise Refused(f"the request has {len(lengths)} Content-Length headers that differ: send one")
    (length,) = values
    if not _DIGITS.fullmatch(length):
        raise Refused(f"the request's Content-Length {length[:40]!r} is not a number of bytes")
    size = int(length)
    if size > limit:
        raise Refused(f"the request's Content-Length {size} is over the endpoint's bound of {limit} bytes")
    body = rfile.read(size)
    if len(body) != size:
        raise Refused(f"the request body ended after {len(body)} of its {size} bytes")
    return body


def _chunked(rfile: _Reader, limit: int) -> bytes:
    parts: list[bytes] = []
    total = 0
    while True:
        line = rfile.readline(_CHUNK_LINE + 1)
        if not line.endswith(b"\n"):
            raise Refused(
                "the request's chunked body is malformed: a chunk-size line is cut short or too long"
            )
        token = line.split(b";", 1)[0].strip(b" \t\r\n")
        if not _HEX.fullmatch(token):
            shown = token[:20].decode("latin-1")
            raise Refused(f"the request's chunked body is malformed: {shown!r} is not a chunk size in hex")
        size = int(token, 16)
        if size == 0:
            _trailers(rfile)
            return b"".join(parts)
        total += size
        if total > limit:
            raise Refused(f"the request's chunked body is over the endpoint's bound of {limit} bytes")
        left = size
        while left:
            piece = rfile.read(min(left, _PIECE))
            if not piece:
                raise Refused(f"the request's chunked body ended inside a chunk, after {total - left} bytes")
            parts.append(piece)
            left -= len(piece)
        if rfile.readline(3) not in (b"\r\n", b"\n"):
            raise Refused("the request's chunked body is malformed: a chunk is longer than its size says")


def _trailers(rfile: _Reader) -> None:
    for _ in range(_TRAILERS):
        line = rfile.readline(_CHUNK_LINE + 1)
        if line in (b"\r\n", b"\n", b""):
            return
    raise Refused(f"the request's chunked body has over {_TRAILERS} trailer lines")
