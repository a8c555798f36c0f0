"""What is active in this process: the recorder that writes, a tool source that answers tools, and the
replay that answers model requests (the model endpoint asks it for other processes' requests).

Both are process-wide, like the HTTP patches they go with: an agent's worker threads must record
into the same trace as the thread that started the recording.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Protocol


class ToolRecorder(Protocol):
    def record_tool(self, name: str, tool_input: dict[str, Any], run: Callable[[], Any]) -> Any: ...

    async def record_tool_async(
        self, name: str, tool_input: dict[str, Any], run: Callable[[], Any]
    ) -> Any: ...

    def emit(self, kind: str, sync: bool = False, **fields: Any) -> dict[str, Any]: ...


class ToolSource(Protocol):
    """Answers a tool call instead of running it (the replay engine is one)."""

    def tool_result(self, name: str, tool_input: dict[str, Any]) -> Any: ...


_lock = threading.Lock()
_recorders: list[ToolRecorder] = []
_sources: list[ToolSource] = []
_replayers: list[Any] = []
_endpoints: list[str] = []


def push_recorder(recorder: ToolRecorder) -> None:
    with _lock:
        _recorders.append(recorder)


def pop_recorder(recorder: ToolRecorder) -> None:
    with _lock:
        if recorder in _recorders:
            _recorders.remove(recorder)


def recorder() -> ToolRecorder | None:
    return _recorders[-1] if _recorders else None


def push_source(source: ToolSource) -> None:
    with _lock:
        _sources.append(source)


def pop_source(source: ToolSource) -> None:
    with _lock:
        if source in _sources:
            _sources.remove(source)


def source() -> ToolSource | None:
    return _sources[-1] if _sources else None


def push_replayer(replayer: Any) -> None:
    with _lock:
        _replayers.append(replayer)


def pop_replayer(replayer: Any) -> None:
    with _lock:
        if replayer in _replayers:
            _replayers.remove(replayer)


def replayer() -> Any:
    """The running replay of this process (a `Replayer`), if any."""
    return _replayers[-1] if _replayers else None


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
