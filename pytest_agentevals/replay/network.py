"""Hermetic replays: while a replay runs, Python code reaches loopback only.

The HTTP clients the recorder patches never reach a socket during a replay; this guard catches every
other way out that Python code takes, before anything leaves the machine, with `UnrecordedRequest`
naming the call and the address:
- `socket.socket`'s `connect`, `connect_ex`, `sendto` and `sendmsg` (TCP, UDP) to another address;
- name look-ups of another host: `getaddrinfo` (what `create_connection`, asyncio and every client
  resolve with), `gethostbyname(_ex)`, `gethostbyaddr`, `getnameinfo`;
- the low-level `_socket` module: its look-up functions are replaced, and so is `_socket.socket`,
  by a guarded subclass (the methods of a built-in type cannot be patched).
Loopback (127.0.0.0/8, ::1, localhost) and Unix sockets stay allowed, so local test servers work.

What Python cannot guard from inside: a subprocess, a C extension that opens its own sockets, and
a `_socket.socket` class or function captured before the replay started. docs/security.md says how
to close those (a network namespace for the replay layer).
"""

from __future__ import annotations

import _socket
import ipaddress
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import UnrecordedRequest

OnBlocked = Callable[[UnrecordedRequest], object]
Allow = Callable[[Any], bool]

_INET = (socket.AF_INET, socket.AF_INET6)
_SOCKET_METHODS = ("connect", "connect_ex", "sendto", "sendmsg")
_LOOKUPS = ("getaddrinfo", "gethostbyname", "gethostbyname_ex", "gethostbyaddr", "getnameinfo")
_RAW_SOCKET: Any = _socket.socket


@dataclass(frozen=True, eq=False)
class _Guard:
    on_blocked: OnBlocked
    allow: Allow


_lock = threading.Lock()
_guards: list[_Guard] = []
_original: dict[tuple[Any, str], tuple[bool, Any]] = {}  # (owner, name) -> (owned, original)


def is_loopback(address: Any) -> bool:
    """Whether a socket address (or a (host, port) to look up) stays on this machine."""
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


def _where(address: Any) -> str:
    if isinstance(address, tuple) and len(address) >= 2:
        host = address[0].decode("ascii", "replace") if isinstance(address[0], bytes) else address[0]
        return f"{host}:{address[1]}"
    if isinstance(address, tuple) and address:
        return str(address[0])
    return repr(address)


def _blocked(what: str, call: str, address: Any) -> UnrecordedRequest:
    error = UnrecordedRequest(
        f"{what} {_where(address)} (socket.{call}) during a replay: the network is blocked while "
        "replaying, and only loopback is allowed. Something reached for the network around the recorded "
        "HTTP clients; record that traffic too (through httpx/httpx2 or as a @pytest_agentevals.tool), "
        "or talk to a server on 127.0.0.1"
    )
    for guard in list(_guards):
        guard.on_blocked(error)
    return error


def _check(what: str, call: str, address: Any) -> None:
    if address is None:
        return
    for guard in list(_guards):
        if not guard.allow(address):
            raise _blocked(what, call, address)


def _check_socket(sock: Any, call: str, address: Any) -> None:
    if sock.family in _INET:
        _check("a connection to" if call.startswith("connect") else "a datagram to", call, address)


def _check_host(call: str, host: Any, port: Any = 0) -> None:
    if host not in (None, "", b""):
        _check(_look_up(call, host), call, (host, port) if port else (host,))


def _look_up(call: str, host: Any) -> str:
    """What a resolver call does with `host`, in words: an address has no name to look up."""
    text = host.decode("ascii", "replace") if isinstance(host, bytes) else str(host)
    try:
        ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return "a name look-up of"
    if call in ("gethostbyaddr", "getnameinfo"):
        return "a reverse look-up (the name of an address) of"
    return "an address resolution (the step before connecting) of"


# -- the guarded socket methods, for socket.socket (patched) and _socket.socket (replaced) ----------


def _original_method(name: str) -> Any:
    return _original[(socket.socket, name)][1]


def _connect(self: Any, address: Any) -> Any:
    _check_socket(self, "connect", address)
    return _original_method("connect")(self, address)


def _connect_ex(self: Any, address: Any) -> Any:
    _check_socket(self, "connect_ex", address)
    return _original_method("connect_ex")(self, address)


def _sendto(self: Any, data: Any, *rest: Any) -> Any:
    _check_socket(self, "sendto", rest[-1] if rest else None)
    return _original_method("sendto")(self, data, *rest)


def _sendmsg(self: Any, *args: Any) -> Any:
    _check_socket(self, "sendmsg", args[3] if len(args) > 3 else None)
    return _original_method("sendmsg")(self, *args)


class _GuardedRawSocket(_RAW_SOCKET):  # type: ignore[misc]
    """What `_socket.socket` is while a replay runs: the built-in socket with its ways out checked."""

    __slots__ = ()

    def connect(self, address: Any) -> Any:
        _check_socket(self, "connect", address)
        return super().connect(address)

    def connect_ex(self, address: Any) -> Any:
        _check_socket(self, "connect_ex", address)
        return super().connect_ex(address)

    def sendto(self, data: Any, *rest: Any) -> Any:
        _check_socket(self, "sendto", rest[-1] if rest else None)
        return super().sendto(data, *rest)

    def sendmsg(self, *args: Any) -> Any:
        _check_socket(self, "sendmsg", args[3] if len(args) > 3 else None)
        return super().sendmsg(*args)


def _lookup(name: str) -> Callable[..., Any]:
    def guarded(*args: Any, **kwargs: Any) -> Any:
        if name == "getnameinfo":
            address = args[0] if args else kwargs.get("sockaddr")
            if isinstance(address, tuple) and address:
                _check_host(name, address[0], address[1] if len(address) > 1 else 0)
        else:
            host = args[0] if args else kwargs.get("host")
            port = args[1] if len(args) > 1 else kwargs.get("port", 0)
            _check_host(name, host, port if name == "getaddrinfo" else 0)
        return _original[(_socket, name)][1](*args, **kwargs)

    guarded.__name__ = name
    return guarded


_SOCKET_GUARDS: dict[str, Any] = {
    "connect": _connect,
    "connect_ex": _connect_ex,
    "sendto": _sendto,
    "sendmsg": _sendmsg,
}


def _patches() -> list[tuple[Any, str, Any]]:
    """(owner, attribute, guarded value) of everything the guard replaces."""
    patches: list[tuple[Any, str, Any]] = [
        (socket.socket, name, _SOCKET_GUARDS[name])
        for name in _SOCKET_METHODS
        if hasattr(socket.socket, name)
    ]
    # `SocketType` stays the built-in type, so `isinstance(sock, socket.SocketType)` keeps working.
    patches.append((_socket, "socket", _GuardedRawSocket))
    for name in _LOOKUPS:
        guarded = _lookup(name)
        patches.append((_socket, name, guarded))
        if name != "getaddrinfo":  # socket.getaddrinfo is Python code that calls _socket's
            patches.append((socket, name, guarded))
    return patches


def _install() -> None:
    for owner, name, guarded in _patches():
        owned = name in vars(owner)
        _original[(owner, name)] = (owned, getattr(owner, name))
        setattr(owner, name, guarded)


def _uninstall() -> None:
    for (owner, name), (owned, original) in _original.items():
        if owned:
            setattr(owner, name, original)
        else:
            delattr(owner, name)  # the attribute was inherited: let it be inherited again
    _original.clear()


def block(on_blocked: OnBlocked | None = None, allow: Allow = is_loopback) -> Callable[[], None]:
    """Block the network until the returned function is called (nestable).

    `allow(address)` says which addresses (socket addresses, and (host, port) of a look-up) may be
    reached; loopback by default. While several blocks are on, an address must be allowed by each.
    """
    guard = _Guard(on_blocked or (lambda error: None), allow)
    with _lock:
        if not _guards:
            _install()
        _guards.append(guard)

    def unblock() -> None:
        with _lock:
            if guard in _guards:
                _guards.remove(guard)
                if not _guards:
                    _uninstall()

    return unblock


def blocked() -> bool:
    """Whether the guard is on in this process."""
    return bool(_guards)
