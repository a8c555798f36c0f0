"""The trace writer: append-only, one flushed line per event, fsync at checkpoints and at the end."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

from . import delta
from .events import Event

Scrub = Callable[[str], str]


def _dumps(event: Event) -> str:
    return json.dumps(event, ensure_ascii=False, separators=(",", ":"), default=_fallback)


def _fallback(value: Any) -> Any:
    # Tool inputs and outputs are whatever the user's code passes; keep the trace readable rather
    # than failing the run on an object JSON cannot hold.
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    if isinstance(value, Path):
        return str(value)
    return repr(value)


class TraceWriter:
    """Writes events to a trace file.

    `scrub` sees every serialized line before it reaches the file, so a secret is removed whichever
    event, header or field carries it. Model-call request bodies are stored as deltas against the
    previous model call (see `delta.py`), and request headers only when they changed.
    """

    def __init__(self, path: str | Path, scrub: Scrub | None = None) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Append mode and one write() per line: a crash tears at most the last line.
        self._file = self.path.open("a", encoding="utf-8")
        self._scrub = scrub
        self._lock = threading.Lock()
        self._previous_body: dict[str, Any] | None = None
        self._previous_headers: dict[str, Any] | None = None
        self.bytes_written = 0
        self.closed = False

    def write(self, event: Event, sync: bool = False) -> None:
        with self._lock:
            if event.get("type") == "model_call":
                event = self._compress(event)
            line = _dumps(event)
            if self._scrub is not None:
                line = self._scrub(line)
            self._file.write(line + "\n")
            self._file.flush()
            self.bytes_written += len(line) + 1
            if sync:
                os.fsync(self._file.fileno())

    def _compress(self, event: Event) -> Event:
        request = event.get("request")
        if not isinstance(request, dict):
            return event
        stored = dict(request)
        body = request.get("body")
        if isinstance(body, dict):
            body_delta = delta.encode(self._previous_body, body)
            if body_delta is not None:
                del stored["body"]
                stored["body_delta"] = body_delta
            self._previous_body = body
        headers = request.get("headers")
        if headers is not None and headers == self._previous_headers:
            del stored["headers"]  # the reader carries the previous call's headers forward
        self._previous_headers = headers
        return {**event, "request": stored}

    def sync(self) -> None:
        with self._lock:
            self._file.flush()
            os.fsync(self._file.fileno())

    def close(self) -> None:
        with self._lock:
            if self.closed:
                return
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
            self.closed = True

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
