"""Peak memory of one hostile input, measured in a fresh process (`ru_maxrss` only grows, so a test
process that already peaked elsewhere could not tell). Run by the tests, and by hand for a figure:

    python -m tests.memory_probe body 300        # a 300 MiB body in each lying framing
    python -m tests.memory_probe snapshot 2048       # a workspace snapshot of a 2 GiB (sparse) file
    python -m tests.memory_probe snapshot 8192 200   # of 8 GiB, the process allowed 200 MB more

Prints one JSON line per case: what was answered, the peak resident memory before and after (MB).
"""

from __future__ import annotations

import json
import resource
import socket
import sys
import tempfile
import threading
from pathlib import Path

MIB = 1024 * 1024

# The framings a client can lie with, each followed by the body's bytes: (name, header lines, the
# first line of the body).
FRAMINGS = (
    ("chunk size -1", "Transfer-Encoding: chunked", b"-1\r\n"),
    ("chunk size -100000", "Transfer-Encoding: chunked", b"-100000\r\n"),
    ("chunk size 0x..", "Transfer-Encoding: chunked", b"0x7fffffff\r\n"),
    ("chunk size 20 hex digits", "Transfer-Encoding: chunked", b"ffffffffffffffffffff\r\n"),
    ("Content-Length 300 MiB", f"Content-Length: {300 * MIB}", b""),
    ("Content-Length and chunked", "Content-Length: 10\r\nTransfer-Encoding: chunked", b"-1\r\n"),
)


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _send(sock: socket.socket, head: bytes, mib: int) -> None:
    block = b"x" * MIB
    try:
        sock.sendall(head)
        for _ in range(mib):
            sock.sendall(block)
        sock.shutdown(socket.SHUT_WR)  # what lets a server reading to the end answer at all
    except OSError:
        pass  # refused and closed: the point


def _answer(sock: socket.socket) -> str:
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except OSError:
        pass
    return received.split(b"\r\n", 1)[0].decode("latin-1")


def body(mib: int) -> None:
    from pytest_agentevals import ModelEndpoint

    with ModelEndpoint(upstream="http://127.0.0.1:9") as endpoint:
        path = endpoint.url.split(str(endpoint.port), 1)[1] + "/v1/messages"
        for name, framing, first in FRAMINGS:
            before = peak_mb()
            sock = socket.create_connection(("127.0.0.1", endpoint.port), timeout=120)
            head = f"POST {path} HTTP/1.1\r\nHost: x\r\n{framing}\r\n\r\n".encode() + first
            sender = threading.Thread(target=_send, args=(sock, head, mib))
            sender.start()
            status = _answer(sock)
            sender.join()
            sock.close()
            after = peak_mb()
            print(
                json.dumps(
                    {
                        "case": name,
                        "mib": mib,
                        "answer": status,
                        "peak_before_mb": round(before, 1),
                        "peak_after_mb": round(after, 1),
                    }
                ),
                flush=True,
            )


def snapshot(mib: int, limit_mb: int | None) -> None:
    """A snapshot of a workspace holding one sparse file of `mib` MiB; with `limit_mb`, under an
    address-space limit of that much above what the process maps already (a file read whole then
    raises MemoryError)."""
    from pytest_agentevals.workspace.snapshot import Snapshotter

    with tempfile.TemporaryDirectory() as folder:
        big = Path(folder) / "big.bin"
        with big.open("wb") as handle:
            handle.truncate(mib * MIB)  # sparse: no disk, and reading it costs no I/O
        snapshotter = Snapshotter(watch=False)
        if limit_mb is not None:
            mapped = int(Path("/proc/self/statm").read_text().split()[0]) * resource.getpagesize()
            limit = mapped + limit_mb * MIB
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        before = peak_mb()
        try:
            entry = snapshotter.snapshot(folder)["files"]["big.bin"]
        except MemoryError:
            entry = {"error": "MemoryError"}
        after = peak_mb()
        case = {"case": f"snapshot of a {mib} MiB file", "entry": entry, "limit_mb": limit_mb}
        print(json.dumps({**case, "peak_before_mb": round(before, 1), "peak_after_mb": round(after, 1)}))


if __name__ == "__main__":
    kind, size = sys.argv[1], int(sys.argv[2])
    if kind == "body":
        body(size)
    else:
        snapshot(size, int(sys.argv[3]) if len(sys.argv) > 3 else None)
