"""Readers of other formats into traces, each stating the fidelity of what it made
(`trace/fidelity.py`): a Claude Code session (`claude_code.py`), OpenTelemetry GenAI spans as OTLP
JSON (`otlp.py`), an ATIF trajectory (`atif.py`); and the OTLP exporter beside them (`export.py`).

```python
from pytest_agentevals.imports import import_file

import_file("claude-code", "session.jsonl", "incident.trace.jsonl")
```
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path

from ..errors import AgentEvalsError
from ..trace.fidelity import Fidelity
from . import build
from .export import Exported, export_otlp
from .limits import SourceFormatError

__all__ = ["SOURCES", "Exported", "Imported", "SourceFormatError", "export_otlp", "import_file"]

# Each source's module, imported when it is used.
SOURCES: dict[str, str] = {"claude-code": "claude_code", "otlp": "otlp", "atif": "atif"}


@dataclass(frozen=True)
class Imported:
    """A trace an import wrote: how many events and model calls, its fidelity, secrets scrubbed."""

    out: Path
    events: int
    model_calls: int
    fidelity: Fidelity
    redactions: int

    def text(self) -> str:
        scrubbed = f", {self.redactions} secret(s) scrubbed" if self.redactions else ""
        return (
            f"agentevals import: wrote {self.out} ({self.events} events, {self.model_calls} model calls"
            f"{scrubbed}); fidelity {self.fidelity.describe()}"
        )


def import_file(
    source: str, path: str | Path, out: str | Path, *, force: bool = False, trace_id: str | None = None
) -> Imported:
    """Read `path` as `source` (a key of SOURCES) and write it as a trace at `out`; `trace_id` picks
    one trace of an OTLP file that holds several."""
    if source not in SOURCES:
        raise AgentEvalsError(f"unknown import source {source!r}: use one of {', '.join(SOURCES)}")
    reader = importlib.import_module(f"{__name__}.{SOURCES[source]}")
    if trace_id is not None and source != "otlp":
        raise AgentEvalsError(f"--trace-id is for an otlp import, not {source}")
    run = reader.read(Path(path), trace_id) if source == "otlp" else reader.read(Path(path))
    events, redactions = build.write(run, Path(out), force=force)
    return Imported(Path(out), events, len(run.calls), run.fidelity, redactions)
