"""Fork and re-drive: is step k where the run was decided?

At step k of a failing run, each re-drive replays the run strictly up to k (every request before k
must be the recorded one, answered with the recorded response), puts another decision at k (the
closest passing run's, at the same point of its work, or one you give), and runs forward live against
a seeded simulated model, under the guards of a budget and recorded into its own trace. N re-drives,
each with its own seed, give a recovery rate and its 95% (Wilson) interval:

- "fixed at k: 9/10 (0.60-0.98)" when the whole interval is at or above `min_rate`;
- "not at k: 0/10 (0.00-0.28)" when the whole interval is below it;
- "cannot tell" otherwise, or when the re-drives did not follow the recording up to k.

The agent is driven through one seam, `drive(base_url, task, workspace)`: run the harness on the
recorded run's task against the model at `base_url`. The model after k is `model(seed)`, a policy of
the simulated server (`pytest_agentevals.sim`).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import AgentEvalsError, SimError, TriageError
from ..guards import Budget, guards_for
from ..metrics import compute_file
from ..recording import Recorder
from ..sim import Reply, SimRequest, SimServer
from ..stats import Interval, wilson
from .spectrum import aligned_decision, closest_passing
from .steps import Run, Step, load_run

Policy = Callable[[SimRequest], Reply]
Drive = Callable[[str, Any, Path], Any]
COMPARED = ("system", "tools", "messages")  # what a replayed request must repeat exactly
# Without a budget of the run's own, the model side still cuts a re-drive off: after this many live
# calls per step the original run had after k (and at least MIN_LIVE_CALLS), it answers no more.
LIVE_CALLS_PER_STEP = 10
MIN_LIVE_CALLS = 50


@dataclass
class Redrive:
    """One re-drive: whether it recovered (a verified pass), what it cost, and its trace."""

    seed: int
    trace: Path
    passed: bool = False
    status: str | None = None
    model_calls: int = 0
    live_calls: int = 0  # the calls answered by the live model, after k
    tokens: int = 0
    cost_usd: float = 0.0
    diverged: str | None = None  # where it stopped following the recording before k
    error: str | None = None  # what ended the agent, when it raised

    def to_json(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "trace": str(self.trace),
            "passed": self.passed,
            "status": self.status,
            "model_calls": self.model_calls,
            "live_calls": self.live_calls,
            "tokens": self.tokens,
            "cost_usd": self.cost_usd,
            "diverged": self.diverged,
            "error": self.error,
        }


@dataclass
class ForkResult:
    run: Run
    step: Step
    replacement: list[dict[str, Any]]
    source: str  # where the replacement came from
    min_rate: float
    budget: Budget | None = None  # the guards' budget of every re-drive
    cap: int = 0  # the live model calls a re-drive may make at most
    redrives: list[Redrive] = field(default_factory=list)

    @property
    def followed(self) -> list[Redrive]:
        return [r for r in self.redrives if r.diverged is None]

    @property
    def recovered(self) -> int:
        return sum(1 for r in self.followed if r.passed)

    @property
    def interval(self) -> Interval:
        return wilson(self.recovered, len(self.followed))

    @property
    def verdict(self) -> str:
        """fixed, not, or cannot tell."""
        if not self.followed:
            return "cannot tell"
        if self.interval.low >= self.min_rate:
            return "fixed"
        if self.interval.high < self.min_rate:
            return "not"
        return "cannot tell"

    def line(self) -> str:
        """`fixed at 23: 9/10 (0.60-0.98)`."""
        k = self.step.number
        if not self.followed:
            first = next((r.diverged for r in self.redrives if r.diverged), "no re-drive ran")
            return f"cannot tell at {k}: no re-drive followed the recording up to it ({first})"
        low, high = self.interval.low, self.interval.high
        rate = f"{self.recovered}/{len(self.followed)} ({low:.2f}\N{EN DASH}{high:.2f})"
        words = {"fixed": f"fixed at {k}", "not": f"not at {k}", "cannot tell": f"cannot tell at {k}"}
        return f"{words[self.verdict]}: {rate}"

    @property
    def cost(self) -> dict[str, Any]:
        return {
            "redrives": len(self.redrives),
            "model_calls": sum(r.model_calls for r in self.redrives),
            "live_calls": sum(r.live_calls for r in self.redrives),
            "tokens": sum(r.tokens for r in self.redrives),
            "cost_usd": round(sum(r.cost_usd for r in self.redrives), 6),
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "run": self.run.label,
            "trace": str(self.run.trace),
            "step": self.step.number,
            "verdict": self.verdict,
            "line": self.line(),
            "recovered": self.recovered,
            "n": len(self.followed),
            "interval": [self.interval.low, self.interval.high],
            "min_rate": self.min_rate,
            "replacement": self.replacement,
            "source": self.source,
            "cost": self.cost,
            "cap": self.cap,
            "redrives": [r.to_json() for r in self.redrives],
        }


class _Fork:
    """The model side of one re-drive: the recording up to k, the replacement at k, live after."""

    def __init__(
        self, prefix: Sequence[Step], replacement: Sequence[Mapping[str, Any]], live: Policy, cap: int
    ) -> None:
        self.prefix = prefix
        self.replacement = replacement
        self.live = live
        self.cap = cap
        self.capped = False
        self.calls = 0
        self.live_calls = 0
        self.diverged: str | None = None

    def __call__(self, request: SimRequest) -> Reply:
        index = self.calls
        self.calls += 1
        # A refusal is the simulated server's error answer (500, not retried; the server is not strict,
        # so it keeps the error rather than raising it at the end): the agent stops there.
        if self.diverged is not None:
            raise SimError(f"the re-drive left the recording ({self.diverged})")
        if index < len(self.prefix):
            recorded = self.prefix[index]
            for key in COMPARED:
                if _canonical(request.body.get(key)) != _canonical(recorded.request.get(key)):
                    self.diverged = f"step {recorded.number}'s request differs in its {key}"
                    raise SimError(f"the re-drive left the recording ({self.diverged})")
            return Reply(content=[dict(block) for block in recorded.content])
        if index == len(self.prefix):
            return Reply(content=[dict(block) for block in self.replacement])
        if self.live_calls >= self.cap:
            self.capped = True
            raise SimError(f"the re-drive reached its cap of {self.cap} live model calls")
        self.live_calls += 1
        return self.live(request)


class _Switch:
    """One simulated server for every re-drive of a fork: each re-drive puts its own `_Fork` in."""

    def __init__(self) -> None:
        self.current: _Fork | None = None

    def __call__(self, request: SimRequest) -> Reply:
        if self.current is None:
            raise SimError("a request reached the fork's model between re-drives")
        return self.current(request)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def replacement_for(run: Run, step: int, passing: Sequence[Run]) -> tuple[list[dict[str, Any]], str]:
    """The decision of the closest passing run at the same point of its work as `run`'s step."""
    closest, _ = closest_passing(run, passing)
    if closest is None:
        raise TriageError(
            f"{run.trace} step {step}: no passing run to take a decision from: give passing runs "
            "(--passing TRACE) or the decision itself (--decision JSON)"
        )
    theirs = aligned_decision(run, step, closest)
    if theirs is None:
        raise TriageError(
            f"{run.trace} step {step}: {closest.label} never reached the same point of its work "
            f"({run.step(step).verified} tasks verified): give the decision itself (--decision JSON)"
        )
    return [dict(b) for b in theirs.content], f"{closest.label} step {theirs.number}: {theirs.decision}"


def fork(
    run: Run | str | Path,
    step: int,
    *,
    drive: Drive,
    model: Callable[[int], Policy],
    replacement: Sequence[Mapping[str, Any]] | None = None,
    passing: Sequence[Run] = (),
    n: int = 10,
    seed: int = 0,
    budget: Budget | None = None,
    min_rate: float = 0.5,
    workdir: str | Path | None = None,
) -> ForkResult:
    """Fork `run` at `step` and re-drive it `n` times (seeds `seed`..`seed + n - 1`). The decision at
    the step is `replacement` (content blocks), else the closest of `passing` runs' at the same point.
    Each re-drive runs under the guards of `budget` (default: the budget the run was recorded under,
    so the agent sees what it saw; none if it had none), is cut off by the model side after
    `LIVE_CALLS_PER_STEP` live calls per step the run had after k, and is recorded in `workdir`
    (default: a temporary folder, removed after)."""
    run = run if isinstance(run, Run) else load_run(run)
    target = run.step(step)
    if n < 1:
        raise TriageError(f"-n {n}: re-drive at least once (-n 10)")
    if not 0 < min_rate <= 1:
        raise TriageError(f"--min-rate {min_rate}: a rate in (0, 1], e.g. 0.5")
    if replacement is None:
        content, source = replacement_for(run, step, passing)
    else:
        content = [dict(block) for block in replacement]
        source = "given"
        try:
            Reply(content=content)
        except AgentEvalsError as exc:
            raise TriageError(
                f"the decision to put at step {step} is not one the API returns: {exc}"
            ) from None
    if budget is None and run.budget:
        budget = Budget.parse(f"{run.trace}: run_start budget", dict(run.budget))
    prefix = [s for s in run.steps if s.number < target.number]
    after = len(run.steps) - len(prefix)
    cap = max(MIN_LIVE_CALLS, LIVE_CALLS_PER_STEP * after)
    result = ForkResult(run, target, content, source, min_rate, budget=budget, cap=cap)
    switch = _Switch()
    with (
        tempfile.TemporaryDirectory(prefix="agentevals-fork-") as scratch,
        SimServer(switch, strict=False) as server,
    ):
        folder = Path(workdir) if workdir is not None else Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        for index in range(n):
            redrive = Redrive(seed + index, folder / f"fork-{step}-seed-{seed + index}.trace.jsonl")
            switch.current = forked = _Fork(prefix, content, model(seed + index), cap)
            with tempfile.TemporaryDirectory(prefix="agentevals-redrive-") as workspace:
                try:
                    with Recorder(
                        redrive.trace,
                        agent=f"{run.label} forked at {step}",
                        seed=redrive.seed,
                        task=run.task,
                        guards=guards_for(budget) if budget is not None else (),
                    ):
                        drive(server.url, run.task, Path(workspace))
                except Exception as exc:  # the agent's crash is an outcome of the re-drive
                    redrive.error = f"{type(exc).__name__}: {exc}"[:300]
            switch.current = None
            metrics = compute_file(redrive.trace)
            redrive.passed = metrics.verified_pass and forked.diverged is None
            redrive.status = metrics.status
            redrive.model_calls = metrics.model_calls
            redrive.live_calls = forked.live_calls
            redrive.tokens = sum(metrics.tokens.values())
            redrive.cost_usd = metrics.cost_usd
            redrive.diverged = forked.diverged
            if forked.diverged and budget is not None and run.budget and budget.as_dict() != dict(run.budget):
                redrive.diverged = forked.diverged + (
                    "; the budget differs from the one the run was recorded under, and an agent told "
                    "its budget sends other requests"
                )
            if forked.capped:
                redrive.error = f"cut off after {cap} live model calls (the fork's cap)"
            if forked.calls <= len(prefix) and forked.diverged is None:
                redrive.diverged = f"the agent stopped after {forked.calls} model calls, before step {step}"
            result.redrives.append(redrive)
    return result
