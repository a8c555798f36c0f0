"""pytest-agentevals: an eval pyramid for long-running LLM agents."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from .errors import (
    AgentEvalsError,
    CassetteError,
    ConfigError,
    GuardError,
    LedgerError,
    RecordingError,
    ReplayDivergence,
    RunStopped,
    SimError,
    StaleCassette,
    TraceError,
    TraceFormatError,
    UnrecordedRequest,
)
from .layers import LAYERS, Layer
from .recording import Recorder, checkpoint, compaction, current_recorder, note, record, tool, verification
from .recording.guards import Budget, BudgetLeft, Guard, budget_left, expect_progress
from .recording.replay import Replayer, replay
from .settings import Settings
from .trace import TraceReader, TraceWriter, read_trace

try:
    __version__ = version("pytest-agentevals")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0"

__all__ = [
    "LAYERS",
    "AgentEvalsError",
    "Budget",
    "BudgetLeft",
    "CassetteError",
    "ConfigError",
    "Guard",
    "GuardError",
    "Layer",
    "LedgerError",
    "Recorder",
    "RecordingError",
    "ReplayDivergence",
    "Replayer",
    "RunStopped",
    "Settings",
    "SimError",
    "StaleCassette",
    "TraceError",
    "TraceFormatError",
    "TraceReader",
    "TraceWriter",
    "UnrecordedRequest",
    "__version__",
    "budget_left",
    "checkpoint",
    "compaction",
    "current_recorder",
    "expect_progress",
    "note",
    "read_trace",
    "record",
    "replay",
    "tool",
    "verification",
]
