"""pytest-agentevals: an eval pyramid for long-running LLM agents."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from .errors import (
    AgentEvalsError,
    CassetteError,
    CheckpointError,
    ConfigError,
    ContractDrift,
    GoldenError,
    GuardError,
    HistoryError,
    LedgerError,
    NewerTraceVersion,
    RecordingError,
    ReplayDivergence,
    RunStopped,
    SimError,
    StaleCassette,
    StaleGolden,
    TraceError,
    TraceFormatError,
    UnrecordedRequest,
)
from .guards import Budget, BudgetLeft, Guard, budget_left, expect_progress
from .hooks import AgentEvalsDeprecationWarning, AgentRun
from .recording import Recorder, checkpoint, compaction, current_recorder, note, tool, verification
from .replay import Replayer, ReplayReport, ReplaySession
from .resume.boot import ResumePoint, resume_point_from_trace
from .settings import Settings
from .settings.layers import LAYERS, Layer
from .trace import TraceReader, TraceWriter, read_trace

try:
    __version__ = version("pytest-agentevals")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0"

__all__ = [
    "LAYERS",
    "AgentEvalsDeprecationWarning",
    "AgentEvalsError",
    "AgentRun",
    "Budget",
    "BudgetLeft",
    "CassetteError",
    "CheckpointError",
    "ConfigError",
    "ContractDrift",
    "GoldenError",
    "Guard",
    "GuardError",
    "HistoryError",
    "Layer",
    "LedgerError",
    "NewerTraceVersion",
    "Recorder",
    "RecordingError",
    "ReplayDivergence",
    "ReplayReport",
    "ReplaySession",
    "Replayer",
    "ResumePoint",
    "RunStopped",
    "Settings",
    "SimError",
    "StaleCassette",
    "StaleGolden",
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
    "resume_point_from_trace",
    "tool",
    "verification",
]
