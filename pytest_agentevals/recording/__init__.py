"""Recording: a run's model calls (via vcrpy's patching), tool calls and harness events into one trace.

Works from plain Python, from pytest and from the command line; knows nothing of either face.
"""

from .harness import checkpoint, compaction, note, verification
from .recorder import Recorder, current_recorder
from .tools import tool

__all__ = [
    "Recorder",
    "checkpoint",
    "compaction",
    "current_recorder",
    "note",
    "tool",
    "verification",
]
