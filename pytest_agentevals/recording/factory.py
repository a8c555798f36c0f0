"""The one place a `Recorder` is made from settings: every recording of the pytest faces, the replay
and resume engines, the marathon's seeds and `agentevals record`/`replay` takes the contract's
package list and the price table from the run's settings here, so a new setting of every recording
is added once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..settings import Settings
from .recorder import Recorder


def recorder_for(path: str | Path, settings: Settings | None, **run: Any) -> Recorder:
    """A recorder of `path` under `settings` (None: the recorder's own defaults). `run` holds what
    is this run's own: `agent`, `seed`, `task`, `contract`, `guards`, `resumed_from`..."""
    if settings is not None:
        run.setdefault("packages", settings.contract_packages)
        run.setdefault("prices", settings.prices)
    return Recorder(path, **run)
