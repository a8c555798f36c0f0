"""The trace: one JSON Lines file per run, the format every layer reads. Knows nothing of pytest."""

from .events import EVENT_TYPES, TRACE_VERSION, Event
from .reader import TraceReader, read_trace
from .writer import TraceWriter

__all__ = ["EVENT_TYPES", "TRACE_VERSION", "Event", "TraceReader", "TraceWriter", "read_trace"]
