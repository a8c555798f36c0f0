"""pytest-agentevals: an eval pyramid for long-running LLM agents.

The public API is `__all__`, each name imported in the `TYPE_CHECKING` block below from the module
that defines it. pytest loads this package with the plugin for every session, so a name's module is
imported when the name is first used (`_lazy.py`, PEP 562), not here: a session that records
nothing never loads the recorder, and `agentevals` never loads pytest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._lazy import attach

if TYPE_CHECKING:
    from .adapters.wrap import tool, wrap_tools
    from .endpoint.server import ModelEndpoint, model_endpoint
    from .errors import (
        AgentEvalsDeprecationWarning,
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
    from .guards.left import BudgetLeft
    from .guards.protocol import Guard
    from .hooks import AgentRun
    from .recording.harness import budget_left, checkpoint, compaction, expect_progress, note, verification
    from .recording.recorder import Recorder, current_recorder
    from .replay.engine import Replayer
    from .replay.report import ReplayReport
    from .replay.run import ReplayRun
    from .resume.boot import ResumePoint, resume_point_from_trace
    from .settings.budgets import Budget
    from .settings.layers import LAYERS, Layer
    from .settings.resolve import Settings
    from .trace.reader import TraceReader, read_trace
    from .trace.writer import TraceWriter

    __version__: str

_lazy_getattr, __dir__ = attach(__name__, __file__, deprecated={"ReplaySession": "ReplayRun"})


def __getattr__(name: str) -> Any:
    if name != "__version__":
        return _lazy_getattr(name)
    global __version__
    __version__ = _version()
    return __version__


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pytest-agentevals")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0.0.0"


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
    "ModelEndpoint",
    "NewerTraceVersion",
    "Recorder",
    "RecordingError",
    "ReplayDivergence",
    "ReplayReport",
    "ReplayRun",
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
    "model_endpoint",
    "note",
    "read_trace",
    "resume_point_from_trace",
    "tool",
    "verification",
    "wrap_tools",
]
