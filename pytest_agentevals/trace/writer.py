"""The trace writer: append-only, one flushed line per event, fsync at checkpoints and at the end."""

from __future__ import annotations

import errno
import json
import os
import threading
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import Any

from ..fileio import make_folders, open_nofollow
from . import delta
from .events import Event
from .jsonable import jsonable_default, to_jsonable
from .scrub import Scrubber

# One encoder for every line: json.dumps with options builds a new JSONEncoder per call, a tenth of
# the writer's time on a 300-step run (cProfile).
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=jsonable_default)


def _dumps(event: Event) -> str:
    return _ENCODER.encode(event)


def serialize(event: Event) -> str:
    """The event as one JSON line that UTF-8 can encode. Whatever the user's code put in it (a
    circular object, a lone surrogate...), this never raises: see `jsonable.py`."""
    return _encoded(event)[0]


def _encoded(event: Event) -> tuple[str, bytes]:
    """The event's line and its UTF-8 bytes, newline included (see `serialize`)."""
    try:
        line = _dumps(event)
        # A lone surrogate passes the encoder, not UTF-8: encoding the line is the check.
        return line, (line + "\n").encode("utf-8")
    except Exception:  # circular, too long an int, a lone surrogate, or a repr() that raised
        line = _dumps(to_jsonable(event))
        return line, (line + "\n").encode("utf-8")


def _write_all(fd: int, data: bytes) -> None:
    """Write all of `data`: a write to a file may take part of it (a signal, a full disk's last
    bytes), and what it did not take is written next, so the line is never cut in its middle."""
    while data:
        written = os.write(fd, data)
        if written <= 0:  # pragma: no cover - a file's write takes at least a byte, or raises
            raise OSError(errno.EIO, "the trace file took no bytes")
        data = data[written:]


class _Syncer:
    """fsyncs a file on a thread of its own, when asked, at most once per `interval` seconds.

    A checkpoint must reach the disk, but the agent's loop need not wait for the disk to say so: a
    process crash loses nothing that was flushed, and the fsync that guards against a machine crash
    follows within `interval`. Requests that arrive meanwhile share the next fsync: measured on the
    example agent, 130 checkpoints in a second each with its own fsync cost 8% of the run (every
    fsync forces a journal commit that the agent's own file writes then wait on).
    """

    interval = 0.25

    def __init__(self, fileno: int) -> None:
        self._fileno = fileno
        self._wanted = threading.Event()
        self._stopped = threading.Event()
        self._stopping = False
        self.error: OSError | None = None
        self._thread = threading.Thread(target=self._loop, name="agentevals-fsync", daemon=True)
        self._thread.start()

    def request(self) -> None:
        self._wanted.set()

    def _loop(self) -> None:
        while True:
            self._wanted.wait()
            self._wanted.clear()
            if self._stopping:
                return
            try:
                os.fsync(self._fileno)
            except OSError as exc:
                self.error = exc
            # Sleeping on the stop flag's event (not time.sleep) lets close() end the wait at once.
            self._stopped.wait(self.interval)

    def stop(self) -> None:
        self._stopping = True
        self._stopped.set()
        self._wanted.set()
        self._thread.join()


class TraceWriter:
    """Writes events to a trace file.

    Every event passes through the writer's own `scrubber` (see `scrub.py`), which cannot be left
    out or turned off: `secrets` and `scrubber.add()` only add values to look for. Model-call request
    bodies are stored as deltas against the previous model call (see `delta.py`), and request headers
    only when they changed; scrubbing comes after, so it walks only what is new.
    """

    def __init__(self, path: str | Path, secrets: Iterable[str] = ()) -> None:
        self.path = Path(path)
        self.scrubber = Scrubber(secrets)
        make_folders(self.path.parent)  # never through a committed link (fileio.refuse_links)
        # Append mode and one write() per line, straight to the descriptor: a line is the kernel's as
        # soon as write() returns (what a killed process keeps), and a crash tears at most the last
        # one. No Python-level buffer is kept and flushed: a text file's flush alone per event was
        # about 6% of the writer's time (cProfile, 300 steps).
        self._fd = open_nofollow(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        self._lock = threading.Lock()
        self._previous_body: dict[str, Any] | None = None
        self._previous_headers: dict[str, Any] | None = None
        self._previous_workspaces: dict[str, dict[str, Any]] = {}
        self._previous_state: dict[str, Any] | None = None
        self._roots: set[str] = set()
        self.bytes_written = 0
        self.closed = False
        self._syncer: _Syncer | None = None

    def write(self, event: Event, sync: bool = False) -> None:
        with self._lock:
            kind = event.get("type")
            if kind == "model_call":
                event = self._compress(event)
            elif kind == "checkpoint":
                event = self._compress_state(event)
                if isinstance(event.get("workspace"), dict):
                    event = self._compress_workspace(event)
            event = self.scrubber.prepare(event)
            line, data = _encoded(event)
            # The line only tells whether to look: values are scrubbed, never the serialized text.
            if self.scrubber.might_hold(line):
                line, data = _encoded(self.scrubber.scrub_event(json.loads(line)))
            _write_all(self._fd, data)
            self.bytes_written += len(data)
            if sync:
                if self._syncer is None:
                    self._syncer = _Syncer(self._fd)
                self._syncer.request()

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

    def _compress_state(self, event: Event) -> Event:
        """Store a checkpoint's state as a delta against the previous checkpoint's (`delta.py`).

        The previous state is kept as a copy (through JSON, as it was written; after a delta, the delta
        applied to the previous copy): a harness that changes its state in place after a checkpoint
        must not change what the next delta is taken against. A `delta.Frozen` object, which its
        maker never changes, is kept itself, so the next delta settles it by `is` (not walking it).
        A checkpoint that is a delta already (as `TraceReader(resolve=False)` reads it) is stored as
        it is; the next whole state is then stored whole."""
        state = event.get("state")
        if not isinstance(state, dict):
            if "state_delta" in event:
                self._previous_state = None
            return event
        previous = self._previous_state
        state_delta = delta.encode_state(previous, state)
        if previous is None or state_delta is None:
            self._previous_state = delta.relink(json.loads(serialize(state)), state)
            return event
        # Only what changed is copied: the rest of the previous copy is the writer's own already.
        copied = delta.relink_delta(json.loads(serialize(state_delta)), state_delta)
        self._previous_state = delta.apply_state(previous, copied)
        stored = {key: value for key, value in event.items() if key != "state"}
        stored["state_delta"] = state_delta
        return stored

    def _compress_workspace(self, event: Event) -> Event:
        """Store only the files that changed since the previous checkpoint of the same root.

        A workspace that is a delta already (`"base": "previous"`, as a trace stores it and
        `TraceReader(workspaces=False)` reads it) is stored as it is, against this trace's previous
        checkpoint of its root; the next whole one is then stored whole."""
        workspace = event["workspace"]
        root, files = workspace.get("root"), workspace.get("files")
        if not isinstance(root, str) or not isinstance(files, dict):
            return event
        if workspace.get("base") == "previous":
            if root not in self._roots:
                raise ValueError(
                    f"a workspace delta of {root} with no earlier checkpoint of it in {self.path}"
                )
            self._previous_workspaces.pop(root, None)
            return event
        self._roots.add(root)
        previous = self._previous_workspaces.get(root)
        self._previous_workspaces[root] = files
        if previous is None:
            return event
        # Unchanged files come back as the very same entry objects, so `is` settles most of them.
        changed = {
            path: entry
            for path, entry in files.items()
            if not (previous.get(path) is entry or previous.get(path) == entry)
        }
        stored: dict[str, Any] = {"root": root, "base": "previous", "files": changed}
        removed = [path for path in previous if path not in files]
        if removed:
            stored["removed"] = removed
        return {**event, "workspace": stored}

    def sync(self) -> None:
        with self._lock:
            os.fsync(self._fd)

    def close(self) -> None:
        with self._lock:
            if self.closed:
                return
            if self._syncer is not None:
                self._syncer.stop()
            try:
                os.fsync(self._fd)
            finally:
                os.close(self._fd)
                self.closed = True
            if self._syncer is not None and self._syncer.error is not None:
                raise self._syncer.error

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
