"""Running one step case: get the decision through the user's harness, with the model call replayed
or recorded, then check it. Knows nothing of pytest."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..guards.prices import PriceTable
from ..recording.patching import patched
from ..replay import serving_at_sdk
from ..settings import Rule
from .case import StepCase
from .cassette import StepCassette
from .decision import Decision
from .expectation import Outcome
from .judge import Judge
from .store import Exchange

Decide = Callable[[StepCase], Any]


@dataclass
class CaseRun:
    case: StepCase
    decision: Decision
    outcome: Outcome
    cassette: StepCassette


def run_case(
    case: StepCase,
    decide: Decide,
    recorded: Sequence[Exchange] = (),
    mode: str = "none",
    judge: Judge | None = None,
    prices: PriceTable | None = None,
    label: str | None = None,
    via: str = "sdk",
    normalize: Sequence[Rule] = (),
) -> CaseRun:
    """Decide and check one case. Raises StaleGolden when a request changed and recording is off.

    With `via="sdk"` (as `replay_via`), the SDK's Messages requests are answered at its request
    method when they provably are the recorded ones (`replay/sdk.py`); everything else, and every
    request with `via="http"`, goes through vcrpy's patching to the cassette, which answers, records
    or refuses it. `normalize` are `replay_normalize`'s rules: volatile text folded as a replay folds it."""
    cassette = StepCassette(label or case.label, recorded, mode, prices, normalize)
    at_sdk = serving_at_sdk(cassette.serve) if via == "sdk" else contextlib.nullcontext()
    with patched(cassette, cassette.label), at_sdk:
        try:
            decision = Decision.of(decide(case))
        except Exception:
            cassette.raise_if_stale()  # the SDK's error about the refused request is not the story
            raise
        cassette.raise_if_stale()
        outcome = case.expect.check(decision, judge)
        cassette.raise_if_stale()  # the judge's own call
    return CaseRun(case, decision, outcome, cassette)
