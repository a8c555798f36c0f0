"""What the step cases of one session share: recorded decisions read once per goldens file, and the
writes they ask for (new recordings, re-blessed expectations), done once at the end.

Items hand their writes over in their reports, so under pytest-xdist the controller alone writes;
without xdist the same path runs in the one process. Every write is atomic.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import GoldenError
from ..fileio import write_atomic
from ..guards.prices import PriceTable
from ..trace.scrub import Scrubber
from .loader import display_path, load_goldens, parse_goldens
from .store import DecisionStore, store_path, write_store
from .yamlio import replace_expect


@dataclass
class Flushed:
    """What the end of a session wrote, for the terminal summary."""

    recorded: list[str] = field(default_factory=list)
    reblessed: list[tuple[str, str]] = field(default_factory=list)  # (node id, diff)
    errors: list[str] = field(default_factory=list)


class Goldens:
    def __init__(self, rootdir: Path, prices: Mapping[str, Mapping[str, float]] | None = None) -> None:
        self.rootdir = rootdir
        self.prices = PriceTable(prices)
        self._stores: dict[Path, DecisionStore] = {}
        self._recorded: dict[Path, dict[str, list[dict[str, Any]]]] = {}
        self._reblessed: dict[Path, dict[str, Any]] = {}
        self._diffs: list[tuple[str, str]] = []

    def display(self, path: Path) -> str:
        return display_path(path, self.rootdir)

    def store(self, goldens_path: Path) -> DecisionStore:
        store = self._stores.get(goldens_path)
        if store is None:
            path = store_path(goldens_path)
            store = self._stores[goldens_path] = DecisionStore(path, self.display(path))
        return store

    # -- what items report ---------------------------------------------------------------------

    def receive(self, nodeid: str, payload: Mapping[str, Any]) -> None:
        path = Path(payload["file"])
        case = str(payload["case"])
        if "recorded" in payload:
            self._recorded.setdefault(path, {})[case] = list(payload["recorded"])
        if "rebless" in payload:
            self._reblessed.setdefault(path, {})[case] = payload["rebless"]["expect"]
            self._diffs.append((nodeid, str(payload["rebless"]["diff"])))

    # -- the end of the session ----------------------------------------------------------------

    def flush(self) -> Flushed:
        done = Flushed(reblessed=list(self._diffs))
        for path, cases in self._recorded.items():
            try:
                done.recorded.append(self._write_recordings(path, cases))
            except (GoldenError, OSError) as exc:
                done.errors.append(f"could not record decisions for {self.display(path)}: {exc}")
        for path, expects in self._reblessed.items():
            try:
                self._write_expectations(path, expects)
            except (GoldenError, OSError) as exc:
                done.errors.append(f"could not re-bless {self.display(path)}: {exc}")
        self._recorded.clear()
        self._reblessed.clear()
        self._diffs.clear()
        return done

    def _write_recordings(self, path: Path, cases: Mapping[str, list[dict[str, Any]]]) -> str:
        goldens = load_goldens(path, self.display(path))
        target = store_path(path)
        current = DecisionStore(target, self.display(target)).by_case()  # fresh: another run may have written
        by_case: dict[str, list[Any]] = {case: [e.fields for e in items] for case, items in current.items()}
        by_case.update(cases)
        written = write_store(target, by_case, [case.id for case in goldens.cases], goldens.scenario)
        calls = sum(len(items) for items in cases.values())
        return (
            f"recorded {calls} model exchange(s) for {len(cases)} case(s) into {self.display(target)} "
            f"({written} in all)"
        )

    def _write_expectations(self, path: Path, expects: Mapping[str, Any]) -> None:
        display = self.display(path)
        text = path.read_text(encoding="utf-8")
        goldens = parse_goldens(text, path, display)
        scrub = Scrubber().scrub_value  # a decision that held a secret is not blessed with it
        for case_id, expect in expects.items():  # replacing a block keeps every case's position
            text = replace_expect(text, goldens.case(case_id).index, scrub(expect), display)
        parse_goldens(text, path, display)  # never write a file that no longer loads
        write_atomic(path, text)
