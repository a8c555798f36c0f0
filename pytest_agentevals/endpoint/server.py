"""The endpoint: a Messages API on 127.0.0.1 that answers for the run recording or replaying in this
process, for any client process pointed at it with `ANTHROPIC_BASE_URL`.

Each request goes to the run active when it arrives:
- a replay (a running `Replayer`): answered from the recording by the replay engine, with its strict
  matching and divergence report; nothing is forwarded (record mode "new" forwards what the
  recording does not hold, as in-process);
- a recording (the current `Recorder`): its guards decide first, then the request is forwarded to
  the upstream and the answer streamed back as it arrives, and the exchange is written as the
  in-process recorder writes it (the recorder's own `record_http`: scrubbed, deltas, usage, cost).

What the endpoint refuses — a guard's stop, a divergence, no run active — is answered finally, so
every client gives up after one request (`final.py`: a 500 with `x-should-retry: false` to the
anthropic SDKs and the Claude Code CLI, a 403 with it to litellm and the rest); once a guard stopped
the run, every later request is refused before anything else is looked at. The CLI re-sends a 400
with fewer betas (its beta fallback: up to six requests). A request it cannot parse is a 400 with
`x-should-retry: false`.
An upstream that cannot be reached, times out or answers something that is not HTTP is answered
502 (504 for a timeout), which a client retries as it would a failing API; one that drops the
connection mid-answer drops the client's mid-answer too. Every such exchange is in the trace.

The URL holds a token of this endpoint's own (`/agentevals-<token>`): a client of another run's
endpoint (a port reused) gets a 404, never this run's answers. Each run open side by side in this
process may have a route of its own (`route()`, `routes.py`): its requests go to that run alone.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import secrets
import shlex
import socket
import threading
import time
from collections.abc import Iterator, Mapping
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any

from ..errors import AgentEvalsError, AmbiguousRun, RecordingError
from ..recording import active
from ..recording.providers.anthropic import is_messages_call
from ..recording.recorder import Recorder, current_recorder
from .credentials import without_credentials
from .final import final_answer
from .headers import read_headers
from .inbound import Refused, normalized_path, read_body
from .routes import Route, Routes
from .upstream import DEFAULT_TIMEOUT_S, DEFAULT_UPSTREAM, Upstream, UpstreamFailure, failure_of
from .wire import HOP_BY_HOP, Request, error_body, header_items, vcr_response

# What a replaying child is given for a key: no real key reaches a replay, and the SDKs refuse to
# start without one. Not a key's shape, so no scanner mistakes it for one.
PLACEHOLDER_KEY = "agentevals-replay-placeholder"
_READ = 64 * 1024


# The running endpoints of this process: URL -> where each forwards.
_RUNNING: dict[str, str] = {}


class ModelEndpoint:
    """A loopback Messages API for client processes; a context manager (or `start()`/`stop()`).

    `url` is the base URL to give a client (`ANTHROPIC_BASE_URL`), `env` a whole environment for a
    subprocess (this one's, with `ANTHROPIC_BASE_URL` pointing here, loopback kept off any proxy, and
    a placeholder key in place of any credential while a replay runs). `upstream` is where a
    recording forwards: by default what `ANTHROPIC_BASE_URL` said when the endpoint was made, else the
    real API. `requests` counts what clients sent, `forwarded` what went upstream. With
    `checkpoints` (the client's working folder), a recording gets a checkpoint at every
    `checkpoint_every`-th model request, before it is forwarded: the request's conversation as the
    state, that folder as the workspace (`checkpoint_requests`; docs/endpoint.md).
    """

    def __init__(
        self,
        *,
        upstream: str | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        environ: Mapping[str, str] | None = None,
        checkpoints: str | Path | None = None,
        checkpoint_every: int = 1,
    ) -> None:
        self._environ = dict(os.environ if environ is None else environ)
        self._checkpoints: Checkpoints | None = None
        if checkpoints is not None:
            self.checkpoint_requests(checkpoints, every=checkpoint_every)
        base = (upstream or self._environ.get("ANTHROPIC_BASE_URL") or DEFAULT_UPSTREAM).rstrip("/")
        # An endpoint of this process as the upstream (a harness under `agentevals record agent.py`
        # starting one of its own): forward where that one forwards, so nothing is recorded twice.
        self.upstream = Upstream(_RUNNING.get(base, base), timeout)
        self.token = secrets.token_urlsafe(16)
        self.routes = Routes()  # the endpoint's own URL and each run's (routes.py)
        self.requests = 0
        self.forwarded = 0
        self._lock = threading.Lock()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None
        self._replay_prefixes: dict[int, str] = {}
        # The settings the Claude Code profile pins, in every child's environment: only that client
        # reads them, and a recording and its replay then ask the same. A value the caller set wins.
        from ..replay import CLAUDE_CODE

        self.pinned = {name: value for name, value in CLAUDE_CODE.env.items() if name not in self._environ}
        self.kept = {name: self._environ[name] for name in CLAUDE_CODE.env if name in self._environ}
        self._looked_at: Recorder | None = None  # the recording whose client was identified

    def checkpoint_requests(self, workspace: str | Path, *, every: int = 1) -> ModelEndpoint:
        """From now on, while a run records, write a checkpoint at every `every`-th model request
        before it is forwarded: its state the conversation the client sent (`conversation_state`),
        its workspace a snapshot of `workspace` (the client's working folder). `agentevals resume
        extract` makes a fixture of one; a resumed leg boots the client from its state."""
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise RecordingError(f"checkpoint every {every!r} requests: give a whole number, at least 1")
        self._checkpoints = Checkpoints(Path(workspace), every)
        return self

    # -- life cycle ------------------------------------------------------------------------------

    def start(self) -> ModelEndpoint:
        if self._httpd is not None:
            raise RecordingError("the model endpoint is already running")
        self._httpd = _Server(self)
        # A short poll: stop() waits for it, and every run (a test, a command) stops one endpoint.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.05,), name="agentevals-endpoint", daemon=True
        )
        self._thread.start()
        self.routes.add(self.token)  # the endpoint's own URL: the runs of the context that started it
        active.push_endpoint(self._origin)
        _RUNNING[self.url] = self.upstream.base_url
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        url = f"http://127.0.0.1:{httpd.server_address[1]}/agentevals-{self.token}"
        active.pop_endpoint(f"http://127.0.0.1:{httpd.server_address[1]}")
        self.routes.clear()
        _RUNNING.pop(url, None)
        httpd.shutdown()
        httpd.close_connections()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> ModelEndpoint:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -- what a client is given ------------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RecordingError("the model endpoint is not running; use it as a context manager")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """The base URL for the client: `http://127.0.0.1:PORT/agentevals-TOKEN`."""
        return f"http://127.0.0.1:{self.port}/agentevals-{self.token}"

    @property
    def _origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def route(self) -> Route:
        """A route of its own for the run open in this context (a session of a service, one of several
        concurrent tests): its `url` and `env` take a subprocess's requests into this run alone,
        whichever thread serves them (docs/service.md). Close it, or stop the endpoint, to refuse them."""
        token = self.routes.add()
        url = f"{self._origin}/agentevals-{token}"
        return Route(token, url, {**self.env, "ANTHROPIC_BASE_URL": url}, self.routes)

    @property
    def replaying(self) -> bool:
        """Whether a replay that forwards nothing is active (then `env` holds a placeholder key)."""
        replayer = active.replayer()
        return replayer is not None and not getattr(replayer, "allow_live", False)

    @property
    def env(self) -> dict[str, str]:
        """A subprocess's whole environment, pointed at this endpoint."""
        env = {**self._environ, **self.pinned}
        env["ANTHROPIC_BASE_URL"] = self.url
        for name in ("NO_PROXY", "no_proxy"):
            kept = [part for part in env.get(name, "").split(",") if part.strip()]
            env[name] = ",".join([*kept, *(h for h in ("127.0.0.1", "localhost") if h not in kept)])
        if self.replaying:
            # No credential of any kind reaches a replayed child (endpoint/credentials.py): the SDKs
            # need a key to start, so a placeholder stands in for the Anthropic one.
            env, _ = without_credentials(env)
            env["ANTHROPIC_API_KEY"] = PLACEHOLDER_KEY
        return env

    # -- requests ----------------------------------------------------------------------------------

    def handle(self, handler: _Handler) -> None:
        with self._lock:
            self.requests += 1
        found = self.routes.match(handler.path)
        if found is None:
            handler.close_connection = True
            _refuse(
                handler,
                404,
                "not_found_error",
                "agentevals endpoint: this URL is not this run's endpoint (each run's endpoint has a "
                "token of its own in its URL): point the client at ANTHROPIC_BASE_URL as the run gave it",
            )
            return
        rest, frames = found
        with active.entered(frames):  # the route's run, whichever thread serves it
            try:
                self._handle(handler, rest)
            except AmbiguousRun as exc:
                _refuse_final(
                    handler,
                    f"agentevals endpoint: {exc}; or give each run's "
                    "subprocess its own route (ModelEndpoint.route())",
                )

    def _handle(self, handler: _Handler, rest: str) -> None:
        try:
            rest = normalized_path(rest)  # before the guards: they count what the upstream answers
            body = read_body(handler.rfile, handler.headers)
        except Refused as exc:
            handler.close_connection = True
            _refuse(handler, 400, "invalid_request_error", f"agentevals endpoint: {exc}")
            return
        headers = {name: value for name, value in handler.headers.items()}
        replayer = active.replayer()
        recorder = current_recorder()
        if replayer is not None:
            with recorder.endpoint_exchange() if recorder is not None else contextlib.nullcontext():
                self._replay(handler, replayer, recorder, rest, headers, body)
        elif recorder is not None:
            # The answer goes out before it is recorded: a run stopping meanwhile waits for it.
            with recorder.endpoint_exchange():
                self._record(handler, recorder, rest, headers, body)
        else:
            _refuse_final(
                handler,
                "agentevals endpoint: no run is being recorded or replayed in the process that serves "
                "this endpoint, so nothing may answer (and nothing goes to the network unrecorded): "
                "use it inside a recording or a replay (agentevals record/replay, a replay, resume or "
                "marathon test, or the agentevals_recorder fixture)",
            )

    # -- replay ------------------------------------------------------------------------------------

    def _replay(
        self,
        handler: _Handler,
        replayer: Any,
        recorder: Recorder | None,
        rest: str,
        headers: dict[str, str],
        body: bytes,
    ) -> None:
        request = Request(
            handler.command, f"http://127.0.0.1:{self.port}{self._prefix_of(replayer)}{rest}", headers, body
        )
        if recorder is not None and recorder.guards and not _guarded(handler, recorder, request):
            return
        try:
            served = replayer.answer(request)
        except AgentEvalsError as exc:
            _refuse_final(handler, f"agentevals replay: {type(exc).__name__}: {exc}")
            return
        if served is None:  # record mode "new": what the recording lacks goes live, recorded
            self._forward(
                handler, recorder, Request(handler.command, self.upstream.url(rest), headers, body), rest
            )
            return
        status = served.get("status", {})
        payload = served.get("body", {}).get("string") or b""
        if isinstance(payload, str):
            payload = payload.encode("utf-8")
        handler.send_response_only(int(status.get("code", 200)), status.get("message") or None)
        for name, value in header_items(served.get("headers", {})):
            if name.lower() not in HOP_BY_HOP:
                handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)

    def _prefix_of(self, replayer: Any) -> str:
        """The path the recording's requests had before `/v1/` (a gateway's `/anthropic`), so a run
        recorded through a prefixed upstream replays through the endpoint: usually empty."""
        key = id(replayer)
        if key not in self._replay_prefixes:
            prefix = ""
            for interaction in replayer.cassette.interactions:
                where = interaction.canonical.get("path", "").split("?", 1)[0]
                if "/v1/" in where:
                    prefix = where[: where.index("/v1/")]
                    break
            self._replay_prefixes = {key: prefix}
        return self._replay_prefixes[key]

    # -- record ------------------------------------------------------------------------------------

    def _record(
        self, handler: _Handler, recorder: Recorder, rest: str, headers: dict[str, str], body: bytes
    ) -> None:
        request = Request(handler.command, self.upstream.url(rest), headers, body)
        if recorder.guarding.halt is not None and not _guarded(handler, recorder, request):
            return  # stopped already: refused before the body is looked at
        problem = _unparsable(handler.command, rest, headers, body)
        if problem is not None:
            message = f"agentevals endpoint: {problem}"
            payload = error_body("invalid_request_error", message)
            _send_error(handler, 400, payload)
            response = vcr_response(400, "Bad Request", _error_headers(payload), payload)
            recorder.record_http(request, response, 0.0, failure=message)
            return
        self._state_pins(recorder, headers, body)
        if recorder.guards and not _guarded(handler, recorder, request):
            return
        if self._checkpoints is not None:
            self._checkpoints.before(recorder, handler.command, rest, body)
        self._forward(handler, recorder, request, rest)

    def _state_pins(self, recorder: Recorder, headers: Mapping[str, str], body: bytes) -> None:
        """At a recording's first request, when its client is one a profile covers: a note in the trace
        naming what the endpoint pinned, what the caller had set itself, and the flags its command
        carries. The first request decides, so the hot path parses no body twice after it."""
        with self._lock:
            if self._looked_at is recorder:
                return
            self._looked_at = recorder
        from ..replay import client_of, profile_for

        try:
            parsed = json.loads(body)
        except ValueError:
            return  # recorded as it came; a client that sends no JSON is no profile's
        client = client_of(headers, parsed)
        profile = profile_for(client)
        if client is None or profile is None:
            return
        pinned = ", ".join(f"{name}={value}" for name, value in self.pinned.items()) or "nothing"
        kept = ", ".join(f"{name}={value}" for name, value in self.kept.items()) or "nothing"
        recorder.emit(
            "note",
            message=(
                f"endpoint: {client.name} {client.version_text} recorded through the {profile.name} "
                f"profile; pinned in its environment: {pinned}; left as the caller set them: {kept}; "
                f"flags its command carries itself: {shlex.join(profile.flags)}"
            ),
            data={"pinned": dict(self.pinned), "kept": dict(self.kept), "flags": list(profile.flags)},
        )

    def _forward(self, handler: _Handler, recorder: Recorder | None, request: Request, rest: str) -> None:
        """Send the request upstream and stream the answer back as it arrives, then record it whole."""
        started = time.perf_counter()
        outgoing = {name: value for name, value in request.headers.items() if name.lower() not in HOP_BY_HOP}
        with self._lock:
            self.forwarded += 1
        try:
            response = self.upstream.open(request.method, rest, outgoing, request.body)
        except UpstreamFailure as refused:
            status = 504 if refused.kind == "timeout" else 502
            message = f"agentevals endpoint: {refused}"
            payload = error_body("timeout_error" if status == 504 else "api_error", message)
            with contextlib.suppress(OSError):
                _send_error(handler, status, payload, retry=None)
            if recorder is not None:
                reason = "Gateway Timeout" if status == 504 else "Bad Gateway"
                recorder.record_http(
                    request,
                    vcr_response(status, reason, _error_headers(payload), payload),
                    time.perf_counter() - started,
                    failure=message,
                )
            return
        status, reason, headers = response.status, response.reason, response.getheaders()
        length = response.getheader("content-length")
        chunked = length is None or bool(getattr(response, "chunked", False))
        client_gone: str | None = None
        # The status line and headers go out with the first piece of the body, in one write: a write
        # (a system call, a TCP segment) fewer before the client's first byte. A client reads the
        # headers and then waits for the body anyway; the API sends its headers with the first event.
        lines = [f"{handler.protocol_version} {status} {reason}\r\n"]
        lines += [f"{name}: {value}\r\n" for name, value in headers if name.lower() not in HOP_BY_HOP]
        lines.append("Transfer-Encoding: chunked\r\n" if chunked else f"Content-Length: {length}\r\n")
        head: bytes | None = ("".join(lines) + "\r\n").encode("latin-1", "strict")
        parts: list[bytes] = []
        failure: str | None = None
        while True:
            try:
                chunk = response.read1(_READ)
            except (OSError, http.client.HTTPException) as exc:  # IncompleteRead, a reset, a timeout
                failure = (
                    f"agentevals endpoint: the answer was cut short after {sum(map(len, parts))} bytes: "
                    f"{failure_of(exc, self.upstream.base_url)}"
                )
                break
            if not chunk:
                break
            parts.append(chunk)
            if client_gone is None:
                piece = b"%x\r\n%s\r\n" % (len(chunk), chunk) if chunked else chunk
                try:
                    handler.wfile.write(piece if head is None else head + piece)
                except OSError:
                    client_gone = "the client closed the connection before the answer ended"
                head = None
        ending = b"0\r\n\r\n" if chunked and failure is None else b""
        if client_gone is None and (head is not None or ending):
            try:  # the headers of an empty answer, the end of a chunked one
                handler.wfile.write((head or b"") + ending)
            except OSError:
                client_gone = "the client closed the connection before the answer ended"
        if failure is not None:
            self.upstream.drop()
            handler.close_connection = True  # the client sees the answer cut short, as the upstream cut it
        else:
            # Read to its end: done with. `read1` never marks a sized body done (a chunked one it
            # does), and the kept-alive connection then refused the thread's next request
            # (ResponseNotReady: a 502, which the SDKs retried on a new connection).
            response.close()
        if client_gone is not None:
            handler.close_connection = True
        if recorder is not None:
            recorder.record_http(
                request,
                vcr_response(status, reason, headers, b"".join(parts)),
                time.perf_counter() - started,
                failure=failure or client_gone,
            )


# What a checkpoint's state keeps of a request: the conversation and what shapes the next answer.
# Not `metadata` (session ids) nor `stream` (how the client reads, not what it asks).
CONVERSATION_KEYS = (
    "model",
    "system",
    "tools",
    "tool_choice",
    "messages",
    "max_tokens",
    "temperature",
    "top_p",
    "top_k",
    "stop_sequences",
    "thinking",
)
STATE_FORMAT = "agentevals-endpoint/1"


def conversation_state(body: Mapping[str, Any], route: str) -> dict[str, Any]:
    """A checkpoint's state for a model request: `{"format", "route", "request": {...}}`, the request
    as the client sent it less its metadata. A client resumed from it sends `request` again."""
    request = {key: body[key] for key in CONVERSATION_KEYS if key in body}
    return {"format": STATE_FORMAT, "route": route, "request": request}


class Checkpoints:
    """The endpoint's checkpoints of a recording: at every `every`-th successful step, one checkpoint
    before the step's request is forwarded (a retried request adds none)."""

    def __init__(self, workspace: Path, every: int) -> None:
        self.workspace = workspace
        self.every = every
        self._lock = threading.Lock()
        self._last: tuple[int, int] | None = None  # (id of the recorder, step) checkpointed last

    def before(self, recorder: Recorder, method: str, rest: str, body: bytes) -> None:
        route = rest.split("?", 1)[0].rstrip("/")
        if not is_messages_call(method, route):
            return  # count_tokens and the rest: no step of the conversation
        with self._lock:
            step = recorder.steps
            if step % self.every or self._last == (id(recorder), step):
                return
            try:
                parsed = json.loads(body)
            except ValueError:
                return  # the upstream answers it with its error; there is no conversation to keep
            if not isinstance(parsed, dict):
                return
            self._last = (id(recorder), step)
            snapshot = recorder.snapshots.snapshot(self.workspace)
            with contextlib.suppress(ValueError, OSError):  # the run's own trace is not the client's work
                own = recorder.path.resolve().relative_to(self.workspace.resolve()).as_posix()
                snapshot["files"].pop(own, None)
            recorder.count("checkpoints")
            recorder.emit(
                "checkpoint",
                sync=True,
                state=conversation_state(parsed, route),
                name=f"endpoint request {step + 1}",
                workspace=snapshot,
            )


def _guarded(handler: _Handler, recorder: Recorder, request: Request) -> bool:
    """Ask the run's guards about a request; False (answered already) when they stop the run."""
    try:
        recorder.guarding.before_call(request)
    except AgentEvalsError as exc:
        _refuse_final(handler, f"agentevals: {exc}")
        return False
    return True


def _unparsable(method: str, path: str, headers: Mapping[str, str], body: bytes) -> str | None:
    """Why a Messages API request cannot be read (its body is not a JSON object), or None."""
    route = path.split("?", 1)[0].rstrip("/")
    if method.upper() != "POST" or not (
        is_messages_call(method, route) or route.endswith("/v1/messages/count_tokens")
    ):
        return None
    encoding = next((v for k, v in headers.items() if k.lower() == "content-encoding"), "")
    if encoding.strip().lower() not in ("", "identity"):
        return None  # stored decoded by the recorder; the upstream judges it
    try:
        parsed = json.loads(body) if body else None
    except ValueError as exc:
        return f"the request body of POST {route} is not JSON ({exc}); nothing was forwarded"
    if not isinstance(parsed, dict):
        return f"the request body of POST {route} is not a JSON object; nothing was forwarded"
    return None


def _error_headers(payload: bytes, retry: bool | None = False) -> list[tuple[str, str]]:
    headers = [("content-type", "application/json"), ("content-length", str(len(payload)))]
    if retry is not None:
        headers.append(("x-should-retry", "true" if retry else "false"))
    return headers


def _send_error(handler: _Handler, status: int, payload: bytes, retry: bool | None = False) -> None:
    handler.send_response_only(status)
    for name, value in _error_headers(payload, retry):
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(payload)


def _refuse_final(handler: _Handler, message: str) -> None:
    """A refusal for good, in the form the client that sent the request takes as final (`final.py`)."""
    status, error_type = final_answer(handler.headers.get("User-Agent", ""))
    _refuse(handler, status, error_type, message)


def _refuse(handler: _Handler, status: int, error_type: str, message: str) -> None:
    """A final answer: an error body with `x-should-retry: false`, which no client retries."""
    _send_error(handler, status, error_body(error_type, message), retry=False)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # stop() closes the open connections itself
    request_queue_size = 128  # a client's pool may open many connections at once

    def __init__(self, endpoint: ModelEndpoint) -> None:
        self.endpoint = endpoint
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    def close_connections(self) -> None:
        with self.connections_lock:
            open_now = list(self.connections)
        for connection in open_now:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # a streamed event goes out at once
    server: _Server

    def setup(self) -> None:
        super().setup()
        with self.server.connections_lock:
            self.server.connections.add(self.connection)

    def finish(self) -> None:
        with self.server.connections_lock:
            self.server.connections.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def parse_request(self) -> bool:
        """`BaseHTTPRequestHandler.parse_request` for HTTP/1.x, its headers read by `read_headers`
        (the email package's parser was a fifth of what a request waited for here)."""
        self.command = None  # type: ignore[assignment]  # as the standard library's, until parsed
        self.request_version = self.default_request_version
        self.close_connection = True
        raw: bytes = getattr(self, "raw_requestline", b"")  # set by handle_one_request
        requestline = str(raw, "iso-8859-1").rstrip("\r\n")
        self.requestline = requestline
        words = requestline.split()
        if not words:
            return False
        if len(words) != 3:
            self.send_error(HTTPStatus.BAD_REQUEST, f"Bad request syntax ({requestline!r})")
            return False
        command, path, version = words
        major, dot, minor = version.removeprefix("HTTP/").partition(".")
        if (
            not version.startswith("HTTP/")
            or not dot
            or not (major.isdigit() and minor.isdigit())
            or len(major) > 10
            or len(minor) > 10
        ):
            self.send_error(HTTPStatus.BAD_REQUEST, f"Bad request version ({version!r})")
            return False
        number = (int(major), int(minor))
        if number >= (2, 0):
            self.send_error(HTTPStatus.HTTP_VERSION_NOT_SUPPORTED, f"Invalid HTTP version ({major}.{minor})")
            return False
        if number >= (1, 1):
            self.close_connection = False
        self.request_version = version
        self.command, self.path = command, "/" + path.lstrip("/") if path.startswith("//") else path
        try:
            self.headers = read_headers(self.rfile)
        except http.client.LineTooLong as err:
            self.send_error(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "Line too long", str(err))
            return False
        except http.client.HTTPException as err:
            self.send_error(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "Too many headers", str(err))
            return False
        connection = self.headers.get("Connection", "").lower()
        if connection == "close":
            self.close_connection = True
        elif connection == "keep-alive":
            self.close_connection = False
        if self.headers.get("Expect", "").lower() == "100-continue" and number >= (1, 1):
            return self.handle_expect_100()
        return True

    def _dispatch(self) -> None:
        try:
            self.server.endpoint.handle(self)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up while we wrote

    do_POST = do_GET = do_PUT = do_PATCH = do_DELETE = _dispatch

    def log_message(self, format: str, *args: Any) -> None:
        pass  # a line per request on stderr would drown the agent's own output


@contextlib.contextmanager
def model_endpoint(
    *,
    upstream: str | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    checkpoints: str | Path | None = None,
    checkpoint_every: int = 1,
) -> Iterator[ModelEndpoint]:
    """A running `ModelEndpoint` for the `with` block: `endpoint.url`, `endpoint.env`."""
    with ModelEndpoint(
        upstream=upstream, timeout=timeout, checkpoints=checkpoints, checkpoint_every=checkpoint_every
    ) as endpoint:
        yield endpoint
