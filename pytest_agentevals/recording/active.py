"""What is active, and for whom: the recorder that writes, a tool source that answers tools, the
replay that answers model requests, the HTTP cassette that vcrpy's patches hand requests to and what
answers at the SDK's own method (`replay/sdk.py`).

Each belongs to the context that opened it (`contextvars`), so runs side by side in one process —
threads, asyncio tasks, a service's sessions — each see their own: an asyncio task inherits the runs
of the context that created it, a thread joins a run through `bind(fn)` or `bound_executor(pool)`.
A context that opened nothing (a worker thread started the plain way, the model endpoint's request
threads) falls back to the process's runs when they are one nest (one run, or runs opened inside
one another in one context, as a replay inside a recording): today's worker-thread agents keep
recording. With runs open side by side, such a context's event is refused (`AmbiguousRun`), never
filed under a guess.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import itertools
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field
from typing import Any, ParamSpec, Protocol, TypeVar

from ..errors import AmbiguousRun

P = ParamSpec("P")
R = TypeVar("R")


class ToolRecorder(Protocol):
    def record_tool(self, name: str, tool_input: dict[str, Any], run: Callable[[], Any]) -> Any: ...

    async def record_tool_async(
        self, name: str, tool_input: dict[str, Any], run: Callable[[], Any]
    ) -> Any: ...

    def emit(self, kind: str, sync: bool = False, **fields: Any) -> dict[str, Any]: ...


class ToolSource(Protocol):
    """Answers a tool call instead of running it (the replay engine is one)."""

    def tool_result(self, name: str, tool_input: dict[str, Any]) -> Any: ...


RECORDER, SOURCE, REPLAYER, HTTP, SDK = "recorder", "source", "replayer", "http", "sdk"


@dataclass(eq=False)
class Frame:
    """One open thing of one kind, the frame open in its context when it opened (`parent`), and a
    label for messages (the trace or cassette it belongs to)."""

    kind: str
    obj: Any
    label: str
    parent: Frame | None
    open: bool = field(default=True)


# The frames open in this context, oldest first. A tuple, never mutated: a task or a bound thread
# that opens a run of its own sets a longer tuple in its own context, leaving its parent's alone.
_frames: contextvars.ContextVar[tuple[Frame, ...]] = contextvars.ContextVar("agentevals_runs", default=())

_lock = threading.Lock()
_open: list[Frame] = []  # every open frame of the process, oldest first
# What a context that opened nothing sees: the open frames when they form one nest, else None.
_nest: tuple[Frame, ...] = ()
_ambiguous = False
_endpoints: list[str] = []


def _innermost(frames: tuple[Frame, ...]) -> Frame | None:
    for frame in reversed(frames):
        if frame.open:
            return frame
    return None


def push(kind: str, obj: Any, label: str) -> Frame:
    """Open `obj` as this context's `kind` (and its children's): what `pop` closes."""
    frames = _frames.get()
    frame = Frame(kind, obj, label, _innermost(frames))
    _frames.set((*(f for f in frames if f.open), frame))
    with _lock:
        _open.append(frame)
        _settle()
    return frame


def pop(frame: Frame) -> None:
    """Close a frame (from any context: a run stopped by another thread is closed for every one)."""
    frame.open = False
    frames = _frames.get()
    if frame in frames:
        _frames.set(tuple(f for f in frames if f.open))
    with _lock:
        if frame in _open:
            _open.remove(frame)
        _settle()


def _settle() -> None:
    """Work out what an unbound context sees (under `_lock`): the open frames when each one's
    parent is the one opened before it (a single nest), else nothing but a refusal."""
    global _nest, _ambiguous
    nest = True
    for before, frame in itertools.pairwise(_open):
        if frame.parent is not before:
            nest = False
            break
    _nest = tuple(_open) if nest else ()
    _ambiguous = not nest


def _find(kind: str, frames: Iterable[Frame]) -> Any:
    for frame in frames:
        if frame.kind == kind and frame.open:
            return frame.obj
    return None


def current(kind: str) -> Any:
    """This context's innermost open `kind`; in a context that opened nothing, the process's when
    its runs are one nest. Raises `AmbiguousRun` when they are not."""
    frames = _frames.get()
    if frames and any(frame.open for frame in frames):
        return _find(kind, reversed(frames))
    if _ambiguous:
        raise ambiguous()
    return _find(kind, reversed(_nest))


def ambiguous() -> AmbiguousRun:
    with _lock:
        labels = list(dict.fromkeys(f.label for f in _open if f.kind in (RECORDER, REPLAYER, SOURCE)))
    if not labels:  # pragma: no cover - only HTTP blocks open side by side (step cases in threads)
        labels = list(dict.fromkeys(f.label for f in _open))
    return AmbiguousRun(
        f"an event came from a context that belongs to none of the {len(labels)} runs open side by side "
        f"in this process ({'; '.join(labels)}), so it is not filed under a guess: run it inside its "
        "run's context — an asyncio task created there inherits it; a thread joins it through "
        "pytest_agentevals.bind(fn) or pytest_agentevals.recording.bound_executor(pool) (docs/service.md)"
    )


# -- the kinds, by name ---------------------------------------------------------------------------


def push_recorder(recorder: ToolRecorder, label: str = "a recording") -> Frame:
    return push(RECORDER, recorder, label)


def recorder() -> ToolRecorder | None:
    return current(RECORDER)  # type: ignore[no-any-return]


def push_source(source: ToolSource, label: str = "a tool source") -> Frame:
    return push(SOURCE, source, label)


def source() -> ToolSource | None:
    return current(SOURCE)  # type: ignore[no-any-return]


def push_replayer(replayer: Any, label: str = "a replay") -> Frame:
    return push(REPLAYER, replayer, label)


def replayer() -> Any:
    """The running replay of this context (a `Replayer`), if any."""
    return current(REPLAYER)


# -- threads joining a run ------------------------------------------------------------------------


def snapshot() -> tuple[Frame, ...]:
    """The runs open in this context, to enter elsewhere later (`entered`)."""
    return _frames.get()


@contextlib.contextmanager
def entered(frames: tuple[Frame, ...]) -> Iterator[None]:
    """Run a block in the runs of a `snapshot` (a request thread of the model endpoint, on the route
    of the run that asked for it)."""
    token = _frames.set(frames)
    try:
        yield
    finally:
        _frames.reset(token)


def bind(fn: Callable[P, R]) -> Callable[P, R]:
    """`fn`, to run in this context's runs wherever it is called: a thread (or a pool's worker)
    that runs it records into the run that was open here when `bind` was called, and opens runs of
    its own inside it. The runs are carried, not the whole context: the bound function may run in
    several threads at once."""
    frames = _frames.get()

    @functools.wraps(fn)
    def bound_call(*args: P.args, **kwargs: P.kwargs) -> R:
        token = _frames.set(frames)
        try:
            return fn(*args, **kwargs)
        finally:
            _frames.reset(token)

    return bound_call


class BoundExecutor(Executor):
    """An executor whose every task runs in the runs of the context that submitted it (`bind`)."""

    def __init__(self, executor: Executor) -> None:
        self._executor = executor

    def submit(self, fn: Callable[..., R], /, *args: Any, **kwargs: Any) -> Future[R]:
        return self._executor.submit(bind(fn), *args, **kwargs)

    def map(
        self,
        fn: Callable[..., R],
        *iterables: Iterable[Any],
        timeout: float | None = None,
        chunksize: int = 1,
    ) -> Iterator[R]:
        return self._executor.map(bind(fn), *iterables, timeout=timeout, chunksize=chunksize)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._executor.shutdown(wait=wait, cancel_futures=cancel_futures)


def bound_executor(executor: Executor) -> BoundExecutor:
    """`executor`, with each submitted task bound to the submitting context's runs (`bind`); for
    `loop.run_in_executor` and `ThreadPoolExecutor`, which do not carry a context themselves."""
    return BoundExecutor(executor)


# -- model endpoints of this process ----------------------------------------------------------------


def push_endpoint(url: str) -> None:
    """A model endpoint of this process started at `url`: it records and guards what reaches it."""
    with _lock:
        _endpoints.append(url.rstrip("/"))


def pop_endpoint(url: str) -> None:
    with _lock:
        if url.rstrip("/") in _endpoints:
            _endpoints.remove(url.rstrip("/"))


def through_endpoint(uri: str) -> bool:
    """Whether a request to `uri` goes to a model endpoint of this process, which records and guards
    it itself: the in-process recording then leaves it alone (it would be recorded twice)."""
    return any(uri == url or uri.startswith((url + "/", url + "?")) for url in _endpoints)
