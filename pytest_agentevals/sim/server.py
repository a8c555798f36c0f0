"""The loopback HTTP server: POST /v1/messages (JSON or SSE) and /v1/messages/count_tokens.

One thread per connection, HTTP/1.1 keep-alive so the SDK's pool reuses connections, Nagle off and
each response written in one piece, so a step costs well under a millisecond of server time. Every
decision that must be deterministic (request numbering, fault draws, the script, the prompt cache,
ids) happens under one lock, in arrival order.
"""

from __future__ import annotations

import contextlib
import json
import random
import select
import selectors
import socket
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal, cast

from ..errors import SimError
from . import wire
from .script import Fault, FaultPlan, Reply, Script, ScriptPlayer, SimRequest
from .usage import PromptCache, Usage, measure, output_tokens

Outcome = Literal[
    "pending",
    "reply",
    "rate_limit",
    "overloaded",
    "error",
    "drop",
    "client_gone",
    "invalid_request",
    "sim_error",
]

_ID_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    413: "Payload Too Large",
    429: "Too Many Requests",
    500: "Internal Server Error",
    529: "Overloaded",
}


@dataclass
class SimExchange:
    """One /v1/messages request and what the server did with it."""

    request: SimRequest
    outcome: Outcome = "pending"
    status: int = 0
    message: dict[str, Any] | None = None
    """The assistant message sent (also when streamed), when the outcome is "reply"."""
    error: str | None = None


class SimServer:
    """A scripted Anthropic Messages API on 127.0.0.1, for the real SDK, sync or async, streamed or not.

    `script` is a list of `Reply`/`Fault` played in order or a policy `(SimRequest) -> Reply | Fault`.
    `seed` makes ids (message, tool_use, request-id) deterministic; `faults` injects seeded faults on
    top of the script. `context_window` rejects longer prompts with the API's 400 ("prompt is too
    long"); `validate` checks requests as the API would (tool_use/tool_result pairing...).

    A script that runs out or a policy that raises answers 500 with the reason (and
    `x-should-retry: false`, so the SDK does not retry it) and is kept in `errors`; with `strict`,
    leaving the `with` block then raises the first of them, so no test passes over a broken script.
    """

    def __init__(
        self,
        script: Script,
        *,
        seed: int = 0,
        faults: FaultPlan | None = None,
        context_window: int | None = None,
        cache_min_tokens: int = 0,
        validate: bool = True,
        strict: bool = True,
    ) -> None:
        self._player = ScriptPlayer(script)
        self.seed = seed
        self.faults = faults
        self.context_window = context_window
        self.validate = validate
        self.strict = strict
        self.exchanges: list[SimExchange] = []
        self.errors: list[SimError] = []
        self.connections = 0
        """How many TCP connections clients opened (a pooled client reuses one across calls)."""
        self._draw = faults.sampler() if faults is not None else None
        self._cache = PromptCache(cache_min_tokens)
        self._ids = random.Random(seed)
        self._lock = threading.Lock()
        self._httpd: _HTTPServer | None = None
        self._serving: threading.Thread | None = None
        self._connections: dict[socket.socket, threading.Thread] = {}
        self._connections_lock = threading.Lock()
        self._stopping = threading.Event()

    # -- life cycle ------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The base URL to give the SDK (`anthropic.Anthropic(base_url=sim.url, ...)`)."""
        if self._httpd is None:
            raise SimError("the sim server is not running; use it as a context manager or call start()")
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def requests(self) -> list[SimRequest]:
        """Every /v1/messages request received, in order, faulted ones and retries included."""
        return [exchange.request for exchange in self.exchanges]

    @property
    def replies(self) -> list[dict[str, Any]]:
        """Every assistant message sent, in order."""
        return [e.message for e in self.exchanges if e.outcome == "reply" and e.message is not None]

    def start(self) -> SimServer:
        if self._httpd is not None:
            raise SimError("the sim server is already running")
        self._stopping.clear()
        self._httpd = _HTTPServer(("127.0.0.1", 0), _Handler, self)
        self._serving = threading.Thread(
            target=self._httpd.serve_until_woken, name="agentevals-sim", daemon=True
        )
        self._serving.start()
        return self

    def stop(self) -> None:
        """Stop serving, close open connections and wait for their threads."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stopping.set()
        httpd.wake()
        if self._serving is not None:
            self._serving.join(timeout=5)
        with self._connections_lock:
            connections = dict(self._connections)
        for connection in connections:
            # Wakes a handler blocked reading the next keep-alive request, or waiting out a slow fault.
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        httpd.server_close()
        for thread in connections.values():
            thread.join(timeout=5)

    def check(self) -> None:
        """Raise the first error the script or policy caused, if any."""
        if self.errors:
            more = f" (and {len(self.errors) - 1} more)" if len(self.errors) > 1 else ""
            raise SimError(f"{self.errors[0]}{more}") from self.errors[0]

    def __enter__(self) -> SimServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
        if exc is None and self.strict:
            self.check()

    # -- requests --------------------------------------------------------------------------------

    def _new_id(self, prefix: str) -> str:
        return prefix + "".join(self._ids.choices(_ID_ALPHABET, k=22))

    def handle(self, handler: _Handler) -> None:
        path = handler.path.split("?", 1)[0]
        headers = {key.lower(): value for key, value in handler.headers.items()}
        try:
            raw = handler.rfile.read(int(headers.get("content-length", "0")))
        except ValueError:
            raw = b""
        if path not in ("/v1/messages", "/v1/messages/count_tokens"):
            return self._send_error(handler, 404, "not_found_error", f"Not found: {handler.command} {path}")
        if handler.command != "POST":
            return self._send_error(
                handler, 405, "invalid_request_error", f"{handler.command} is not allowed here"
            )
        if "x-api-key" not in headers and "authorization" not in headers:
            return self._send_error(handler, 401, "authentication_error", "x-api-key header is required")
        try:
            body = json.loads(raw)
        except ValueError as exc:
            return self._send_error(
                handler, 400, "invalid_request_error", f"the body is not valid JSON: {exc}"
            )
        counting = path == "/v1/messages/count_tokens"
        check = self.validate or not isinstance(body, dict)
        system_messages = wire.allows_system_messages(headers.get("anthropic-beta", ""))
        problem = (
            wire.check_request(body, needs_max_tokens=not counting, system_messages=system_messages)
            if check
            else None
        )
        if counting:
            if problem is not None:
                return self._send_error(handler, 400, "invalid_request_error", problem)
            return self._send(handler, 200, wire.dumps({"input_tokens": measure(body).tokens}))
        self._messages(handler, body, headers, problem)

    def _messages(self, handler: _Handler, body: Any, headers: dict[str, str], problem: str | None) -> None:
        prompt = measure(body) if isinstance(body, dict) else None
        with self._lock:
            request = SimRequest(
                index=len(self.exchanges),
                body=body if isinstance(body, dict) else {},
                headers=headers,
                tokens=prompt.tokens if prompt else 0,
            )
            exchange = SimExchange(request)
            self.exchanges.append(exchange)
            fault = self._draw(request.index) if self._draw is not None else None
        then: Reply | None = None
        if fault is not None and fault.kind == "slow":
            if not self._wait(handler, fault.seconds):
                exchange.outcome = "client_gone"
                handler.close_connection = True
                return
            then = fault.then
            fault = None
        if fault is not None:
            return self._fault(handler, exchange, fault)
        if (
            problem is None
            and prompt is not None
            and self.context_window
            and prompt.tokens > self.context_window
        ):
            problem = f"prompt is too long: {prompt.tokens} tokens > {self.context_window} maximum"
        if problem is not None:
            exchange.outcome, exchange.status, exchange.error = "invalid_request", 400, problem
            return self._send_error(handler, 400, "invalid_request_error", problem)
        answer = then if then is not None else self._consult(exchange)
        if isinstance(answer, Fault) and answer.kind == "slow":
            if not self._wait(handler, answer.seconds):
                exchange.outcome = "client_gone"
                handler.close_connection = True
                return
            answer = answer.then if answer.then is not None else self._consult(exchange, after_slow=True)
        if isinstance(answer, SimError):
            exchange.outcome, exchange.status, exchange.error = "sim_error", 500, str(answer)
            return self._send_error(handler, 500, "api_error", f"agentevals sim: {answer}", retry=False)
        if isinstance(answer, Fault):
            return self._fault(handler, exchange, answer)
        assert prompt is not None
        self._reply(handler, exchange, answer, prompt)

    def fail(self, error: SimError) -> None:
        """Keep an error for `check()` (and for the end of a strict `with` block)."""
        with self._lock:
            self.errors.append(error)

    def _consult(self, exchange: SimExchange, after_slow: bool = False) -> Reply | Fault | SimError:
        with self._lock:
            try:
                answer = self._player.next(exchange.request)
                if after_slow and isinstance(answer, Fault):
                    raise SimError(
                        f"request #{exchange.request.index}: a slow fault without `then` is answered by "
                        f"the script's next item, which is a Fault ({answer.kind}); give Fault.slow a `then`"
                    )
            except SimError as error:
                self.errors.append(error)
                return error
        return answer

    def _wait(self, handler: _Handler, seconds: float) -> bool:
        """Wait `seconds`; False as soon as the client hangs up (its timeout fired) or the server stops."""
        deadline = time.monotonic() + seconds
        sock = handler.connection
        while (remaining := deadline - time.monotonic()) > 0:
            if self._stopping.is_set():
                return False
            try:
                readable, _, _ = select.select([sock], [], [], remaining)
                if readable and not sock.recv(1, socket.MSG_PEEK):
                    return False
            except (OSError, ValueError):
                return False
            if readable:
                # The client sent more (it should not, mid-request): wait without watching the socket.
                return not self._stopping.wait(max(0.0, deadline - time.monotonic()))
        return not self._stopping.is_set()

    def _fault(self, handler: _Handler, exchange: SimExchange, fault: Fault) -> None:
        exchange.outcome, exchange.status = cast(Outcome, fault.kind), fault.status
        if fault.kind == "drop":
            if fault.mid_stream and exchange.request.stream:
                self._send_partial_stream(handler, exchange)
            handler.close_connection = True
            return
        exchange.error = fault.message
        extra = [("retry-after", _seconds(fault.retry_after))] if fault.retry_after is not None else []
        self._send_error(handler, fault.status, fault.error_type, fault.message, extra=extra)

    def _reply(self, handler: _Handler, exchange: SimExchange, reply: Reply, prompt: Any) -> None:
        request = exchange.request
        stops = request.body.get("stop_sequences") or []
        content, cut_reason, cut_sequence = wire.shape_content(
            reply.content, [s for s in stops if isinstance(s, str)], request.max_tokens
        )
        with self._lock:
            usage: Usage = self._cache.use(prompt)
            message_id = self._new_id("msg_01")
            for block in content:
                if block["type"] == "tool_use" and "id" not in block:
                    block["id"] = self._new_id("toolu_01")
            request_id = self._new_id("req_01")
        usage_json = wire.usage_json(usage, output_tokens(content))
        if reply.usage:
            usage_json.update({k: v for k, v in reply.usage.items() if k in usage_json})
        message = wire.message_json(
            message_id,
            reply.model or request.model,
            content,
            cut_reason or reply.resolved_stop_reason,
            cut_sequence if cut_reason else reply.stop_sequence,
            usage_json,
        )
        exchange.outcome, exchange.status, exchange.message = "reply", 200, message
        if request.stream:
            self._send_stream(handler, wire.chunked(wire.sse_events(message)), request_id)
        else:
            self._send(handler, 200, wire.dumps(message), request_id=request_id)

    # -- writing ---------------------------------------------------------------------------------

    def _send_error(
        self,
        handler: _Handler,
        status: int,
        error_type: str,
        message: str,
        extra: Sequence[tuple[str, str]] = (),
        retry: bool | None = None,
    ) -> None:
        with self._lock:
            request_id = self._new_id("req_01")
        headers = list(extra)
        if retry is not None:
            headers.append(("x-should-retry", "true" if retry else "false"))
        self._send(handler, status, wire.error_body(error_type, message, request_id), request_id, headers)

    @staticmethod
    def _head(
        handler: _Handler, status: int, request_id: str | None, headers: Sequence[tuple[str, str]]
    ) -> bytes:
        lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}"]
        if request_id is not None:
            lines.append(f"request-id: {request_id}")
        lines += [f"{name}: {value}" for name, value in headers]
        if handler.close_connection:
            lines.append("Connection: close")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    def _send(
        self,
        handler: _Handler,
        status: int,
        body: bytes,
        request_id: str | None = None,
        headers: Sequence[tuple[str, str]] = (),
    ) -> None:
        head = self._head(
            handler,
            status,
            request_id,
            [("Content-Type", "application/json"), ("Content-Length", str(len(body))), *headers],
        )
        handler.wfile.write(head + body)

    def _send_stream(self, handler: _Handler, body: bytes, request_id: str) -> None:
        head = self._head(
            handler,
            200,
            request_id,
            [
                ("Content-Type", "text/event-stream; charset=utf-8"),
                ("Cache-Control", "no-cache"),
                ("Transfer-Encoding", "chunked"),
            ],
        )
        handler.wfile.write(head + body)

    def _send_partial_stream(self, handler: _Handler, exchange: SimExchange) -> None:
        with self._lock:
            message_id, request_id = self._new_id("msg_01"), self._new_id("req_01")
        message = wire.message_json(
            message_id,
            exchange.request.model,
            [{"type": "text", "text": "The connection will drop in the middle of this sentence"}],
            "end_turn",
            None,
            wire.usage_json(Usage(input_tokens=exchange.request.tokens), 12),
        )
        events = list(wire.sse_events(message))[:5]  # message_start ... the first text delta
        handler.close_connection = True
        self._send_stream(handler, wire.chunked(events, final=False), request_id)


def _seconds(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # SimServer.stop joins the connection threads itself
    # The listen queue: socketserver's 5 resets clients beyond it, and a service's many sessions (or
    # a pool's connections) connect at once (benchmarks/service.py: 64).
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], handler: type[_Handler], sim: SimServer) -> None:
        self.sim = sim
        self._waker, self._wakee = socket.socketpair()
        super().__init__(address, handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client dropping a kept-alive connection resets it while the handler waits for the next
        # request: that is how keep-alive ends, not a fault of the sim. Anything else is printed.
        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            return
        super().handle_error(request, client_address)

    def serve_until_woken(self) -> None:
        """Accept connections until `wake()`: serve_forever, minus its polling, so stopping is immediate."""
        with selectors.DefaultSelector() as selector:
            selector.register(self, selectors.EVENT_READ)
            selector.register(self._wakee, selectors.EVENT_READ)
            while True:
                ready = {key.fileobj for key, _ in selector.select()}
                if self._wakee in ready:
                    return
                self.handle_request()  # the listening socket is ready: this accepts at once

    def wake(self) -> None:
        with contextlib.suppress(OSError):
            self._waker.send(b"x")

    def server_close(self) -> None:
        super().server_close()
        self._waker.close()
        self._wakee.close()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # a response is one write; do not let it wait for an ACK
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        sim = self.server.sim
        with sim._connections_lock:
            sim._connections[self.connection] = threading.current_thread()
            sim.connections += 1

    def finish(self) -> None:
        sim = self.server.sim
        with sim._connections_lock:
            sim._connections.pop(self.connection, None)
        with contextlib.suppress(OSError):
            super().finish()

    def do_POST(self) -> None:
        self._dispatch()

    def do_GET(self) -> None:
        self._dispatch()

    def _dispatch(self) -> None:
        sim = self.server.sim
        try:
            sim.handle(self)
        except (BrokenPipeError, ConnectionResetError):
            # The client gave up (its timeout fired) while we wrote: nothing to answer.
            self.close_connection = True
        except Exception as exc:
            # A reply the sim cannot render (say, a tool input that is not JSON): fail loudly, not
            # with a dropped connection the SDK would retry.
            error = SimError(
                f"the sim failed answering {self.command} {self.path}: {type(exc).__name__}: {exc}"
            )
            sim.fail(error)
            self.close_connection = True
            with contextlib.suppress(OSError):
                sim._send_error(self, 500, "api_error", f"agentevals sim: {error}", retry=False)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # one line on stderr per request would drown a 1,000-step test's output
