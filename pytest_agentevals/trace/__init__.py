"""The trace: one JSON Lines file per run, the format every layer reads. Knows nothing of pytest."""

from typing import TYPE_CHECKING

from .._lazy import attach

if TYPE_CHECKING:
    from .events import EVENT_TYPES, TRACE_VERSION, Event
    from .reader import TraceReader, read_trace
    from .writer import TraceWriter

__all__ = ["EVENT_TYPES", "TRACE_VERSION", "Event", "TraceReader", "TraceWriter", "read_trace"]

__getattr__, __dir__ = attach(__name__, __file__)
