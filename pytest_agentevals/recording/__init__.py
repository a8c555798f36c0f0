"""Recording: a run's model calls (via vcrpy's patching), tool calls and harness events into one trace.

Works from plain Python, from pytest and from the command line; knows nothing of either face.
"""

from typing import TYPE_CHECKING

from .._lazy import attach

if TYPE_CHECKING:
    from .active import BoundExecutor, bind, bound_executor
    from .harness import checkpoint, compaction, note, verification
    from .recorder import Recorder, current_recorder
    from .store import RunStore, safe_name

__all__ = [
    "BoundExecutor",
    "Recorder",
    "RunStore",
    "bind",
    "bound_executor",
    "checkpoint",
    "compaction",
    "current_recorder",
    "note",
    "safe_name",
    "verification",
]

__getattr__, __dir__ = attach(__name__, __file__)
