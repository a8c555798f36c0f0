"""Hermetic replays: while a replay runs, sockets connect to loopback only.

The HTTP clients the recorder patches never reach a socket during a replay; this guard catches
everything else (another HTTP library, a raw socket, a webhook) before it leaves the machine, with
`UnrecordedRequest` naming the address. Loopback (127.0.0.0/8, ::1, localhost) and Unix sockets
stay allowed, so local test servers keep working.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from collections.abc import Callable
from typing import Any

from ...errors import UnrecordedRequest

OnBlocked = Callable[[UnrecordedRequest], object]

_lock = threading.Lock()
_listeners: list[OnBlocked] = []
_original: dict[str, Any] = {}


def is_loopback(address: Any) -> bool:
    if not isinstance(address, tuple) or not address:
        return True  # a Unix socket path (str/bytes) or something that is not an IP address
    host = address[0]
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if not isinstance(host, str):
        return False
    if host.lower() in ("localhost", "localhost.localdomain", "ip6-localhost"):
        return True
    try:
        ip = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False  # a host name other than localhost: resolving it would already leak
    mapped = getattr(ip, "ipv4_mapped", None)
    return bool(ip.is_loopback or (mapped is not None and mapped.is_loopback))


def _blocked(address: Any) -> UnrecordedRequest:
    where = (
        f"{address[0]}:{address[1]}" if isinstance(address, tuple) and len(address) >= 2 else repr(address)
    )
    error = UnrecordedRequest(
        f"a connection to {where} during a replay: the network is blocked while replaying, and only "
        "loopback is allowed. Something reached the network around the recorded HTTP clients; record "
        "that traffic too (through httpx/httpx2 or as a @pytest_agentevals.tool), or talk to a "
        "server on 127.0.0.1"
    )
    for listener in list(_listeners):
        listener(error)
    return error


def _guarded_connect(self: socket.socket, address: Any) -> Any:
    if self.family in (socket.AF_INET, socket.AF_INET6) and not is_loopback(address):
        raise _blocked(address)
    return _original["connect"](self, address)


def _guarded_connect_ex(self: socket.socket, address: Any) -> Any:
    if self.family in (socket.AF_INET, socket.AF_INET6) and not is_loopback(address):
        raise _blocked(address)
    return _original["connect_ex"](self, address)


def block(on_blocked: OnBlocked | None = None) -> Callable[[], None]:
    """Block non-loopback connections until the returned function is called (nestable)."""
    listener: OnBlocked = on_blocked or (lambda error: None)
    with _lock:
        if not _listeners:
            _original["connect"] = socket.socket.connect
            _original["connect_ex"] = socket.socket.connect_ex
            socket.socket.connect = _guarded_connect  # type: ignore[method-assign,assignment]
            socket.socket.connect_ex = _guarded_connect_ex  # type: ignore[method-assign,assignment]
        _listeners.append(listener)

    def unblock() -> None:
        with _lock:
            if listener in _listeners:
                _listeners.remove(listener)
                if not _listeners:
                    socket.socket.connect = _original.pop("connect")  # type: ignore[method-assign]
                    socket.socket.connect_ex = _original.pop("connect_ex")  # type: ignore[method-assign]

    return unblock


def blocked() -> bool:
    """Whether the guard is on in this process."""
    return bool(_listeners)
