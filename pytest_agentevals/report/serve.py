"""The live console's server: a `Watch` served on loopback (`agentevals report --watch`).

- `GET /` is the page; `GET /update?v=N&have=S0,S1,...` is what changed since version N, as JSON
  (the page's script asks every second), each run's section in its parts, those the page holds
  already (it holds state S0 of run 0's section...) named, not sent again; `GET /lines?run=I` is
  run I's all-steps text, when the reader opens it. Each request first reads what the traces
  gained, under one lock.
- Only 127.0.0.1 is bound, and a request whose Host header names another host is refused (403):
  a web page elsewhere cannot reach the console through a name that resolves to this machine.
- Nothing is cached (`no-store`); the page's policy is the static report's plus `connect-src 'self'`.
- A client that goes away mid-answer (a closed tab) is not an error: it is dropped quietly.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from ..errors import AgentEvalsError
from .live import Watch

HOST = "127.0.0.1"


class ConsoleServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, watch: Watch, port: int = 0) -> None:
        self.watch = watch
        self.lock = threading.Lock()
        super().__init__((HOST, port), _Handler)

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.server_address[1]}/"

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A browser that closes a connection mid-answer is routine; anything else is said briefly.
        import sys

        error = sys.exc_info()[1]
        if isinstance(error, ConnectionError):
            return
        print(f"agentevals report --watch: a request failed: {error!r}", file=sys.stderr)


class _Handler(BaseHTTPRequestHandler):
    server: ConsoleServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # one line per poll would drown the terminal
        return

    def do_GET(self) -> None:  # http.server calls it by this name
        port = self.server.server_address[1]
        if self.headers.get("Host") not in (f"{HOST}:{port}", f"localhost:{port}"):
            self._send(403, "text/plain; charset=utf-8", b"the console answers only on its own address\n")
            return
        parts = urlsplit(self.path)
        watch = self.server.watch
        try:
            with self.server.lock:
                watch.refresh()
                if parts.path == "/":
                    body, kind = watch.page().encode("utf-8", "replace"), "text/html; charset=utf-8"
                elif parts.path == "/update":
                    query = parse_qs(parts.query)
                    since = _int(query.get("v", ["-1"])[0])
                    # The state of each run's section the page holds: parts it has are not sent again.
                    have = [_int(state) for state in query.get("have", [""])[0].split(",") if state]
                    update = watch.update(since, have)
                    body, kind = (
                        json.dumps(update, allow_nan=False).encode("utf-8", "replace"),
                        "application/json",
                    )
                elif parts.path == "/lines":
                    index = _int(parse_qs(parts.query).get("run", ["-1"])[0])
                    if not 0 <= index < len(watch.runs):
                        self._send(404, "text/plain; charset=utf-8", b"no such run\n")
                        return
                    body, kind = json.dumps(watch.lines(index)).encode("utf-8", "replace"), "application/json"
                else:
                    self._send(404, "text/plain; charset=utf-8", b"not found\n")
                    return
        except AgentEvalsError as exc:
            self._send(500, "text/plain; charset=utf-8", f"agentevals report --watch: {exc}\n".encode())
            return
        self._send(200, kind, body)

    def _send(self, status: int, kind: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.end_headers()
        self.wfile.write(body)


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        return -1


__all__ = ["HOST", "ConsoleServer"]
