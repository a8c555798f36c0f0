"""Hermetic replays: while a replay runs, every way out that Python code takes is blocked — TCP, UDP,
name look-ups, the low-level `_socket` module — and the replay fails naming the call and the address.

Each attempt is aimed at a listener that counts what reaches it. The listeners are on loopback, so
the guard is run with loopback disallowed too (`allow=`), or the attempt goes to this host's own
non-loopback address (when it has one).
"""

from __future__ import annotations

import _socket
import contextlib
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_agentevals.errors import UnrecordedRequest
from pytest_agentevals.replay import Replayer
from pytest_agentevals.replay import network as guard

from .. import replay_support as agent

NOTHING_ALLOWED: Callable[[Any], bool] = lambda address: False  # noqa: E731


class UdpListener:
    """A UDP socket that counts the datagrams that reached it before a sentinel sent after the test."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((host, 0))
        self.sock.settimeout(30)  # only against a hang: the sentinel always arrives on this machine
        self.port = self.sock.getsockname()[1]

    def reached(self, host: str = "127.0.0.1") -> list[bytes]:
        assert not guard.blocked()
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender:
            sender.sendto(b"sentinel", (host, self.port))
        got: list[bytes] = []
        while (data := self.sock.recv(1024)) != b"sentinel":
            got.append(data)
        return got


class TcpListener:
    """A TCP socket that counts the connections that reached it before a sentinel connection."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(30)
        self.port = self.sock.getsockname()[1]

    def reached(self) -> int:
        assert not guard.blocked()
        sentinel = socket.create_connection(("127.0.0.1", self.port))
        count = 0
        while True:
            conn, peer = self.sock.accept()
            conn.close()
            if peer == sentinel.getsockname():
                sentinel.close()
                return count
            count += 1


@pytest.fixture
def udp() -> Iterator[UdpListener]:
    listener = UdpListener()
    yield listener
    listener.sock.close()


@pytest.fixture
def tcp() -> Iterator[TcpListener]:
    listener = TcpListener()
    yield listener
    listener.sock.close()


def attempt(call: Callable[[], object]) -> UnrecordedRequest:
    with pytest.raises(UnrecordedRequest) as caught:
        call()
    return caught.value


def test_udp_tcp_and_raw_socket_attempts_reach_nothing(udp: UdpListener, tcp: TcpListener) -> None:
    # The same attempts reach the listeners when nothing is blocked: they can tell.
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.sendto(b"before", ("127.0.0.1", udp.port))
    assert udp.reached() == [b"before"]

    blocked: list[UnrecordedRequest] = []
    unblock = guard.block(blocked.append, allow=NOTHING_ALLOWED)
    try:
        to_udp, to_tcp = ("127.0.0.1", udp.port), ("127.0.0.1", tcp.port)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sendto = attempt(lambda: sock.sendto(b"udp", to_udp))
            attempt(lambda: sock.sendto(b"udp", 0, to_udp))
            attempt(lambda: sock.sendmsg([b"udp"], [], 0, to_udp))
            attempt(lambda: sock.connect(to_udp))
        with socket.socket() as sock:
            attempt(lambda: sock.connect(to_tcp))
            attempt(lambda: sock.connect_ex(to_tcp))
        raw = _socket.socket(_socket.AF_INET, _socket.SOCK_DGRAM)
        raw_sendto = attempt(lambda: raw.sendto(b"raw", to_udp))
        attempt(lambda: raw.sendmsg([b"raw"], [], 0, to_udp))
        raw.close()
        raw_tcp = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
        attempt(lambda: raw_tcp.connect(to_tcp))
        raw_tcp.close()
    finally:
        unblock()
    assert udp.reached() == []
    assert tcp.reached() == 0
    assert len(blocked) == 9  # each attempt told the replay that owns the guard
    assert str(sendto).startswith(f"a datagram to 127.0.0.1:{udp.port} (socket.sendto) during a replay")
    assert str(raw_sendto).startswith(f"a datagram to 127.0.0.1:{udp.port} (socket.sendto)")


def test_name_look_ups_never_reach_the_resolver(monkeypatch: pytest.MonkeyPatch) -> None:
    # The resolver is counted where Python hands over to C: _socket's functions.
    asked: list[tuple[str, Any]] = []
    for name in ("getaddrinfo", "gethostbyname", "gethostbyname_ex", "gethostbyaddr", "getnameinfo"):
        real = getattr(_socket, name)

        def counting(*args: Any, _name: str = name, _real: Any = real, **kwargs: Any) -> Any:
            asked.append((_name, args[0]))
            return _real(*args, **kwargs)

        monkeypatch.setattr(_socket, name, counting)
        if name != "getaddrinfo":
            monkeypatch.setattr(socket, name, counting)
    socket.getaddrinfo("localhost", 80)
    assert asked == [("getaddrinfo", "localhost")]  # unblocked, a look-up reaches the counter
    asked.clear()

    unblock = guard.block()
    try:
        lookup = attempt(lambda: socket.getaddrinfo("example.com", 443))
        attempt(lambda: socket.create_connection(("example.com", 443)))
        attempt(lambda: socket.gethostbyname("example.com"))
        attempt(lambda: socket.gethostbyname_ex("example.com"))
        reverse = attempt(lambda: socket.gethostbyaddr("192.0.2.10"))
        attempt(lambda: socket.getnameinfo(("192.0.2.10", 80), 0))
        literal = attempt(lambda: socket.getaddrinfo("192.0.2.10", 443))
        attempt(lambda: _socket.getaddrinfo("example.com", 53))
        socket.getaddrinfo("localhost", 80)  # loopback names stay allowed
    finally:
        unblock()
    assert asked == [("getaddrinfo", "localhost")]
    assert str(lookup).startswith("a name look-up of example.com:443 (socket.getaddrinfo) during a replay")
    # An address is not a name: what the call did with it, said as such.
    assert str(reverse).startswith("a reverse look-up (the name of an address) of 192.0.2.10 (socket.")
    assert str(literal).startswith("an address resolution (the step before connecting) of 192.0.2.10:443")


def host_address() -> str | None:
    """This host's own non-loopback IPv4 address, if it has one (a UDP connect sends nothing)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))
        except OSError:
            return None
        address = str(probe.getsockname()[0])
    return None if guard.is_loopback((address, 0)) else address


def test_a_replay_blocks_datagrams_to_this_hosts_own_address(tmp_path: Path) -> None:
    address = host_address()
    if address is None:
        pytest.skip("this host has no non-loopback address to aim at")
    listener = UdpListener("0.0.0.0")
    trace = agent.record(tmp_path / "fix.trace.jsonl")
    replay = Replayer(trace, mode="sequential").start()
    # Code under test that swallows the error...
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock, contextlib.suppress(UnrecordedRequest):
        sock.sendto(b"leak", (address, listener.port))
    raw = _socket.socket(_socket.AF_INET, _socket.SOCK_DGRAM)
    with contextlib.suppress(UnrecordedRequest):
        raw.sendto(b"leak", (address, listener.port))
    raw.close()
    with pytest.raises(UnrecordedRequest) as caught:  # ...still fails the replay
        replay.stop()
    assert listener.reached(address) == []
    listener.sock.close()
    assert str(caught.value).startswith(f"a datagram to {address}:{listener.port} (socket.sendto)")
    assert replay.report.failure is not None
    assert "socket.sendto" in replay.report.failure


def test_the_guard_puts_everything_back() -> None:
    before = (_socket.socket, _socket.getaddrinfo, socket.gethostbyname)
    unblock = guard.block()
    assert _socket.socket is not before[0]
    assert "connect" in vars(socket.socket)
    with socket.socket() as sock:
        assert isinstance(sock, socket.SocketType)  # type checks keep working while blocked
    inner = guard.block()
    unblock()
    assert guard.blocked()  # nested: the inner block is still on
    inner()
    assert not guard.blocked()
    assert (_socket.socket, _socket.getaddrinfo, socket.gethostbyname) == before
    assert "connect" not in vars(socket.socket)
    assert "sendto" not in vars(socket.socket)


def test_a_replay_test_that_sends_a_datagram_fails_naming_the_call_and_the_address(
    pytester: pytest.Pytester,
) -> None:
    address = host_address()
    if address is None:
        pytest.skip("this host has no non-loopback address to aim at")
    pytester.makepyfile(replay_support=Path(agent.__file__).read_text())
    agent.record(pytester.path / "cassettes" / "fix.trace.jsonl")
    listener = UdpListener("0.0.0.0")
    pytester.makepyfile(
        test_leak=f"""
        import socket
        import pytest
        import replay_support as agent

        @pytest.mark.replay("fix")
        def test_it(agentevals_replay):
            agent.run_agent(agent.client(), agentevals_replay.task)
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
                try:
                    sock.sendto(b"telemetry", ({address!r}, {listener.port}))
                except Exception:
                    pass  # a telemetry client that never lets an error out
        """
    )
    result = pytester.runpytest("--agentevals-collect-cassettes=false")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [f"E   UnrecordedRequest: a datagram to {address}:{listener.port} (socket.sendto) during a replay*"]
    )
    assert listener.reached(address) == []
    listener.sock.close()


SUBPROCESS_LEAK = """
import socket, sys
with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
    try:
        sock.sendto(b"from a subprocess", (sys.argv[1], int(sys.argv[2])))
    except OSError as exc:
        print("unreachable:", exc)
"""


def test_the_documented_network_namespace_stops_what_python_cannot(tmp_path: Path) -> None:
    """docs/security.md's command: a subprocess, out of the guard's reach, reaches nothing in it."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "security.md").read_text()
    command = re.search(r"^unshare -rn sh -c '(.*) && python -m pytest -m replay'$", text, re.M)
    assert command is not None, "docs/security.md no longer shows the unshare command"
    address = host_address()
    if shutil.which("unshare") is None or address is None:
        pytest.skip("needs unshare and a non-loopback address")
    if subprocess.run(["unshare", "-rn", "true"], check=False, capture_output=True).returncode != 0:
        pytest.skip("unprivileged user namespaces are not allowed here")
    listener = UdpListener("0.0.0.0")
    (tmp_path / "leak.py").write_text(SUBPROCESS_LEAK)
    leak = f"{sys.executable} leak.py {address} {listener.port}"
    # Outside a namespace the subprocess reaches the listener: the listener can tell.
    subprocess.run(leak.split(), cwd=tmp_path, check=True, timeout=120)
    assert listener.reached(address) == [b"from a subprocess"]
    inside = subprocess.run(
        ["unshare", "-rn", "sh", "-c", f"{command.group(1)} && {leak}"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert inside.returncode == 0, inside.stderr
    assert inside.stdout.startswith("unreachable:")
    assert listener.reached(address) == []
    listener.sock.close()
