"""Reading HTTP headers without the email package: what a request waits for on its way through the
endpoint.

`http.server` and `http.client` parse every header block with `email.parser` (about 0.2 ms each on a
loaded machine), and a request through the endpoint is parsed twice more than one sent direct (its
request here, the upstream's answer here): against the simulated server, whose whole answer takes
about a millisecond, that was most of what the endpoint added before the first streamed byte
(benchmarks/endpoint.py). Lines are read as `http.client` reads them (the same bounds: 65,536 bytes a
line, 100 headers) and stored in the same `HTTPMessage`, so every reader of `headers` sees what it saw.
"""

from __future__ import annotations

import http.client
from typing import Any, Protocol


class _Lines(Protocol):
    def readline(self, size: int = ..., /) -> bytes: ...


MAX_LINE = 65536
MAX_HEADERS = 100


def read_headers(fp: _Lines) -> http.client.HTTPMessage:
    """The header block at `fp`, up to its blank line, as an `HTTPMessage`. Raises what
    `http.client.parse_headers` raises: `LineTooLong`, `HTTPException` past 100 headers."""
    message = http.client.HTTPMessage()
    name: str | None = None
    value = ""
    count = 0
    while True:
        line = fp.readline(MAX_LINE + 1)
        if len(line) > MAX_LINE:
            raise http.client.LineTooLong("header line")
        if line in (b"\r\n", b"\n", b""):
            break
        count += 1
        if count > MAX_HEADERS:
            raise http.client.HTTPException(f"got more than {MAX_HEADERS} headers")
        text = line.decode("iso-8859-1")
        if text[:1] in (" ", "\t") and name is not None:  # an obsolete folded line: the value goes on
            value += " " + text.strip()
            continue
        if name is not None:
            message[name] = value
        name, _, rest = text.partition(":")
        name, value = name.strip(), rest.strip()
    if name is not None:
        message[name] = value
    return message


class FastResponse(http.client.HTTPResponse):
    """`HTTPResponse` whose header block is read by `read_headers`; otherwise `begin` as the standard
    library's (Python 3.11 to 3.13): the status, chunked or sized, whether the connection closes."""

    def begin(self) -> None:
        if self.headers is not None:
            return
        this: Any = self  # the private helpers of HTTPResponse are not in its type stubs
        while True:
            version, status, reason = this._read_status()
            if status != http.client.CONTINUE:
                break
            read_headers(self.fp)  # a 100 Continue's headers: skipped
        self.code = self.status = status
        self.reason = reason.strip()
        if version in ("HTTP/1.0", "HTTP/0.9"):
            self.version = 10
        elif version.startswith("HTTP/1."):
            self.version = 11
        else:
            raise http.client.UnknownProtocol(version)
        self.headers = self.msg = read_headers(self.fp)
        encoding = self.headers.get("transfer-encoding")
        this.chunked = bool(encoding) and encoding.lower() == "chunked"
        this.chunk_left = None
        self.will_close = this._check_close()
        this.length = None
        length = self.headers.get("content-length")
        if length and not this.chunked:
            try:
                this.length = int(length)
            except ValueError:
                this.length = None
            else:
                if this.length < 0:
                    this.length = None
        if status in (http.client.NO_CONTENT, http.client.NOT_MODIFIED) or 100 <= status < 200:
            this.length = 0
        if this._method == "HEAD":
            this.length = 0
        if not self.will_close and not this.chunked and this.length is None:
            self.will_close = True
