"""The contract guard of a resumed leg: the request keys of a checkpoint's contract (`model`,
`request.*`, `system_sha256`, `tools.*`, see `contract.py`) against the leg's first model request,
before it leaves — the harness says what they are by sending them. The keys known before anything
runs (Python, packages, what the harness declares) are checked at boot (`Fixture.check_contract`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..contract import Drift, Tolerance, compare_request, enforce, is_request_key, request_contract, table
from ..guards.protocol import Call, Guard, Ruling


class ContractGuard(Guard):
    """Checks the request keys of a contract (`model`, `request.*`, `system_sha256`, `tools.*`)
    against the leg's first model request, before it leaves. Under `fail`, a drift raises
    `ContractDrift` from the SDK call and ends the run as `error` (no request leaves, and every later
    one is refused); under `warn` it writes a `guard` event with `action: warn`. `drifts` keeps what
    it found."""

    name = "contract"

    def __init__(
        self,
        recorded: Mapping[str, Any],
        policy: str,
        where: str | Path,
        fixture: str | None,
        tolerate: Sequence[Tolerance] = (),
    ) -> None:
        self.recorded = {key: value for key, value in recorded.items() if is_request_key(key)}
        self.policy = policy
        self.where = where
        self.fixture = fixture
        self.tolerate = tuple(tolerate)
        self.checked = False
        self.drifts: list[Drift] = []

    def before_call(self, call: Call) -> Ruling | None:
        if self.checked or self.policy == "skip" or not self.recorded:
            return None
        self.checked = True
        self.drifts = compare_request(self.recorded, request_contract(call.body), self.tolerate)
        if not self.drifts:
            return None
        enforce(self.drifts, self.policy, self.where, self.fixture)
        return Ruling.warn(
            "the first model request drifted from the checkpoint's contract:\n" + table(self.drifts),
            keys=[drift.key for drift in self.drifts],
        )
