"""The resume layer's speed, side by side in one process, on one long run of the example agent.

`examples.taskrunner` runs against the seeded simulated model (no key, no network), recorded, for
over 3,000 steps; its checkpoints at steps 100, 1,000 and 3,000 become fixtures. Then:

- boot (restore + contract + state, what `agentevals_resume` does before the leg's recorder
  starts) from the checkpoint at step 100 and at step 3,000, each repeated into fresh folders,
  median of each: `boot_s`, and their ratio `depth_ratio` (a fixture holds the whole workspace, never
  a chain of deltas, so depth alone costs nothing: what grows is the workspace itself, one file per
  task here — `workspace_files` is printed beside);
- the same comparison with the workspace held equal: a plain loop of model calls against the simulated
  model checkpoints one unchanging workspace of as many files as the example's at step 3,000, at
  step 100 and at step 3,000: `depth_ratio_same_workspace` (the format's promise, apart from the
  example's growing workspace);
- reaching step 1,000 and running a 20-call leg there, two ways: resuming — boot the fixture at step
  1,000 and run the leg through a `ResumeRun` (recorded, guarded, the contract checked) — against
  re-running the recorded run from step 0 to step 1,020: `speedup_vs_rerun` (case "1000 steps").

Prints one JSON line per figure. `--quick` shrinks the run (a smoke run; not the figures to report).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

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


def median_boot(folder: Path, scratch: Path, repeats: int) -> float:
    times = []
    for n in range(repeats):
        fixture = Fixture.open(folder)  # each boot opens the fixture afresh, as a test does
        workspace = scratch / f"{folder.name}-{n}"
        started = time.perf_counter()
        boot(fixture, workspace)
        times.append(time.perf_counter() - started)
        shutil.rmtree(workspace)
    return statistics.median(times)


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


def median_plain_boot(folder: Path, scratch: Path, repeats: int) -> float:
    """Restore and state alone (the loop declares no contract of the example's)."""
    times = []
    for n in range(repeats):
        fixture = Fixture.open(folder)
        workspace = scratch / f"{folder.name}-{n}"
        started = time.perf_counter()
        fixture.check_contract({})
        fixture.restore(workspace)
        fixture.state()
        times.append(time.perf_counter() - started)
        shutil.rmtree(workspace)
    return statistics.median(times)


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
    args = parser.parse_args()
    shallow, deep, middle = (100, 600, 300) if args.quick else (100, 3000, 1000)
    tasks = int(deep / 2.3) + 60  # about 2.3 model calls a task: a run past the deep checkpoint
    repeats = 5 if args.quick else 15
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

        median_boot(folders[shallow], scratch, 2)  # warm the file system and the imports
        boot_times = {}
        for at in (shallow, deep):
            boot_times[at] = median_boot(folders[at], scratch, repeats)
            emit(f"{at} steps", "boot_s", boot_times[at])
        emit(f"{shallow} vs {deep} steps", "depth_ratio", boot_times[deep] / boot_times[shallow])
        # Depth alone costs nothing; files do. The same ratio per file of the workspace restored:
        files = {at: Fixture.open(folders[at]).manifest["workspace"]["files"] for at in (shallow, deep)}
        per_file = (boot_times[deep] / files[deep]) / (boot_times[shallow] / files[shallow])
        emit(f"{shallow} vs {deep} steps", "depth_ratio_per_file", per_file)

        fixed = same_workspace(scratch, shallow, deep, files[deep])
        median_plain_boot(fixed[shallow], scratch, 2)
        fixed_times = {at: median_plain_boot(fixed[at], scratch, repeats) for at in (shallow, deep)}
        for at in (shallow, deep):
            emit(f"{at} steps, {files[deep]} files", "boot_same_workspace_s", fixed_times[at])
        emit(
            f"{shallow} vs {deep} steps, {files[deep]} files",
            "depth_ratio_same_workspace",
            fixed_times[deep] / fixed_times[shallow],
        )

        resumed = resume_leg(folders[middle], scratch)
        emit(f"{middle} steps", "resume_and_leg_s", resumed)
        rerun = record(scratch / "rerun.trace.jsonl", tasks, max_steps=middle + LEG_CALLS)
        emit(f"{middle} steps", "rerun_and_leg_s", rerun)
        emit(f"{middle} steps", "speedup_vs_rerun", rerun / resumed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
