"""The trace reader: streams events, tolerates a torn last line, rejects anything else malformed."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import NewerTraceVersion, TraceFormatError
from . import delta
from .events import EVENT_TYPES, REQUIRED, TRACE_VERSION, Event, cost_problem, type_problem
from .loaders import load_json
from .paths import path_problem

# Deltas are resolved into whole requests and workspaces, which a crafted trace can make quadratic:
# a 12 MB file of deltas that keep everything expands into gigabytes. Resolving counts what it
# builds, in references held (a list item is one, a dict entry three: its hash, key and value), and
# refuses a trace past this many per byte read, or MIN_RESOLVED, whichever is more (about 64 MB).
# A real run adds what each step sends, so it stays far below until thousands of steps without
# compaction.
MAX_RESOLVED_PER_BYTE = 1
MIN_RESOLVED = 8_000_000
EXPANSION_FIX = (
    "refused to resolve it: a trace a run wrote grows with what each step adds, so this one was "
    "crafted, or its run went thousands of steps without compacting its context; "
    "re-record it, or extract a checkpoint of it (agentevals resume extract) and replay from there"
)


class TornTraceWarning(UserWarning):
    """The last line of a trace was cut off mid-write, as a crash leaves it; it was ignored."""


class TraceReader:
    """Iterates over the events of one trace file, resolving stored deltas into whole requests.

    After iteration, `problems` lists what was tolerated (a torn last line) and `complete` says
    whether the run ended with a run_end event.

    `resolve=False` leaves deltas as stored (checked, not applied: constant work per delta);
    `workspaces=False` resolves requests but leaves workspace deltas as stored, for a reader that
    needs one checkpoint's workspace, not each (`resume/source.py`). What is resolved is bounded
    (`MAX_RESOLVED_PER_BYTE`): a trace that would expand past it is a `TraceFormatError` at the line
    where it would.
    """

    def __init__(self, path: str | Path, resolve: bool = True, *, workspaces: bool | None = None) -> None:
        self.path = Path(path)
        self.resolve = resolve
        self.resolve_workspaces = resolve if workspaces is None else workspaces
        self.problems: list[str] = []
        self.complete = False
        self._workspaces: dict[str, dict[str, Any]] = {}
        self._read = 0  # bytes read so far
        self._resolved = 0  # references built by resolving deltas so far

    def __iter__(self) -> Iterator[Event]:
        try:
            handle = self.path.open("rb")
        except FileNotFoundError:
            raise TraceFormatError(self.path, 0, "the file does not exist") from None
        except OSError as exc:
            raise TraceFormatError(self.path, 0, f"cannot be opened: {exc.strerror}") from None
        with handle:
            yield from self._events(handle)

    def _events(self, handle: Any) -> Iterator[Event]:
        self._workspaces = {}
        self._read = self._resolved = 0
        previous = _Previous()
        seen_end = False
        number = 0
        pending: bytes | None = None
        for raw in handle:
            self._read += len(raw)
            # Look one line ahead: only the very last line may be torn.
            if pending is not None:
                number += 1
                event = self._parse(pending, number, last=False)
                assert event is not None  # only the last line may be torn
                self._check(event, number, seen_end)
                seen_end = self._advance(event, number, previous, seen_end)
                yield event
            pending = raw
        if pending is not None:
            number += 1
            event = self._parse(pending, number, last=True)
            if event is not None:
                self._check(event, number, seen_end)
                seen_end = self._advance(event, number, previous, seen_end)
                yield event
        if number == 0 or (number == 1 and self.problems):
            raise TraceFormatError(
                self.path, 1, "no complete event: the file is empty or was cut off in its first line"
            )
        self.complete = seen_end

    def _parse(self, raw: bytes, number: int, last: bool) -> Event | None:
        torn = not raw.endswith(b"\n")
        try:
            # Bounded: a line nested past MAX_DEPTH or a number of thousands of digits is refused.
            event = load_json(raw.decode("utf-8"), self._refused, number)
        except (UnicodeDecodeError, TraceFormatError) as exc:
            if last and torn:
                message = (
                    f"{self.path}:{number}: the last line is incomplete (a crash mid-write?); ignored it"
                )
                self.problems.append(message)
                warnings.warn(TornTraceWarning(message), stacklevel=4)
                return None
            if isinstance(exc, TraceFormatError):
                raise
            raise TraceFormatError(self.path, number, "the line is not UTF-8") from None
        if not isinstance(event, dict):
            raise TraceFormatError(self.path, number, f"expected a JSON object, found {type(event).__name__}")
        return event

    def _refused(self, line: int, problem: str) -> TraceFormatError:
        return TraceFormatError(self.path, line, f"the line is {problem}")

    def _check(self, event: Event, number: int, seen_end: bool) -> None:
        kind = event.get("type")
        if number == 1:
            if kind != "run_start":
                raise TraceFormatError(self.path, 1, f"expected a run_start event first, found {kind!r}")
            version = event.get("v")
            if isinstance(version, int) and not isinstance(version, bool) and version > TRACE_VERSION:
                raise NewerTraceVersion(
                    self.path,
                    1,
                    f"written in trace format version {version} by a newer version of pytest-agentevals "
                    f"(this one reads version {TRACE_VERSION}): upgrade pytest-agentevals",
                )
            if version != TRACE_VERSION:
                raise TraceFormatError(
                    self.path, 1, f"trace format version {version!r} is not one this reader knows"
                )
        elif kind == "run_start":
            raise TraceFormatError(self.path, number, "a second run_start event; a trace holds one run")
        if not isinstance(kind, str) or kind not in REQUIRED:
            raise TraceFormatError(
                self.path, number, f"unknown event type {kind!r}; expected one of {', '.join(EVENT_TYPES)}"
            )
        if seen_end:
            raise TraceFormatError(self.path, number, f"a {kind} event after run_end; run_end must be last")
        # A checkpoint's state may be stored as a delta against the previous one's (`_resolve_state`).
        required = REQUIRED[kind]
        if kind == "checkpoint" and "state_delta" in event and "state" not in event:
            required = tuple(name for name in required if name != "state")
        missing = [name for name in required if name not in event]
        if missing:
            raise TraceFormatError(self.path, number, f"{kind} event lacks {', '.join(missing)}")
        for name in required:
            problem = type_problem(name, event[name])
            if problem is not None:
                raise TraceFormatError(self.path, number, f"{kind} event: {problem}")
        if kind == "model_call" and type_problem("seq", event["response"].get("status")) is not None:
            raise TraceFormatError(self.path, number, "model_call.response.status must be an integer")
        # What every layer sums (a budget, a marathon's cost, the report): NaN would poison each sum,
        # and a negative cost would refund a budget.
        if kind in ("model_call", "run_end"):
            where, cost = ("model_call.cost_usd", event.get("cost_usd"))
            if kind == "run_end":
                where, cost = ("run_end.totals.cost_usd", event["totals"].get("cost_usd"))
            problem = cost_problem(cost)
            if problem is not None:
                raise TraceFormatError(self.path, number, f"{where} {problem}")

    def _resolve_state(self, event: Event, number: int, previous: _Previous) -> None:
        if "state_delta" not in event:
            previous.state = event["state"] if self.resolve else None
            previous.state_seen = True
            return
        if "state" in event:
            raise TraceFormatError(self.path, number, "a checkpoint has both state and state_delta")
        if not previous.state_seen:
            raise TraceFormatError(
                self.path, number, "checkpoint.state_delta with no earlier checkpoint state to apply it to"
            )
        try:
            if not self.resolve:
                delta.check_state(event["state_delta"])
                return
            assert previous.state is not None
            state = delta.apply_state(previous.state, event["state_delta"])
        except (ValueError, TypeError, AttributeError) as exc:
            raise TraceFormatError(self.path, number, f"checkpoint.state_delta: {exc}") from None
        self._count(delta.state_size(state), number, "checkpoint state deltas")
        del event["state_delta"]
        event["state"] = previous.state = state

    def _resolve_workspace(self, event: Event, number: int) -> None:
        workspace = event["workspace"]
        root, files = workspace.get("root"), workspace.get("files")
        if not isinstance(root, str) or not isinstance(files, dict):
            raise TraceFormatError(
                self.path, number, "checkpoint.workspace needs a string root and an object files"
            )
        self._check_workspace_paths(files, workspace.get("removed", []), number)
        if workspace.get("base") != "previous":
            # One mutable state per root, copied from the file once: a chain of deltas is applied
            # to it in place, each delta's work what it holds.
            self._workspaces[root] = dict(files) if self.resolve_workspaces else {}
            return
        state = self._workspaces.get(root)
        if state is None:
            raise TraceFormatError(
                self.path,
                number,
                f"checkpoint.workspace changes an earlier snapshot of {root} that is not there",
            )
        removed = workspace.get("removed", [])
        if not isinstance(removed, list):
            raise TraceFormatError(self.path, number, "checkpoint.workspace.removed must be a list of paths")
        if not self.resolve_workspaces:
            return
        state.update(files)
        for path in removed:
            state.pop(path, None)
        self._count(3 * len(state), number, "workspace deltas")
        event["workspace"] = {"root": root, "files": dict(state)}

    def _count(self, built: int, number: int, what: str) -> None:
        self._resolved += built
        allowed = max(MIN_RESOLVED, MAX_RESOLVED_PER_BYTE * self._read)
        if self._resolved > allowed:
            raise TraceFormatError(
                self.path,
                number,
                f"its {what} expand {self._read:,} bytes into more than {allowed:,} references "
                f"(to messages, fields or files); {EXPANSION_FIX}",
            )

    def _check_workspace_paths(self, files: dict[str, Any], removed: Any, number: int) -> None:
        """Every path a checkpoint names stays inside its workspace (it may be restored to disk)."""
        for name, entry in files.items():
            problem = path_problem(name)
            if problem is None and not isinstance(entry, dict):
                problem = "is not described by an object"
            if problem is None and "link" in entry and not isinstance(entry["link"], str):
                problem = "is a link without a target text"
            # A link's target is data (the recorder stores a link leaving the workspace as its target
            # text, never following it); restoring one that leaves is refused where it would be made.
            if problem is not None:
                raise TraceFormatError(
                    self.path, number, f"checkpoint.workspace.files: {name!r} {problem}; refused to read it"
                )
        for name in removed if isinstance(removed, list) else ():
            problem = path_problem(name)
            if problem is not None:
                raise TraceFormatError(
                    self.path, number, f"checkpoint.workspace.removed: {name!r} {problem}; refused to read it"
                )

    def _advance(self, event: Event, number: int, previous: _Previous, seen_end: bool) -> bool:
        kind = event["type"]
        if kind == "run_end":
            return True
        if kind == "checkpoint":
            self._resolve_state(event, number, previous)
            if isinstance(event.get("workspace"), dict):
                self._resolve_workspace(event, number)
        if kind != "model_call":
            return seen_end
        request = event["request"]
        body: Any
        if "body_delta" in request:
            if not previous.seen:
                raise TraceFormatError(
                    self.path,
                    number,
                    "model_call.request.body_delta with no earlier model_call to apply it to",
                )
            try:
                if self.resolve:
                    assert previous.body is not None
                    body = delta.apply(previous.body, request["body_delta"])
                    self._count(3 * len(body) + len(body["messages"]), number, "request deltas")
                else:
                    previous.length = delta.check(previous.length, request["body_delta"])
                    body = None
            except (ValueError, TypeError, AttributeError) as exc:
                raise TraceFormatError(self.path, number, f"model_call.request.body_delta: {exc}") from None
        else:
            body = request.get("body")
            if not self.resolve:
                messages = body.get("messages") if isinstance(body, dict) else None
                previous.seen = isinstance(body, dict)
                previous.length = len(messages) if isinstance(messages, list) else None
        if "headers" in request:
            previous.headers = request["headers"]
        if self.resolve:
            resolved = {key: value for key, value in request.items() if key != "body_delta"}
            resolved["body"] = body
            resolved["headers"] = previous.headers
            event["request"] = resolved
            previous.body = body if isinstance(body, dict) else None
            previous.seen = previous.body is not None
        return seen_end


class _Previous:
    """What the next model call's delta is applied to: the previous body (resolving), or only
    whether there is one and the length of its messages (not resolving)."""

    def __init__(self) -> None:
        self.body: dict[str, Any] | None = None
        self.seen = False
        self.length: int | None = None
        self.headers: Any = None
        self.state: dict[str, Any] | None = None  # the previous checkpoint's state (resolving)
        self.state_seen = False


class TraceTail:
    """Reads a trace while it grows: each `poll()` returns the events of the lines completed since the
    last poll, read from where the last one stopped — never from the start — with the checks of
    `TraceReader` (the same bounds, the same errors). A line not yet ended by a newline is a line still
    being written: it waits for the next poll. `complete` says whether run_end was read; a file that
    shrank (replaced, truncated) is a `TraceFormatError` naming it.

    `max_bytes` bounds one poll's reading, so a huge backlog is taken in slices (`behind` says a
    poll stopped at the bound)."""

    def __init__(self, path: str | Path, resolve: bool = False, *, max_bytes: int = 8 << 20) -> None:
        self.path = Path(path)
        self._reader = TraceReader(self.path, resolve=resolve)
        self._previous = _Previous()
        self._max = max_bytes
        self.offset = 0  # bytes consumed: whole lines only
        self.lines = 0
        self.complete = False
        self.behind = False
        self._error: TraceFormatError | None = None

    def poll(self) -> list[Event]:
        if self._error is not None:
            raise self._error
        try:
            handle = self.path.open("rb")
        except FileNotFoundError:
            raise TraceFormatError(self.path, self.lines, "the file is gone") from None
        with handle:
            size = handle.seek(0, 2)
            if size < self.offset:
                raise TraceFormatError(
                    self.path,
                    self.lines,
                    f"the file shrank from {self.offset:,} to {size:,} bytes: replaced?",
                )
            handle.seek(self.offset)
            chunk = handle.read(self._max)
        self.behind = len(chunk) == self._max  # more may follow at once: poll again
        end = chunk.rfind(b"\n")
        if end < 0:
            return []
        events: list[Event] = []
        reader = self._reader
        for line in chunk[:end].split(b"\n"):  # as a file's lines are: ended by a newline only
            raw = line + b"\n"
            try:
                event = reader._parse(raw, self.lines + 1, last=False)
                assert event is not None  # a line ended by a newline is never torn
                reader._check(event, self.lines + 1, self.complete)
                complete = reader._advance(event, self.lines + 1, self._previous, self.complete)
            except TraceFormatError as exc:
                if not events:
                    raise
                self._error = exc  # the events before it first; the error at the next poll
                self.behind = False
                return events
            self.offset += len(raw)
            reader._read += len(raw)
            self.lines += 1
            self.complete = complete
            events.append(event)
        return events


def read_trace(path: str | Path, resolve: bool = True) -> list[Event]:
    """All events of a trace, with request deltas resolved into whole requests."""
    return list(TraceReader(path, resolve=resolve))
