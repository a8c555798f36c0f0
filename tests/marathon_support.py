"""Hand-made marathon results for the marathon tests: a seed's result with the metrics a verdict reads."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pytest_agentevals import metrics
from pytest_agentevals.marathon.results import Plan, SeedResult

_START = {
    "type": "run_start",
    "v": 1,
    "run_id": "r",
    "agent": "hand",
    "seed": 0,
    "started_at": "2026-01-01T00:00:00.000+00:00",
    "contract": {},
}
_END = {"type": "run_end", "seq": 1, "t": 0.1, "status": "ok", "totals": {}}
BASE = metrics.compute([_START, _END])
TEST = "tests/test_agent.py::test_marathon"


def result(
    seed: int,
    *,
    passed: bool = True,
    auc: float | None = None,
    cost: float = 0.01,
    loop_rate: float | None = 0.0,
    status: str = "ok",
    commit: str | None = "c0ffee",
    test: str = TEST,
    plan: Plan | None = None,
    restarts: int = 0,
    outcome: str = "passed",
    trace: str | None = None,
    branch: str | None = None,
    unpriced: bool = False,
) -> SeedResult:
    """One seed's result: its verified pass, progress-AUC (1.0 for a pass, 0.3 otherwise, unless
    given), cost, loop rate and status."""
    run_metrics = dataclasses.replace(
        BASE,
        seed=seed,
        run_id=f"run-{seed}-{commit}",
        verified_pass=passed,
        progress_auc=auc if auc is not None else (1.0 if passed else 0.3),
        cost_usd=cost,
        loop_rate=loop_rate,
        status=status,
        restarts=restarts,
        unpriced_models=["my-finetune"] if unpriced else [],
    )
    return SeedResult(
        test=test,
        seed=seed,
        commit=commit,
        outcome=outcome,
        metrics=run_metrics,
        plan=plan or Plan(tuple(range(5))),
        trace=trace,
        branch=branch,
    )


def write_results(path: Path, results: Iterable[SeedResult]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r.to_json()) + "\n" for r in results), encoding="utf-8")
    return path


def line_of(result_: SeedResult, **changes: Any) -> str:
    data = result_.to_json()
    data.update(changes)
    return json.dumps(data)
