"""A planted decisive mistake, for triage (docs/triage.md): the example agent with one bad habit.

`BlunderModel` is `ScriptedModel` with a flaw that only some task lists meet: right after a task whose
answer repeats a word four times passes its check, it goes looking for a notes file that does not
exist (`t007-notes.txt`), and keeps looking for as long as that failed read is in its context. The
watchdog catches the loop and, with no restart left, the run ends `escalated`. Everything else the
seeds do differently (reads, wrong first tries fixed after a failed check, compactions) is harmless.
`BlunderModel(blunder=False)` is the fixed agent: plain `ScriptedModel`.

`record_runs` records a few seeds of it (some meet the flaw, some do not) in a second or so; `drive`
and `decide` are the two seams triage's fork and shrink call: the harness against a model at a base
URL, and the model's decision on one request.
"""

from __future__ import annotations

import atexit
import dataclasses
import functools
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import anthropic

import pytest_agentevals as ae
from pytest_agentevals.guards import Budget, guards_for
from pytest_agentevals.sim import Reply, SimRequest, SimServer

from .harness import HarnessConfig, RunResult
from .policy import ScriptedModel, _json, _last_call
from .prompts import COMPACT_REQUEST
from .supervisor import run_agent
from .tasks import Task, make_tasks

NOTES_SUFFIX = "-notes.txt"
# The planted fixture's agent: noisier than the default model (more harmless differences between
# seeds), compacting now and then, and with no restart to hide the mistake behind.
CONFIG = HarnessConfig(compact_at=3000, max_restarts=0)
# Each run's budget, enforced by the framework's guards (and told to the model in its opening).
BUDGET = Budget(max_calls=200)
READ_RATE = 0.3
MISTAKE_RATE = 0.25


def is_trigger(task: Task, after: int = 0) -> bool:
    """The tasks the flaw follows: a word repeated four times (in a task numbered above `after`: a
    long run's benchmark keeps the flaw for its end)."""
    return task.kind == "repeat" and task.a == 4 and int(task.id[1:]) > after


class BlunderModel(ScriptedModel):
    """`ScriptedModel` with the planted flaw (`blunder=True`), or without it (the fixed agent)."""

    def __init__(
        self,
        seed: int = 0,
        *,
        blunder: bool = True,
        after: int = 0,
        read_rate: float = READ_RATE,
        mistake_rate: float = MISTAKE_RATE,
    ) -> None:
        super().__init__(seed, read_rate=read_rate, mistake_rate=mistake_rate)
        self.blunder = blunder
        self.after = after

    def __call__(self, request: SimRequest) -> Reply:
        if self.blunder and not _compacting(request):
            looking = _notes_read(request)
            if looking is not None:
                self.steps += 1
                return Reply.tool_use("read_file", {"path": looking})
            trigger = self._trigger(request)
            if trigger is not None:
                self.steps += 1
                path = trigger.path.removesuffix(".txt") + NOTES_SUFFIX
                return Reply.tool_use("read_file", {"path": path}, text="Let me check my notes first.")
        return super().__call__(request)

    def _trigger(self, request: SimRequest) -> Task | None:
        last = _last_call(request)
        if last is None or last.name != "run_check":
            return None
        outcome = _json(last.result)
        if not isinstance(outcome, dict) or outcome.get("passed") is not True:
            return None
        opening = request.messages[0] if request.messages else {}
        tasks = self._tasks(_text_of(request, opening))
        task = next((t for t in tasks if t.id == outcome.get("task")), None)
        return task if task is not None and is_trigger(task, self.after) else None


def _compacting(request: SimRequest) -> bool:
    return any(COMPACT_REQUEST in str(block.get("text", "")) for block in request.blocks())


def _notes_read(request: SimRequest) -> str | None:
    """The notes file the context shows the model looking for (the loop goes on while it does)."""
    for message in request.messages:
        if message.get("role") != "assistant":
            continue
        for block in request.blocks(message):
            path = str((block.get("input") or {}).get("path", "")) if block.get("type") == "tool_use" else ""
            if path.endswith(NOTES_SUFFIX):
                return path
    return None


def _text_of(request: SimRequest, message: Mapping[str, Any]) -> str:
    return "\n".join(str(b.get("text", "")) for b in request.blocks(message) if b.get("type") == "text")


def triggers(tasks: int, seed: int, after: int = 0) -> list[int]:
    """The 1-based numbers of the tasks the flaw follows, in a seed's task list."""
    return [n for n, task in enumerate(make_tasks(tasks, seed), 1) if is_trigger(task, after)]


@dataclasses.dataclass(frozen=True)
class PlantedRun:
    """One recorded seed: its trace, how it ended, and the step of the planted mistake (None: the run
    never met the flaw)."""

    seed: int
    trace: Path
    status: str
    mistake_step: int | None


def record_run(
    folder: Path, seed: int, tasks: int, *, blunder: bool = True, after: int = 0, budget: Budget = BUDGET
) -> PlantedRun:
    """Record one seed of the agent (the flawed one unless `blunder=False`) into `folder`, under
    `budget`."""
    task = {"agent": "taskrunner-planted", "tasks": tasks, "seed": seed}
    path = folder / f"seed-{seed}.trace.jsonl"
    with (
        tempfile.TemporaryDirectory(prefix="planted-") as workspace,
        SimServer(BlunderModel(seed, blunder=blunder, after=after), seed=seed) as sim,
        ae.Recorder(path, agent="taskrunner-planted", seed=seed, task=task, guards=guards_for(budget)),
    ):
        result = drive_tasks(sim.url, make_tasks(tasks, seed), Path(workspace))
    return PlantedRun(seed, path, result.status, mistake_step(path))


def record_runs(
    folder: str | Path, seeds: Iterable[int], tasks: int = 10, after: int = 0, budget: Budget = BUDGET
) -> list[PlantedRun]:
    """Record the flawed agent on each seed into `folder` (made if missing), each under `budget`."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    return [record_run(out, seed, tasks, after=after, budget=budget) for seed in seeds]


def mistake_step(trace: str | Path) -> int | None:
    """The step whose decision was the planted mistake: the first look for a notes file."""
    for event in ae.read_trace(trace):
        if event.get("type") != "model_call":
            continue
        content = ((event.get("response") or {}).get("json") or {}).get("content") or []
        for block in content:
            if block.get("type") == "tool_use" and str(block["input"].get("path", "")).endswith(NOTES_SUFFIX):
                return int(event["step"])
    return None


@functools.cache
def _http() -> anthropic.DefaultHttpxClient:
    # One HTTP client for every run of the process: building one loads the CA bundle (a tenth of a
    # second), which was a third of a ten-task run. Closed when the process ends.
    client = anthropic.DefaultHttpxClient()
    atexit.register(client.close)
    return client


def drive_tasks(base_url: str, tasks: Sequence[Task], workspace: Path) -> RunResult:
    client = anthropic.Anthropic(base_url=base_url, api_key="sim", max_retries=0, http_client=_http())
    return run_agent(client, list(tasks), workspace, CONFIG)


def drive(base_url: str, task: Mapping[str, Any], workspace: Path) -> None:
    """Triage's fork seam: run the harness on a recorded run's task against the model at `base_url`."""
    drive_tasks(base_url, make_tasks(int(task["tasks"]), int(task["seed"])), workspace)


def model(seed: int) -> BlunderModel:
    """Triage's fork seam: the live (simulated) model of one re-drive, seeded."""
    return BlunderModel(seed)


def decide(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Triage's shrink seam: the flawed model's decision (content blocks) on one request body."""
    return _decide(body, blunder=True)


def decide_fixed(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The fixed model's decision on one request body."""
    return _decide(body, blunder=False)


def _decide(body: Mapping[str, Any], blunder: bool) -> list[dict[str, Any]]:
    reply = BlunderModel(0, blunder=blunder)(SimRequest(index=0, body=dict(body), headers={}))
    return [dict(block) for block in reply.content]
