"""Reading a trace for a report: as much of it as can be read, and what could not, said plainly.

A report exists to show runs that went wrong, so a damaged trace is shown, not refused:
- a torn last line (a crash mid-write) or a missing `run_end` (killed, still going): every event;
- a bad line in the middle: the events before it;
- a trace from a newer format version: the events of kinds this version knows, leniently.
Each is a problem the report states at the top. A file that is not a trace at all (no `run_start`
first) is one clear error, `TraceError`.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path

from ..errors import TraceError, TraceFormatError
from ..trace.events import EVENT_TYPES, TRACE_VERSION, Event
from ..trace.loaders import load_json
from ..trace.reader import TraceReader

_WHAT_A_TRACE_IS = (
    "a trace is the .trace.jsonl file a recording writes: JSON Lines whose first line is a run_start "
    "event; see docs/trace-format.md"
)


class TraceSource:
    """The events of one trace file, read once by iterating; afterwards `problems` lists what the
    report must say about the file, `damaged` whether a line in the middle stopped the reading and
    `complete` whether the run's `run_end` was read.

    Constructing it reads the first line and raises `TraceError` for a file that is not a trace."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.problems: list[str] = []
        self.damaged = False
        self.complete = False
        self.events = 0
        self.version = _first_line_version(self.path)

    @property
    def newer(self) -> bool:
        return self.version > TRACE_VERSION

    def __iter__(self) -> Iterator[Event]:
        source = self._lenient() if self.newer else self._strict()
        for event in source:
            self.events += 1
            if event.get("type") == "run_end":
                self.complete = True
            yield event
        if not self.complete:
            self.problems.append(
                "no run_end event: the run was killed, crashed before it could end, or is still going; "
                "shown as far as it goes"
            )

    def _strict(self) -> Iterator[Event]:
        reader = TraceReader(self.path, resolve=False)  # deltas are shown as what each request added
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the torn line is said in the report instead
                yield from reader
        except TraceFormatError as exc:
            if exc.line <= 1:
                raise TraceError(f"{self.path}: not a trace: {exc.problem} ({_WHAT_A_TRACE_IS})") from None
            self.damaged = True
            self.problems.append(
                f"line {exc.line} is damaged ({exc.problem}): shown are the {self.events} events before it"
            )
        self.problems[:0] = [_plain(problem, self.path) for problem in reader.problems]

    def _lenient(self) -> Iterator[Event]:
        unreadable = unknown = 0
        with self.path.open("rb") as handle:
            for raw in handle:
                try:
                    event = load_json(raw, _unparsed)
                except ValueError:  # also too deep, a huge number, not UTF-8
                    unreadable += 1
                    continue
                if not isinstance(event, dict) or event.get("type") not in EVENT_TYPES:
                    unknown += 1
                    continue
                yield event
        problem = (
            f"written by trace format version {self.version}, newer than the version {TRACE_VERSION} this "
            "pytest-agentevals reads: shown is what could be read"
        )
        skipped = [
            f"{unknown} event(s) of kinds it does not know" if unknown else "",
            f"{unreadable} line(s) it could not parse" if unreadable else "",
        ]
        if any(skipped):
            problem += " (skipped: " + ", ".join(part for part in skipped if part) + ")"
        self.problems.insert(0, problem + "; upgrade pytest-agentevals to see it all")


# A run_start line holds the run's contract: a few KB. Read no further than this looking for its end.
MAX_FIRST_LINE_BYTES = 64 << 20


def _first_line_version(path: Path) -> int:
    """The format version of a trace's run_start, or `TraceError` saying why the file is no trace."""
    try:
        with path.open("rb") as handle:
            first = handle.readline(MAX_FIRST_LINE_BYTES + 1)
    except FileNotFoundError:
        raise TraceError(f"{path}: no such file ({_WHAT_A_TRACE_IS})") from None
    except IsADirectoryError:
        raise TraceError(f"{path}: a directory, not a trace ({_WHAT_A_TRACE_IS})") from None
    except OSError as exc:
        raise TraceError(f"{path}: cannot be read: {exc.strerror}") from None
    if not first.strip():
        raise TraceError(f"{path}: not a trace: the file is empty ({_WHAT_A_TRACE_IS})")
    if len(first) > MAX_FIRST_LINE_BYTES:
        raise TraceError(
            f"{path}: not a trace: its first line is over {MAX_FIRST_LINE_BYTES >> 20} MiB, and a "
            f"run_start event is a few KB ({_WHAT_A_TRACE_IS})"
        )

    def unreadable(line: int, problem: str) -> TraceError:
        return TraceError(
            f"{path}: not a trace: its first line is not a JSON object this reads: {problem} "
            f"({_WHAT_A_TRACE_IS})"
        )

    event = load_json(first, unreadable)  # bounded: nested 100,000 deep or a 6,000-digit number
    if not isinstance(event, dict) or event.get("type") != "run_start":
        found = event.get("type") if isinstance(event, dict) else type(event).__name__
        raise TraceError(
            f"{path}: not a trace: its first line is {found!r}, not a run_start event ({_WHAT_A_TRACE_IS})"
        )
    version = event.get("v")
    if type(version) is not int or version < TRACE_VERSION:
        raise TraceError(
            f"{path}: not a trace this report can read: run_start says format version {version!r} "
            f"(this pytest-agentevals reads version {TRACE_VERSION} and shows newer ones as far as it can)"
        )
    return version


def _unparsed(line: int, problem: str) -> ValueError:
    return ValueError(problem)


def _plain(problem: str, path: Path) -> str:
    """A reader's problem without the file name the report shows anyway."""
    prefix = f"{path}:"
    return problem[len(prefix) :].lstrip() if problem.startswith(prefix) else problem
