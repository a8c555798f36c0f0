"""A failure of ours, as a person reads it: our message first, then the user's own frames, briefly.

When a test fails with one of our errors (an `AgentEvalsError` — a replay divergence, a stale
cassette, a golden mismatch, a budget stop — or an exception raised from one), the frames of
pytest-agentevals, the anthropic SDK, httpx, vcrpy, pytest and the standard library in between say
nothing the message does not, and there are dozens of them. The plugin's report hook replaces the
traceback with `OurFailure`: the message, then the user's frames as `file:line: in function` and
their source line, then how many frames were hidden (`--fulltrace` shows them all).
"""

from __future__ import annotations

import functools
import importlib.util
import linecache
import site
import sysconfig
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import AgentEvalsError
from ..trace.scrub import Scrubber
from ..trace.terminal import safe

# Whose frames a failure of ours hides: ours, the SDK's and its HTTP stack's, vcrpy's, pytest's.
HIDDEN_PACKAGES = (
    "pytest_agentevals",
    "anthropic",
    "httpx",
    "httpx2",
    "httpcore",
    "h11",
    "anyio",
    "vcr",
    "wrapt",
    "pydantic",
    "_pytest",
    "pytest",
    "pluggy",
)
HIDDEN_NAMES = "pytest-agentevals, the anthropic SDK, httpx, vcrpy, pytest and the standard library"


def ours(error: BaseException) -> AgentEvalsError | None:
    """The error of ours behind `error`: itself, or the nearest in its chain as Python prints it
    (`raise ... from`, or an error raised while handling ours: litellm wraps errors so)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, AgentEvalsError):
            return current
        seen.add(id(current))
        current = current.__cause__ or (None if current.__suppress_context__ else current.__context__)
    return None


@functools.cache
def _hidden_roots() -> tuple[str, ...]:
    roots: list[str] = []
    for name in HIDDEN_PACKAGES:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is not None and spec.submodule_search_locations:
            roots.extend(str(Path(location).resolve()) for location in spec.submodule_search_locations)
    return tuple(roots)


@functools.cache
def _stdlib_roots() -> tuple[tuple[str, ...], tuple[str, ...]]:
    paths = sysconfig.get_paths()
    stdlib = {str(Path(paths[key]).resolve()) for key in ("stdlib", "platstdlib") if key in paths}
    sites = {str(Path(p).resolve()) for p in [*site.getsitepackages(), paths.get("purelib", "")] if p}
    return tuple(stdlib), tuple(sites)


def is_hidden(filename: str) -> bool:
    """Whether a frame of this file is one a failure of ours hides (not the user's own code)."""
    if filename.startswith("<"):
        return True  # <frozen runpy>, <string>...
    path = str(Path(filename).resolve())
    if path.startswith(_hidden_roots()):
        return True
    stdlib, sites = _stdlib_roots()
    return path.startswith(stdlib) and not path.startswith(sites)


@dataclass(frozen=True)
class Frame:
    filename: str
    lineno: int
    function: str
    line: str


@dataclass(frozen=True)
class Crash:
    """Where and what, in one line: what pytest's short summary and JUnit XML read (`reprcrash`)."""

    path: str
    lineno: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.lineno}: {self.message}"


def _frames(error: BaseException) -> tuple[list[Frame], int]:
    """The user's frames of the first exception in the chain that has any, and how many were hidden."""
    seen: set[int] = set()
    current: BaseException | None = error
    hidden_total = 0
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        kept: list[Frame] = []
        hidden = 0
        for summary in traceback.extract_tb(current.__traceback__):
            if is_hidden(summary.filename):
                hidden += 1
                continue
            line = summary.line or linecache.getline(summary.filename, summary.lineno or 0).strip()
            kept.append(Frame(summary.filename, summary.lineno or 0, summary.name, line))
        hidden_total += hidden
        if kept:
            return _collapsed(kept), hidden_total
        current = current.__cause__ or current.__context__
    return [], hidden_total


# A run of more frames than this of one file or one installed package (a framework's dispatch, a
# recursion) shows its first and last frames and how many are between.
MAX_RUN = 6


def _collapsed(frames: list[Frame]) -> list[Frame]:
    out: list[Frame] = []
    start = 0
    while start < len(frames):
        owner = _owner(frames[start].filename)
        end = start
        while end + 1 < len(frames) and _owner(frames[end + 1].filename) == owner:
            end += 1
        run = frames[start : end + 1]
        if len(run) > MAX_RUN:
            between = len(run) - 3
            out += [*run[:2], Frame("", between, owner, ""), run[-1]]
        else:
            out += run
        start = end + 1
    return out


def _owner(filename: str) -> str:
    """An installed package's top-level name for a file under site-packages, else the file."""
    path = str(Path(filename).resolve())
    for root in _stdlib_roots()[1]:
        if path.startswith(root + "/"):
            return path[len(root) + 1 :].split("/", 1)[0].removesuffix(".py")
    return filename


class OurFailure:
    """A test report's `longrepr` for a failure of ours (duck-typed as pytest's TerminalRepr)."""

    def __init__(self, raised: BaseException, error: AgentEvalsError, rootdir: Path) -> None:
        self.error = error
        self.raised = raised
        self.frames, self.hidden = _frames(raised)
        self.rootdir = rootdir
        # The message goes to the terminal and into a JUnit XML file: no secret it quotes (a live
        # request's key in a divergence, a value the model echoed) goes with it.
        # Nor a control character it quotes (a cassette's content, a fixture's name): terminal-safe.
        self.message = safe(Scrubber().scrub_text(str(error)))
        first = self.message.splitlines()[0] if self.message else ""
        where = self.frames[-1] if self.frames else None
        self.reprcrash = Crash(
            where.filename if where else "", where.lineno if where else 0, f"{type(error).__name__}: {first}"
        )

    @classmethod
    def replacing(cls, longrepr: Any, raised: BaseException, rootdir: Path) -> OurFailure | None:
        """What a failed test's report shows instead of `longrepr`, when `raised` is (or was caused
        by) one of our errors; None otherwise, and for an item that wrote its own failure (a text)."""
        error = ours(raised)
        if error is None or isinstance(longrepr, str):
            return None
        return cls(raised, error, rootdir)

    def _where(self, filename: str) -> str:
        path = Path(filename)
        try:
            return str(path.resolve().relative_to(self.rootdir.resolve()))
        except ValueError:
            return filename

    def lines(self) -> list[tuple[str, dict[str, Any]]]:
        """(text, markup) of each line, message first."""
        red = {"red": True, "bold": True}
        message = self.message.splitlines() or [""]
        out = [(f"E   {type(self.error).__name__}: {message[0]}", red)]
        out += [(f"E   {line}", red) for line in message[1:]]
        for note in getattr(self.error, "__notes__", None) or ():
            out.append((f"E   {safe(Scrubber().scrub_text(str(note)))}", red))
        if self.raised is not self.error:
            # A wrapper's text often quotes ours whole (litellm's does): its first line is enough.
            lines = safe(Scrubber().scrub_text(str(self.raised))).splitlines() or [""]
            raised = lines[0] if len(lines[0]) <= 200 else lines[0][:199] + "…"
            out.append((f"E   (raised as {type(self.raised).__name__}: {raised})", red))
        out.append(("", {}))
        for frame in self.frames:
            if not frame.filename:  # a collapsed run of one package's (or file's) frames
                owner = self._where(frame.function) if "/" in frame.function else frame.function
                out.append((f"… {frame.lineno} more frames of {owner} …", {}))
                continue
            out.append((f"{self._where(frame.filename)}:{frame.lineno}: in {frame.function}", {}))
            if frame.line:
                out.append((f"    {frame.line}", {}))
        if self.hidden:
            out.append((f"({self.hidden} frames of {HIDDEN_NAMES} hidden; --fulltrace shows them)", {}))
        return out

    def toterminal(self, tw: Any) -> None:
        for text, markup in self.lines():
            tw.line(text, **markup)

    def __str__(self) -> str:
        return "\n".join(text for text, _ in self.lines())
