"""The resume layer's speed, side by side in one process, on one long run of the example agent.

`examples.taskrunner` runs against the seeded simulated model (no key, no network), recorded, for
over 3,000 steps; its checkpoints at steps 100, 1,000 and 3,000 become fixtures. Then:

- boot (restore + contract + state, what `agentevals_resume` does before the leg's recorder
  starts) from the checkpoint at step 100 and at step 3,000, in rounds: each round boots both, into
  fresh folders, in alternating order (so a machine's load drifting over the run falls on both
  alike), each depth `--tries` times (3) with its fastest try kept (load only ever adds time). Per
  depth: `boot_s` (the median round, wall clock) and `boot_cpu_s` (CPU seconds: steadier on a shared
  machine), each with every round's figure (`rounds`) and its spread (`spread`, the slowest round
  over the fastest); then `depth_ratio`, each round's deep boot over its shallow one, as the median
  round with every round's ratio and the worst (`max`). A fixture holds the whole workspace and the
  whole state, never a chain of deltas, so depth alone costs nothing: what grows is the workspace
  itself, one file per task here — `workspace_files` is printed beside;
- `boot_work`: what a boot reads, counted, not timed — trace events, checkpoint state deltas applied,
  fixture bytes hashed — at each depth: equal when boot is depth-independent;
- the same comparison with the workspace held equal: a plain loop of model calls against the simulated
  model checkpoints one unchanging workspace of as many files as the example's at step 3,000, at
  step 100 and at step 3,000: `depth_ratio_same_workspace` (the format's promise, apart from the
  example's growing workspace), per round as above;
- reaching step 1,000 and running a 20-call leg there, two ways: resuming — boot the fixture at step
  1,000 and run the leg through a `ResumeRun` (recorded, guarded, the contract checked) — against
  re-running the recorded run from step 0 to step 1,020: `speedup_vs_rerun` (case "1000 steps"),
  printed with both times it divides (`rerun_s`, `resume_s`), each the median of `--legs` rounds.

Prints one JSON line per figure. `--quick` shrinks the run (a smoke run; not the figures to report).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import _figures as figures  # benchmarks/: the folder of the script run

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import anthropic  # noqa: E402

import pytest_agentevals as ae  # noqa: E402
from examples import taskrunner  # noqa: E402
from pytest_agentevals.lifecycle import RunSpec  # noqa: E402
from pytest_agentevals.resume import ResumeRun, extract  # noqa: E402
from pytest_agentevals.resume.fixture import Fixture  # noqa: E402
from pytest_agentevals.sim import Reply, SimServer  # noqa: E402

SEED = 11
LEG_CALLS = 20
# The opening message lists every task: with over a thousand, it is ~25k tokens, so the harness
# compacts above that (compacting below it would compact at every call).
COMPACT_AT = 40_000


emit = partial(figures.emit, "resume", digits=6)


def record(path: Path, tasks: int, max_steps: int | None = None) -> float:
    """Record the example run (until done, or `max_steps` model calls); returns its seconds."""
    task = {"agent": "taskrunner", "tasks": tasks, "seed": SEED, "stall_at": None, "compact_at": COMPACT_AT}
    overrides = {} if max_steps is None else {"max_steps": max_steps}
    started = time.perf_counter()
    with (
        tempfile.TemporaryDirectory(prefix="bench-resume-") as workspace,
        ae.Recorder(path, agent="taskrunner", seed=SEED, task=task, contract=taskrunner.contract()),
    ):
        taskrunner.run(tasks, seed=SEED, workspace=workspace, compact_at=COMPACT_AT, **overrides)
    return time.perf_counter() - started


def boot(fixture: Fixture, workspace: Path) -> None:
    """What the resume layer does before the leg: the contract, the workspace, the state."""
    fixture.check_contract(taskrunner.contract())
    fixture.restore(workspace)
    fixture.state()


def plain_boot(fixture: Fixture, workspace: Path) -> None:
    """Restore and state alone (the loop declares no contract of the example's)."""
    fixture.check_contract({})
    fixture.restore(workspace)
    fixture.state()


Boot = Callable[[Fixture, Path], None]


def timed_boot(folder: Path, workspace: Path, how: Boot) -> tuple[float, float]:
    """One boot into a fresh folder, opening the fixture afresh as a test does: (wall, CPU) seconds."""
    wall, cpu = time.perf_counter(), time.process_time()
    how(Fixture.open(folder), workspace)
    out = (time.perf_counter() - wall, time.process_time() - cpu)
    shutil.rmtree(workspace)
    return out


def boot_rounds(
    folders: dict[int, Path], scratch: Path, rounds: int, how: Boot, tries: int = 1
) -> dict[int, list[tuple[float, float]]]:
    """Each round boots every depth `tries` times, interleaved, the order alternating round by round;
    a round's figure per depth is its fastest try (a shared machine's load only ever adds time)."""
    depths = sorted(folders)
    times: dict[int, list[tuple[float, float]]] = {at: [] for at in depths}
    for n in range(rounds):
        best: dict[int, list[tuple[float, float]]] = {at: [] for at in depths}
        for k in range(tries):
            for at in depths if (n + k) % 2 == 0 else reversed(depths):
                best[at].append(timed_boot(folders[at], scratch / f"boot-{at}-{n}-{k}", how))
        for at in depths:
            times[at].append((min(t[0] for t in best[at]), min(t[1] for t in best[at])))
    return times


def emit_rounds(times: dict[int, list[tuple[float, float]]], label: str, metric: str, ratio: str) -> None:
    """Per depth the median round and every round (wall and CPU); then each round's depth ratio."""
    shallow, deep = sorted(times)
    for at in (shallow, deep):
        for clock, suffix in ((0, "_s"), (1, "_cpu_s")):
            values = [t[clock] for t in times[at]]
            emit(
                f"{at} steps{label}",
                metric + suffix,
                statistics.median(values),
                rounds=[round(v, 6) for v in values],
                spread=round(max(values) / min(values), 3),
            )
    for clock, suffix in ((0, ""), (1, "_cpu")):
        ratios = [d[clock] / s[clock] for s, d in zip(times[shallow], times[deep], strict=True)]
        emit(
            f"{shallow} vs {deep} steps{label}",
            ratio + suffix,
            statistics.median(ratios),
            rounds=[round(r, 3) for r in ratios],
            max=round(max(ratios), 3),
        )


def boot_work(folder: Path, scratch: Path, how: Boot) -> dict[str, int]:
    """What one boot reads, counted: trace events, state deltas applied, fixture bytes hashed."""
    from pytest_agentevals.resume import fixture as fixture_module
    from pytest_agentevals.trace import delta, reader

    counts = {"trace_events": 0, "state_deltas": 0, "hashed_bytes": 0}
    real_apply, real_iter, real_hash = (
        delta.apply_state,
        reader.TraceReader.__iter__,
        fixture_module.sha256_of,
    )

    def apply_state(*args: Any, **kwargs: Any) -> Any:
        counts["state_deltas"] += 1
        return real_apply(*args, **kwargs)

    def iterate(self: Any) -> Any:
        for event in real_iter(self):
            counts["trace_events"] += 1
            yield event

    def sha256_of(path: Path) -> str:
        counts["hashed_bytes"] += path.stat().st_size
        return real_hash(path)

    delta.apply_state, reader.TraceReader.__iter__ = apply_state, iterate  # type: ignore[method-assign]
    fixture_module.sha256_of = sha256_of
    try:
        timed_boot(folder, scratch / "counted-boot", how)
    finally:
        delta.apply_state, reader.TraceReader.__iter__ = real_apply, real_iter  # type: ignore[method-assign]
        fixture_module.sha256_of = real_hash
    return counts


def same_workspace(scratch: Path, shallow: int, deep: int, files: int) -> dict[int, Path]:
    """Fixtures at `shallow` and `deep` steps of one recorded loop whose workspace never changes:
    `files` files of a kilobyte, checkpointed whole at both steps."""
    workspace = scratch / "fixed-ws"
    for n in range(files):
        (workspace / f"dir{n % 20}").mkdir(parents=True, exist_ok=True)
        (workspace / f"dir{n % 20}" / f"file{n}.txt").write_text(f"file {n}\n" * 128)
    trace = scratch / "fixed.trace.jsonl"
    question = [{"role": "user", "content": "next?"}]
    with SimServer(lambda request: Reply.text("ok"), seed=SEED) as sim, ae.Recorder(trace, agent="loop"):
        client = anthropic.Anthropic(base_url=sim.url, api_key="sim", max_retries=0)
        for step in range(1, deep + 1):
            client.messages.create(model="claude-sonnet-4-6", max_tokens=8, messages=question)  # type: ignore[arg-type]
            if step in (shallow, deep):
                ae.checkpoint({"step": step}, workspace=workspace)
    folders = {}
    for at in (shallow, deep):
        fixture, _ = extract(trace, at, f"fixed-{at}", scratch / "fixed-fixtures")
        folders[at] = fixture.folder
    return folders


def resume_leg(folder: Path, scratch: Path) -> float:
    """Boot the fixture and run a 20-call leg through a ResumeRun; returns its seconds."""
    started = time.perf_counter()
    spec = RunSpec(
        "bench leg",
        workspace=scratch / "leg-ws",
        trace=scratch / "leg.trace.jsonl",
        contract=taskrunner.contract(),
        runner=lambda checkpoint: taskrunner.resume_recorded(checkpoint, max_steps=LEG_CALLS),
    )
    session = ResumeRun(spec, Fixture.open(folder))
    session.start()
    try:
        session.run_agent()
    finally:
        session.close()
    elapsed = time.perf_counter() - started
    assert session.phase.calls == LEG_CALLS, session.phase.summary()
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smaller run (a smoke run)")
    parser.add_argument(
        "--rounds", type=int, default=None, help="boot rounds per depth (default 15; 5 quick)"
    )
    parser.add_argument(
        "--legs", type=int, default=None, help="resume and re-run rounds (default 3; 1 quick)"
    )
    parser.add_argument(
        "--tries", type=int, default=3, help="boots per depth in a round, the fastest kept (default 3)"
    )
    args = parser.parse_args()
    shallow, deep, middle = (100, 600, 300) if args.quick else (100, 3000, 1000)
    tasks = int(deep / 2.3) + 60  # about 2.3 model calls a task: a run past the deep checkpoint
    rounds = args.rounds or (5 if args.quick else 15)
    legs = args.legs or (1 if args.quick else 3)
    with tempfile.TemporaryDirectory(prefix="bench-resume-") as temp:
        scratch = Path(temp)
        trace = scratch / "long.trace.jsonl"
        seconds = record(trace, tasks)
        steps = ae.read_trace(trace)[-1]["totals"]["steps"]
        emit(f"{steps} steps", "record_s", seconds)
        fixtures = scratch / "fixtures"
        folders: dict[int, Path] = {}
        for at in (shallow, middle, deep):
            fixture, _ = extract(trace, at, f"at-{at}", fixtures)
            folders[at] = fixture.folder
            emit(f"{at} steps", "workspace_files", fixture.manifest["workspace"]["files"])

        example = {at: folders[at] for at in (shallow, deep)}
        boot_rounds(example, scratch, 1, boot)  # warm the file system and the imports
        emit_rounds(boot_rounds(example, scratch, rounds, boot, args.tries), "", "boot", "depth_ratio")
        for at in (shallow, deep):
            for what, count in boot_work(folders[at], scratch, boot).items():
                emit(f"{at} steps", f"boot_work_{what}", count, digits=0)

        files = Fixture.open(folders[deep]).manifest["workspace"]["files"]
        fixed = same_workspace(scratch, shallow, deep, files)
        boot_rounds(fixed, scratch, 1, plain_boot)
        emit_rounds(
            boot_rounds(fixed, scratch, rounds, plain_boot, args.tries),
            f", {files} files",
            "boot_same_workspace",
            "depth_ratio_same_workspace",
        )

        # A round resumes and re-runs back to back, so the two times a round divides saw the same load.
        resumed: list[float] = []
        reruns: list[float] = []
        for n in range(legs):
            resumed.append(resume_leg(folders[middle], scratch / f"leg-{n}"))
            reruns.append(record(scratch / f"rerun-{n}.trace.jsonl", tasks, max_steps=middle + LEG_CALLS))
        resume_s, rerun_s = statistics.median(resumed), statistics.median(reruns)
        emit(f"{middle} steps", "resume_and_leg_s", resume_s, rounds=[round(v, 4) for v in resumed])
        emit(f"{middle} steps", "rerun_and_leg_s", rerun_s, rounds=[round(v, 4) for v in reruns])
        emit(
            f"{middle} steps",
            "speedup_vs_rerun",
            rerun_s / resume_s,
            rerun_s=round(rerun_s, 4),
            resume_s=round(resume_s, 4),
            rounds=[round(b / a, 2) for a, b in zip(resumed, reruns, strict=True)],
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
