"""Triage's cost on a 300-step run, beside a plain re-run of the marathon it came from.

The marathon: the planted-mistake agent (examples/taskrunner/planted.py) on 110 tasks over five
seeds, the flaw kept for tasks above 95, so two seeds fail near their end (around step 280 of 300)
and three pass. The plain re-run records the five seeds again; then, on one failing seed:
- rank over the five traces (no model call);
- fork at the planted step, N = 10 re-drives: model calls in all, and live ones against the aim of
  at most N x (steps after k) (the failing run stops a few steps after its mistake, a recovered
  re-drive does the work left: also against N x the closest passing run's steps after that point);
- shrink of the planted step: how many times the agent was asked (each a re-run of a prefix of the
  context), against the aim of at most 20, and the case's size in steps.
Each figure is a ratio to the plain re-run (time, model calls) or to its aim. Run from the repository
root:

    python benchmarks/triage.py [--quick]

(`--quick`: 40 tasks, the flaw above task 30, N = 5.)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _figures as figures  # benchmarks/: the folder of the script run

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from examples.taskrunner import planted
from pytest_agentevals import read_trace
from pytest_agentevals.guards import Budget
from pytest_agentevals.sim import SimRequest
from pytest_agentevals.triage import fork, load_runs, rank, shrink

BENCH = "triage"


def model_calls(trace: Path) -> int:
    return sum(1 for event in read_trace(trace) if event.get("type") == "model_call")


def pick_seeds(tasks: int, after: int) -> tuple[list[int], list[int]]:
    """Two seeds meeting the flaw once (late), three never meeting it."""
    once = [s for s in range(300) if len(planted.triggers(tasks, s, after)) == 1]
    never = [s for s in range(300) if not planted.triggers(tasks, s, after)]
    return once[:2], never[:3]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="40 tasks and N = 5")
    args = parser.parse_args()
    tasks, after, n = (40, 30, 5) if args.quick else (110, 95, 10)
    failing, passing = pick_seeds(tasks, after)
    case = f"{tasks} tasks"

    def model(seed: int) -> planted.BlunderModel:
        return planted.BlunderModel(seed, after=after)

    def decide(body: Any) -> list[dict[str, Any]]:
        reply = planted.BlunderModel(0, after=after)(SimRequest(index=0, body=dict(body), headers={}))
        return [dict(block) for block in reply.content]

    with tempfile.TemporaryDirectory(prefix="bench-triage-") as scratch:
        folder = Path(scratch)
        started = time.perf_counter()
        budget = Budget(max_calls=4 * tasks)  # room for the whole run: the flaw, not the budget, ends it
        runs = planted.record_runs(folder, [*failing, *passing], tasks, after=after, budget=budget)
        rerun_s = time.perf_counter() - started
        rerun_calls = sum(model_calls(run.trace) for run in runs)
        bad = runs[0]
        assert bad.mistake_step is not None, "the first failing seed did not meet the flaw"
        steps = model_calls(bad.trace)
        after_k = steps - bad.mistake_step + 1
        figures.emit(BENCH, case, "failing_run_steps", steps, digits=0)
        figures.emit(BENCH, case, "planted_step", bad.mistake_step, digits=0)
        figures.emit(BENCH, case, "rerun_seconds", rerun_s, digits=2)
        figures.emit(BENCH, case, "rerun_model_calls", rerun_calls, digits=0)

        started = time.perf_counter()
        loaded = load_runs(run.trace for run in runs)
        ranking = rank(loaded)
        rank_s = time.perf_counter() - started
        top = [c.step.number for c in ranking.of(str(bad.trace)).top(3)]
        figures.emit(BENCH, case, "rank_seconds_ratio_to_rerun", rank_s / rerun_s)
        figures.emit(BENCH, case, "rank_planted_step_in_top3", float(bad.mistake_step in top), digits=0)

        failing_run = next(r for r in loaded if str(r.trace) == str(bad.trace))
        started = time.perf_counter()
        forked = fork(
            failing_run, bad.mistake_step, drive=planted.drive, model=model, passing=ranking.passing, n=n
        )
        fork_s = time.perf_counter() - started
        figures.emit(BENCH, case, "fork_verdict_fixed", float(forked.verdict == "fixed"), digits=0)
        figures.emit(BENCH, case, "fork_seconds_ratio_to_rerun", fork_s / rerun_s)
        figures.emit(BENCH, case, "fork_model_calls_ratio_to_rerun", forked.cost["model_calls"] / rerun_calls)
        figures.emit(
            BENCH,
            case,
            "fork_live_calls_ratio_to_aim",  # aim: at most N x (steps after k)
            forked.cost["live_calls"] / (n * after_k),
            n=n,
            steps_after_k=after_k,
        )
        # The failing run ends a few steps after its mistake; a recovered re-drive does the work left,
        # which the closest passing run did in this many steps after the same point.
        source = forked.source.split(":")[0]  # "seed S step J"
        closest = next(r for r in ranking.passing if source.startswith(r.label + " "))
        aligned = int(source.rsplit(" ", 1)[1])
        work_left = len([s for s in closest.steps if s.number >= aligned])
        figures.emit(
            BENCH,
            case,
            "fork_live_calls_ratio_to_work_left",
            forked.cost["live_calls"] / (n * work_left),
            n=n,
            passing_steps_after=work_left,
        )

        started = time.perf_counter()
        shrunk = shrink(failing_run, bad.mistake_step, decide)
        shrink_s = time.perf_counter() - started
        figures.emit(BENCH, case, "shrink_seconds_ratio_to_rerun", shrink_s / rerun_s)
        figures.emit(BENCH, case, "shrink_prefix_reruns_ratio_to_aim", shrunk.tests / 20, reruns=shrunk.tests)
        figures.emit(BENCH, case, "shrink_case_steps_share", shrunk.steps / steps, case_steps=shrunk.steps)
        total = rank_s + fork_s + shrink_s
        figures.emit(BENCH, case, "triage_seconds_ratio_to_rerun", total / rerun_s)


if __name__ == "__main__":
    main()
