"""The upstream a recording forwards to: one kept-alive connection per endpoint thread, a response read
as it arrives, and each way an upstream can fail named.

`http.client`, not httpx: the recorder patches httpx in this process (an in-process agent's calls),
and a forwarded request must not be recorded twice nor buffered by those patches.
"""

from __future__ import annotations

import http.client
import socket
import threading
from collections.abc import Mapping
from urllib.parse import urlsplit

from ..errors import AgentEvalsError
from .headers import FastResponse

DEFAULT_UPSTREAM = "https://api.anthropic.com"
# As long as the anthropic SDKs wait by default (10 minutes): a long generation is not a timeout.
DEFAULT_TIMEOUT_S = 600.0


class UpstreamFailure(Exception):
    """The upstream could not be reached, timed out, or answered something that is not HTTP."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind  # "unreachable", "timeout" or "garbage"


def failure_of(exc: BaseException, where: str) -> UpstreamFailure:
    """What an exception from `http.client` or a socket means, said about the upstream `where`."""
    if isinstance(exc, TimeoutError | socket.timeout):
        return UpstreamFailure(
            "timeout", f"the upstream {where} did not answer in time ({exc or 'timed out'})"
        )
    if isinstance(exc, http.client.RemoteDisconnected):
        return UpstreamFailure("unreachable", f"the upstream {where} closed the connection without answering")
    if isinstance(exc, http.client.HTTPException):
        return UpstreamFailure(
            "garbage",
            f"the upstream {where} answered something that is not HTTP: {type(exc).__name__}: {exc}",
        )
    return UpstreamFailure("unreachable", f"cannot reach the upstream {where}: {type(exc).__name__}: {exc}")


class _Connection(http.client.HTTPConnection):
    response_class = FastResponse  # the upstream's headers read without the email package

    def connect(self) -> None:
        super().connect()
        _no_delay(self.sock)


class _TLSConnection(http.client.HTTPSConnection):
    response_class = FastResponse

    def connect(self) -> None:
        super().connect()
        _no_delay(self.sock)


def _no_delay(sock: socket.socket) -> None:
    # http.client sends a body over 2,920 bytes after the headers, in a second write: with Nagle's
    # algorithm on, that write waits for the peer's delayed ACK of the first (40 ms a request).
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class Upstream:
    """Where a recording forwards: a base URL (`http://127.0.0.1:8000`, `https://gateway/anthropic`)."""

    def __init__(self, base_url: str, timeout: float = DEFAULT_TIMEOUT_S) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise AgentEvalsError(
                f"{base_url!r} is not an upstream the endpoint can forward to: give an http:// or "
                "https:// base URL (--upstream URL, or ANTHROPIC_BASE_URL)"
            )
        self.base_url = base_url.rstrip("/")
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port
        self._prefix = parts.path.rstrip("/")
        self.timeout = timeout
        self._local = threading.local()

    def url(self, path: str) -> str:
        """The upstream URL of a request for `path` (`/v1/messages?beta=true`)."""
        return self.base_url + path

    def open(
        self, method: str, path: str, headers: Mapping[str, str], body: bytes
    ) -> http.client.HTTPResponse:
        """Send the request and return the response with its body unread. A kept-alive connection the
        upstream closed meanwhile is replaced once, as any HTTP client does; raises UpstreamFailure."""
        for attempt in (0, 1):
            connection, reused = self._connection()
            try:
                connection.request(method, self._prefix + path, body=body, headers=dict(headers))
                return connection.getresponse()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as exc:
                self.drop()
                if not reused or attempt:
                    raise failure_of(exc, self.base_url) from None
            except (OSError, http.client.HTTPException) as exc:
                self.drop()
                raise failure_of(exc, self.base_url) from None
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def _connection(self) -> tuple[http.client.HTTPConnection, bool]:
        connection: http.client.HTTPConnection | None = getattr(self._local, "connection", None)
        if connection is not None:
            return connection, True
        if self._https:
            # ssl is imported only here: a loopback upstream never loads it.
            connection = _TLSConnection(self._host, self._port, timeout=self.timeout)
        else:
            connection = _Connection(self._host, self._port, timeout=self.timeout)
        self._local.connection = connection
        return connection, False

    def drop(self) -> None:
        """Close this thread's connection (after a failure, or a response that was not read whole)."""
        connection = getattr(self._local, "connection", None)
        self._local.connection = None
        if connection is not None:
            connection.close()
