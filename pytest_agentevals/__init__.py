"""pytest-agentevals: an eval pyramid for long-running LLM agents."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from .errors import (
    AgentEvalsError,
    ConfigError,
    RecordingError,
    SimError,
    TraceError,
    TraceFormatError,
)
from .layers import LAYERS, Layer
from .recording import Recorder, checkpoint, compaction, current_recorder, note, record, tool, verification
from .settings import Settings
from .trace import TraceReader, TraceWriter, read_trace

try:
    __version__ = version("pytest-agentevals")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0"

__all__ = [
    "LAYERS",
    "AgentEvalsError",
    "ConfigError",
    "Layer",
    "Recorder",
    "RecordingError",
    "Settings",
    "SimError",
    "TraceError",
    "TraceFormatError",
    "TraceReader",
    "TraceWriter",
    "__version__",
    "checkpoint",
    "compaction",
    "current_recorder",
    "note",
    "read_trace",
    "record",
    "tool",
    "verification",
]
