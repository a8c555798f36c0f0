"""Workspace snapshots for checkpoints: every file's hash and small files' content, read safely
(`files.py`: by descriptor, never through a link) and, on Linux, only where the kernel saw a change
(`watch.py` over `inotify.py`); the stat walk elsewhere (`snapshot.py`, the `Snapshotter`).

Used by the recorder (a checkpoint's `workspace=`), the resume layer (restoring and comparing a
fixture's workspace) and the model endpoint (a command's workspace at each checkpoint). Knows nothing
of pytest, of recording or of the command line.
"""

from typing import TYPE_CHECKING

from .._lazy import attach

if TYPE_CHECKING:
    from .files import MAX_FILE_BYTES, MAX_TOTAL_BYTES
    from .snapshot import Snapshotter

__all__ = ["MAX_FILE_BYTES", "MAX_TOTAL_BYTES", "Snapshotter"]

__getattr__, __dir__ = attach(__name__, __file__)
