"""The trace: one JSON Lines file per run, the format every layer reads. Knows nothing of pytest."""

from typing import TYPE_CHECKING

from .._lazy import attach

if TYPE_CHECKING:
    from .events import EVENT_TYPES, TRACE_VERSION, Event
    from .openai_chat import from_openai, to_openai
    from .reader import TraceReader, read_trace
    from .writer import TraceWriter

__all__ = [
    "EVENT_TYPES",
    "TRACE_VERSION",
    "Event",
    "TraceReader",
    "TraceWriter",
    "from_openai",
    "read_trace",
    "to_openai",
]

__getattr__, __dir__ = attach(__name__, __file__)
