"""pytest-agentevals: an eval pyramid for long-running LLM agents.

The root is tier 1 of the public API (docs/api.md): the about 25 names a harness and its tests use
every day, in `__all__`. Everything else public lives in a package's `__all__` (tier 2:
`pytest_agentevals.errors` holds every error, `trace`, `guards`, `replay`, `resume`, `settings`...).

Each root name is imported in the `TYPE_CHECKING` block below from the module that defines it.
pytest loads this package with the plugin for every session, so a name's module is imported when
the name is first used (`_lazy.py`, PEP 562), not here: a session that records nothing never loads
the recorder, and `agentevals` never loads pytest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._lazy import attach
from ._moved import install as _install_moved

if TYPE_CHECKING:
    from .adapters.wrap import tool, wrap_tools
    from .endpoint.server import ModelEndpoint, model_endpoint
    from .errors import (
        AgentEvalsDeprecationWarning,
        AgentEvalsError,
        CassetteError,
        ConfigError,
        ReplayDivergence,
        RunStopped,
    )
    from .guards.protocol import Guard, Ruling
    from .hooks import AgentRun
    from .lifecycle import RunSpec
    from .recording.active import bind
    from .recording.harness import budget_left, checkpoint, compaction, expect_progress, note, verification
    from .recording.recorder import Recorder
    from .recording.store import RunStore
    from .replay.engine import Replayer
    from .replay.run import ReplayRun
    from .settings.budgets import Budget
    from .trace.reader import read_trace

    __version__: str

# The root names that left tier 1 in 0.2: each still answers for one release, with an
# AgentEvalsDeprecationWarning naming its tier-2 home ("module:attr" names the package that exports
# it, so the warning gives the spelling to use, not the module that defines it).
_lazy_getattr, __dir__ = attach(
    __name__,
    __file__,
    deprecated={
        "BudgetLeft": "pytest_agentevals.guards:BudgetLeft",
        "CheckpointError": "pytest_agentevals.errors:CheckpointError",
        "ContractDrift": "pytest_agentevals.errors:ContractDrift",
        "GoldenError": "pytest_agentevals.errors:GoldenError",
        "GuardError": "pytest_agentevals.errors:GuardError",
        "HistoryError": "pytest_agentevals.errors:HistoryError",
        "LAYERS": "pytest_agentevals.settings:LAYERS",
        "Layer": "pytest_agentevals.settings:Layer",
        "LedgerError": "pytest_agentevals.errors:LedgerError",
        "NewerTraceVersion": "pytest_agentevals.errors:NewerTraceVersion",
        "RecordingError": "pytest_agentevals.errors:RecordingError",
        "ReplayReport": "pytest_agentevals.replay:ReplayReport",
        "ReplaySession": "ReplayRun",
        "ResumePoint": "pytest_agentevals.resume:ResumePoint",
        "Settings": "pytest_agentevals.settings:Settings",
        "SimError": "pytest_agentevals.errors:SimError",
        "StaleCassette": "pytest_agentevals.errors:StaleCassette",
        "StaleGolden": "pytest_agentevals.errors:StaleGolden",
        "TraceError": "pytest_agentevals.errors:TraceError",
        "TraceFormatError": "pytest_agentevals.errors:TraceFormatError",
        "TraceReader": "pytest_agentevals.trace:TraceReader",
        "TraceWriter": "pytest_agentevals.trace:TraceWriter",
        "UnrecordedRequest": "pytest_agentevals.errors:UnrecordedRequest",
        "current_recorder": "pytest_agentevals.recording:current_recorder",
        "resume_point_from_trace": "pytest_agentevals.resume:resume_point_from_trace",
    },
)


# Module paths of 0.1 that moved (`pytest_agentevals.golden`, `.recording.replay`, ...) import
# through 0.x with a warning naming the new path (`_moved.py`).
_install_moved()


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
    "AgentEvalsDeprecationWarning",
    "AgentEvalsError",
    "AgentRun",
    "Budget",
    "CassetteError",
    "ConfigError",
    "Guard",
    "ModelEndpoint",
    "Recorder",
    "ReplayDivergence",
    "ReplayRun",
    "Replayer",
    "Ruling",
    "RunSpec",
    "RunStopped",
    "RunStore",
    "__version__",
    "bind",
    "budget_left",
    "checkpoint",
    "compaction",
    "expect_progress",
    "model_endpoint",
    "note",
    "read_trace",
    "tool",
    "verification",
    "wrap_tools",
]
