"""The decision cache of one step case, as vcrpy's patching sees a cassette (and as the SDK path of
`replay/sdk.py` asks it first, `serve`, for a request that provably is the recorded one).

A request recorded for the case (same canonical request, see `trace/canonical.py`) is answered
from the recording. Any other goes to the real model and is recorded when the record mode allows it
(`new`; `once` for a case with nothing recorded; `all` re-records everything). Otherwise it is
refused from inside the transport with `StaleGolden`, which names what changed and which the SDK
does not retry. Look-up, served responses, request diffs and unretried errors are the replay
engine's (`replay/`); this file only decides per case.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..errors import StaleGolden, loud
from ..guards.prices import PriceTable
from ..recording import exchange
from ..recording.recorder import current_recorder
from ..replay import (
    Folds,
    Interaction,
    Normalizer,
    RequestIndex,
    answers_at_sdk,
    incoming_request,
    what_changed,
)
from ..settings import RECORD_MODES, Rule
from ..trace.canonical import scrubbed_canonical
from ..trace.scrub import Scrubber
from .store import Exchange

REBLESS_FIX = (
    "if the change is intended, run the step cases with --agentevals-record=new where the model is "
    "reachable, and commit the *.decisions.trace.jsonl beside the goldens file"
)


class StepCassette:
    """Plays a case's recorded exchanges by request; records or refuses the rest."""

    write_protected = False

    def __init__(
        self,
        label: str,
        recorded: Sequence[Exchange],
        mode: str = "none",
        prices: PriceTable | None = None,
        normalize: Sequence[Rule] = (),
    ) -> None:
        if mode not in RECORD_MODES:
            raise ValueError(f"record mode {mode!r}: use one of {', '.join(RECORD_MODES)}")
        self.label = label
        self.mode = mode
        self.recorded = list(recorded) if mode != "all" else []
        self._prices = prices or PriceTable()
        # `replay_normalize`'s rules fold the recorded requests and each live one alike, as a replay
        # does; `folds` counts them for the case's report.
        self.normalizer = Normalizer(normalize, "[tool.agentevals] replay_normalize") if normalize else None
        self.folds = Folds(self.normalizer) if self.normalizer is not None else None
        self._recorded_folds: dict[int, Any] = {}
        interactions = [self._folded(item.interaction) for item in self.recorded]
        self._of = {
            id(interaction): item for interaction, item in zip(interactions, self.recorded, strict=True)
        }
        self._index = RequestIndex(interactions)
        self.used: list[Exchange] = []  # what this run was answered with, recorded or new, in order
        self.new: list[Exchange] = []
        self.stale: StaleGolden | None = None
        self._calls = 0
        self._scrubber: Scrubber | None = None

    @property
    def records(self) -> bool:
        """Whether a request with nothing recorded may go to the real model (and be recorded)."""
        return self.mode in ("new", "all") or (self.mode == "once" and not self.recorded)

    # -- what vcrpy asks -------------------------------------------------------------------------

    def _folded(self, interaction: Interaction) -> Interaction:
        if self.normalizer is None:
            return interaction
        canonical = interaction.canonical
        body, folded = self.normalizer.fold(canonical.get("body"))
        copy = dataclasses.replace(
            interaction, _canonical={**canonical, "body": body}, _fingerprint=None, _served=None
        )
        self._recorded_folds[id(copy)] = folded
        return copy

    def _fold(self, canonical: dict[str, Any]) -> tuple[dict[str, Any], list[Any]]:
        if self.normalizer is None:
            return canonical, []
        body, folded = self.normalizer.fold(canonical.get("body"))
        return {**canonical, "body": body}, folded

    def can_play_response_for(self, request: Any) -> bool:
        fields, canonical = incoming_request(request)
        self._calls += 1
        expected = self._index.next_unused()
        canonical, folded = self._fold(canonical)
        found = self._index.take(canonical)
        if found is None:
            # The decisions file holds requests as scrubbed: a live one carrying a secret (a key in a
            # URL, a system prompt) matches once scrubbed alike, and a staleness diff shows no secret.
            canonical, folded = self._fold(self._scrubbed(fields))
            found = self._index.take(canonical)
        if found is not None:
            if self.folds is not None:
                self.folds.add(folded, self._recorded_folds.get(id(found), []))
            self.used.append(self._of[id(found)])
            request._agentevals_response = found.served_response()
            return True
        if self.records:
            request._agentevals_started = time.perf_counter()
            return False
        if self.stale is None:
            self.stale = self._stale(canonical, expected)
        raise loud(self.stale)

    # -- what the SDK path asks (replay/sdk.py) --------------------------------------------------

    def serve(self, path: str, body: Mapping[str, Any], prepare: Callable[[Any], Any]) -> Interaction | None:
        """The recorded exchange to answer a Messages request with at the SDK's request method, taken,
        when the request provably is the one expected next (`sdk.same_body`: no serializing, no
        parsing). None sends it on into the SDK and the HTTP path above, which decides as it always
        has: it would take this same exchange first, so this path only says yes where that one would,
        and a changed request is still found stale there, with the same message."""
        if current_recorder() is not None:
            return None  # a recorder around the case writes what goes over HTTP
        expected = self._index.next_unused()
        if expected is None or not answers_at_sdk(expected, path, body, prepare):
            return None
        self._index.mark_used(expected)
        self._calls += 1
        self.used.append(self._of[id(expected)])
        return expected

    def _scrubbed(self, fields: dict[str, Any]) -> dict[str, Any]:
        if self._scrubber is None:
            self._scrubber = Scrubber()
        return scrubbed_canonical(fields, self._scrubber)

    def play_response(self, request: Any) -> Any:
        return request._agentevals_response

    def append(self, request: Any, response: dict[str, Any]) -> None:
        started = getattr(request, "_agentevals_started", time.perf_counter())
        fields = exchange.model_call_fields(request, response, time.perf_counter() - started, self._prices)
        recorded = Exchange.of(fields)
        self.new.append(recorded)
        self.used.append(recorded)

    def filter_request(self, request: Any) -> Any:
        return request

    # -- staleness -------------------------------------------------------------------------------

    def _stale(self, canonical: dict[str, Any], expected: Any) -> StaleGolden:
        which = "its model request" if self._calls == 1 else f"its model request #{self._calls}"
        why = (
            "recording is off (--agentevals-record=none)"
            if self.mode == "none"
            else "--agentevals-record=once records only cases with nothing recorded"
        )
        if expected is None and self.recorded:
            expected = self.recorded[-1].interaction
        if expected is None:
            return StaleGolden(
                self.label,
                f"has no recorded decision for {which}, and {why}",
                "run the step cases once with --agentevals-record=new where the model is reachable, and "
                "commit the *.decisions.trace.jsonl beside the goldens file",
            )
        changed = what_changed(expected.canonical, canonical)
        first = next(i for i, line in enumerate(changed) if line.startswith("first difference in "))
        lines = [f"    {line}" if line.startswith(" ") else f"    - {line}" for line in changed[: first + 1]]
        lines.extend(f"    {line}" for line in changed[first + 1 :])
        return StaleGolden(
            self.label,
            f"is stale: {which} changed since its decision was recorded, and {why}.\n  what changed:\n"
            + "\n".join(lines),
            REBLESS_FIX,
        )

    def raise_if_stale(self) -> None:
        """Raise the staleness found, even if the harness caught the error the SDK raised."""
        if self.stale is not None:
            raise self.stale
