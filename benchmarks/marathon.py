"""Marathon: the example's five-seed marathon on two xdist workers against one process, and the marathon
fixture's overhead on one seed against the example's run bare.

1. `xdist_speedup`: `pytest -m marathon` over the example marathon (marathons/), with `-n 0` and with
   `-n 2`, alternately, each as a subprocess — pytest's and xdist's start-up included, as a user pays
   them; the ratio of the median wall times (aim: over 1.6 on two cores). The example's seeds last
   about a second and a night's last hours, so the seeds' work is scaled (`--tasks`, default 200 tasks a
   seed, the call budget with it) until the seeds, not start-up, take the time; the example exactly as
   it is (12 tasks) is measured too.
   Bytecode caches are on for these sessions, as on a developer's machine (see `session`).
2. `overhead_ratio`: one seed of the example marathon in this process through the fixture's engine —
   `SeedRun`: a recorder under the marathon's guards, the run hook, the result measured from the trace
   and appended to a results file — against `taskrunner.run(...)` with the same faults, bare; the
   ratio of the median wall times (aim: under 1.15), and of CPU times.

The machine is printed first and last: its load, and `two_process_speedup`, what two processes of
pure CPU work gain over one right then — the ceiling for `xdist_speedup` on a shared machine. Run from
the repository root:

    python benchmarks/marathon.py [--quick] [--tasks N]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import _figures as figures  # benchmarks/: the folder of the script run

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # the examples package and marathons/conftest.py

from examples import taskrunner  # noqa: E402
from marathons import conftest as example  # noqa: E402
from pytest_agentevals import AgentRun, Budget  # noqa: E402
from pytest_agentevals.guards import guards_for  # noqa: E402
from pytest_agentevals.lifecycle import RunSpec  # noqa: E402
from pytest_agentevals.marathon import SeedRun  # noqa: E402
from pytest_agentevals.marathon.results import Plan, append_result, trace_name  # noqa: E402

EXAMPLE = REPO / "marathons" / "test_taskrunner_marathon.py"
EXAMPLE_TASKS = '"tasks": 12'
EXAMPLE_CALLS = "max_calls=100"
EXAMPLE_COST = "max_cost_usd=1.0"
SEED = 0  # weather only: the seed most like a plain night's run


emit = partial(figures.emit, "marathon")


def budget_for(tasks: int) -> tuple[int, float]:
    """The example's per-run budget (100 calls, $1 for 12 tasks), scaled with the tasks."""
    return max(100, tasks * 8), max(1.0, tasks / 10)


def marathon_folder(root: Path, tasks: int) -> Path:
    """A copy of the example marathon whose seeds each work through `tasks` tasks."""
    folder = root / f"marathon-{tasks}"
    folder.mkdir()
    source = EXAMPLE.read_text(encoding="utf-8")
    if any(text not in source for text in (EXAMPLE_TASKS, EXAMPLE_CALLS, EXAMPLE_COST)):
        raise SystemExit(f"{EXAMPLE} changed: update benchmarks/marathon.py's scaling of it")
    calls, cost = budget_for(tasks)
    scaled = (
        source.replace(EXAMPLE_TASKS, f'"tasks": {tasks}')
        .replace(EXAMPLE_CALLS, f"max_calls={calls}")
        .replace(EXAMPLE_COST, f"max_cost_usd={cost}")
    )
    (folder / EXAMPLE.name).write_text(scaled, encoding="utf-8")
    (folder / "conftest.py").write_text((REPO / "marathons" / "conftest.py").read_text(), encoding="utf-8")
    return folder


def session(folder: Path, workers: int) -> tuple[float, float]:
    """Wall and CPU seconds (the session's processes, workers included) of one `pytest -m marathon`
    over the folder, as a subprocess."""
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-m",
        "marathon",
        "-q",
        "-p",
        "no:cacheprovider",
        # As this repository's own pytest options do (docs/frameworks.md): langsmith, which the test
        # extra's langchain brings, loads a plugin into every worker, about 0.9 CPU-s each, that is
        # neither this plugin's nor the marathon's cost.
        "-p",
        "no:langsmith_plugin",
        "--agentevals-history=off",
        "--agentevals-rerun-seeds",
        "--agentevals-sha=bench",
        f"--agentevals-marathons-dir={folder / 'out'}",
        "-n",
        str(workers),
    ]
    # Bytecode as a user's machine keeps it: with PYTHONDONTWRITEBYTECODE set (as on some CI images)
    # pytest rewrites the asserts of every plugin module again in each xdist worker, seconds a worker.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(REPO)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        command, cwd=folder, env=env, capture_output=True, text=True, timeout=900, check=False
    )
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    if done.returncode != 0 or "5 passed" not in done.stdout:
        raise SystemExit(f"the marathon did not pass:\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}")
    return elapsed, cpu


def speedup(root: Path, tasks: int, repeats: int) -> None:
    folder = marathon_folder(root, tasks)
    session(folder, 0)  # warm the file system and the bytecode caches
    alone: list[tuple[float, float]] = []
    spread: list[tuple[float, float]] = []
    for _ in range(repeats):
        alone.append(session(folder, 0))  # alternate, so drift in the load falls on both alike
        spread.append(session(folder, 2))
    case = f"5 seeds x {tasks} tasks"
    wall_alone = statistics.median(run[0] for run in alone)
    wall_spread = statistics.median(run[0] for run in spread)
    emit(case, "seconds_n0", wall_alone)
    emit(case, "seconds_n2", wall_spread)
    emit(case, "xdist_speedup", wall_alone / wall_spread)
    # CPU seconds per wall second of the -n 2 sessions: near 2 when both workers had a core of their own,
    # near 1 when the machine's other load left them one between them.
    emit(case, "cores_used_n2", statistics.median(cpu / wall for wall, cpu in spread))


def bare(tasks: int, workspace: Path) -> tuple[float, float]:
    started, cpu = time.perf_counter(), time.process_time()
    result = taskrunner.run(
        tasks,
        seed=SEED,
        workspace=workspace,
        stream=True,
        faults=example.faults_for(SEED, crash=False),
        max_retries=2,
        let_it_crash=True,
    )
    if result.status != "ok":
        raise SystemExit(f"the bare run ended {result.status}: not comparing like runs")
    return time.perf_counter() - started, time.process_time() - cpu


def through_marathon(tasks: int, root: Path, index: int) -> tuple[float, float]:
    """One seed as the agentevals_marathon fixture runs it (its engine, without pytest around it)."""
    test = "marathons/test_taskrunner_marathon.py::test_taskrunner_marathon"
    plan = Plan(tuple(range(5)), thresholds={"min_pass_rate": 0.5, "min_progress_auc": 0.6})
    out = root / f"out-{index}"
    started, cpu = time.perf_counter(), time.process_time()
    calls, cost = budget_for(tasks)
    spec = RunSpec(
        test,
        agent="test_taskrunner_marathon",
        task={"agent": "taskrunner", "tasks": tasks},
        seed=SEED,
        trace=out / trace_name(test, SEED),
        workspace=root / f"ws-marathon-{index}",
        guards=tuple(guards_for(Budget(max_calls=calls, max_cost_usd=cost, stall_calls=6))),
        runner=lambda seed_run: example.pytest_agentevals_run_agent(
            AgentRun("marathon", seed_run.task, seed_run, seed=seed_run.seed, workspace=seed_run.workspace)
        ),
    )
    run = SeedRun(spec, trace_name=trace_name(test, SEED), max_restarts=2)
    run.start()
    try:
        run.run_agent()
    finally:
        run.close()
    result = run.result("passed", plan=plan, commit="bench")
    append_result(out / "results.jsonl", result)
    elapsed = time.perf_counter() - started, time.process_time() - cpu
    if result.status != "ok":
        raise SystemExit(f"the marathon's seed ended {result.status}: not comparing like runs")
    return elapsed


def overhead(root: Path, tasks: int, repeats: int) -> None:
    bare(tasks, root / "ws-warm-bare")  # warm up imports, the SDK and the file system
    through_marathon(tasks, root, -1)
    plain: list[tuple[float, float]] = []
    fixture: list[tuple[float, float]] = []
    for index in range(repeats):
        plain.append(bare(tasks, root / f"ws-bare-{index}"))
        fixture.append(through_marathon(tasks, root, index))
    case = f"1 seed x {tasks} tasks"
    wall_plain = statistics.median(run[0] for run in plain)
    wall_fixture = statistics.median(run[0] for run in fixture)
    emit(case, "seconds_bare", wall_plain)
    emit(case, "seconds_marathon", wall_fixture)
    emit(case, "overhead_ratio", wall_fixture / wall_plain)
    cpu = statistics.median(run[1] for run in fixture) / statistics.median(run[1] for run in plain)
    emit(case, "cpu_overhead_ratio", cpu)


def _burn(count: int) -> float:
    started = time.perf_counter()
    total = 0
    for number in range(count):
        total += number * number
    return time.perf_counter() - started


def two_process_speedup(count: int = 10_000_000) -> float:
    """What two processes of pure CPU work gain over one, on this machine now: 2.0 with two free
    cores, 1.0 when the machine's other load leaves one. The ceiling for `xdist_speedup`."""
    one = _burn(count)
    with multiprocessing.Pool(2) as pool:
        started = time.perf_counter()
        pool.map(_burn, [count, count])
        two = time.perf_counter() - started
    return 2 * one / two


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--tasks", type=int, default=200, help="tasks per seed for the scaled runs")
    args = parser.parse_args()
    repeats = 1 if args.quick else 3
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    emit("machine", "cpus", float(os.cpu_count() or 0))
    emit("machine", "load_1min_at_start", load[0])
    emit("machine", "two_process_speedup_at_start", two_process_speedup())
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        speedup(root, args.tasks, repeats)
        speedup(root, 12, repeats)  # the example exactly as it is
        overhead(root, args.tasks, 2 if args.quick else 5)
    emit("machine", "load_1min_at_end", os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan"))
    emit("machine", "two_process_speedup_at_end", two_process_speedup())


if __name__ == "__main__":
    main()
