"""Recorded decisions: the model exchanges of each step case, beside its goldens file.

`goldens/refactor.yaml` keeps its exchanges in `goldens/refactor.decisions.trace.jsonl`, an ordinary
trace (so `agentevals show` reads it) whose `model_call` events carry the `case` they belong to.
A case whose request is unchanged replays from here; the file is rewritten, atomically, only when a
session recorded something new.
"""

from __future__ import annotations

import datetime as dt
import os
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..contract import environment_contract
from ..errors import GoldenError, TraceError
from ..fileio import atomic_path
from ..replay import Interaction
from ..trace.events import TRACE_VERSION
from ..trace.reader import TornTraceWarning, TraceReader
from ..trace.totals import RunTotals
from ..trace.writer import TraceWriter

STORE_SUFFIX = ".decisions.trace.jsonl"
# Fields of a stored model_call that are about the stored file, not the exchange.
_STAMP = frozenset({"type", "seq", "t", "step", "case"})


def store_path(goldens_path: Path) -> Path:
    """Where the recorded decisions of a goldens file live."""
    return goldens_path.with_name(goldens_path.stem + STORE_SUFFIX)


@dataclass(frozen=True)
class Exchange:
    """One recorded model exchange of a case: the fields of a trace's model_call event (request
    headers left out: what was asked is the body, and headers may carry credentials)."""

    fields: Mapping[str, Any]
    interaction: Interaction = field(compare=False)

    @classmethod
    def of(cls, fields: Mapping[str, Any]) -> Exchange:
        kept = {key: value for key, value in fields.items() if key not in _STAMP}
        request = {key: value for key, value in (kept.get("request") or {}).items() if key != "headers"}
        kept["request"] = request
        response = dict(kept.get("response") or {})
        interaction = Interaction(0, 0, None, request, response, is_model=kept.get("provider") != "http")
        return cls(kept, interaction)

    def as_data(self) -> dict[str, Any]:
        return dict(self.fields)


class DecisionStore:
    """The recorded exchanges of one goldens file, by case id, read on first use."""

    def __init__(self, path: Path, display: str | None = None) -> None:
        self.path = path
        self.display = display or str(path)
        self._by_case: dict[str, list[Exchange]] | None = None

    def exchanges(self, case_id: str) -> list[Exchange]:
        return list(self.by_case().get(case_id, ()))

    def by_case(self) -> dict[str, list[Exchange]]:
        if self._by_case is None:
            self._by_case = self._read()
        return self._by_case

    def _read(self) -> dict[str, list[Exchange]]:
        by_case: dict[str, list[Exchange]] = {}
        if self.path.is_symlink():
            # Never read through: a link in a pull request can point at any file on the machine (the
            # goldens file beside it and the folders above are checked as it is collected).
            raise GoldenError(
                self.display,
                f"is a symbolic link (to {os.readlink(self.path)}), and recorded decisions are never "
                "read through one",
                "replace the link with the decisions file it stands for, or delete it and re-record "
                "with --agentevals-record=new",
            )
        if not self.path.exists():
            return by_case
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", TornTraceWarning)
                for event in TraceReader(self.path):
                    case = event.get("case")
                    if event["type"] == "model_call" and isinstance(case, str):
                        by_case.setdefault(case, []).append(Exchange.of(event))
        except TraceError as exc:
            raise GoldenError(
                self.display,
                f"recorded decisions cannot be read: {exc}",
                "delete the file and re-record with --agentevals-record=new",
            ) from None
        return by_case


def write_store(
    path: Path, by_case: Mapping[str, Iterable[Mapping[str, Any]]], order: Iterable[str], scenario: str
) -> int:
    """Write the exchanges of each case in `order` (cases not in it are dropped) as one trace, atomically.
    Returns how many exchanges were written."""
    cases = {case_id: list(by_case.get(case_id, ())) for case_id in order}
    if not any(cases.values()):
        path.unlink(missing_ok=True)
        return 0
    written = 0
    totals = RunTotals()
    with atomic_path(path) as temp, TraceWriter(temp) as writer:
        writer.write(
            {
                "type": "run_start",
                "v": TRACE_VERSION,
                "run_id": f"goldens:{scenario}",
                "agent": "agentevals-goldens",
                "seed": None,
                "started_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                "contract": environment_contract(()),
            }
        )
        for step, (case_id, exchanges) in enumerate(cases.items(), start=1):
            for fields in exchanges:
                written += 1
                stamp = {"type": "model_call", "seq": written, "t": 0.0, "step": step, "case": case_id}
                event = {**stamp, **Exchange.of(fields).as_data()}
                writer.write(event)
                totals.add(event)
        writer.write(
            {
                "type": "run_end",
                "seq": written + 1,
                "t": 0.0,
                "status": "ok",
                "totals": totals.as_run_end(),
            }
        )
    return written
