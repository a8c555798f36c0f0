"""The framework example with a planted decisive mistake, for triage (docs/triage.md): the pydantic-ai
notes agent (`examples/notes_pydantic`) against a simulated model with one bad habit.

`NotesModel` writes the notes a task asks for, now and then a draft first (`draft-003`, harmless:
the seed decides where). Its flaw: in a task of eight notes or more it names note 6 `note 006`,
believes it written, and goes on; the run ends with the notes' verification failing, three or more
steps after the mistake. The fixed model (`blunder=False`) names it `note-006`. `drive`, `model` and
`decide` are triage's seams, as in `examples/taskrunner/planted.py`.
"""

from __future__ import annotations

import hashlib
import re
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest_agentevals as ae
from pytest_agentevals.sim import Reply, SimRequest, SimServer

from .notes_policy import _COUNT, _text
from .notes_run import run_task

FLAWED_FROM = 8  # tasks of this many notes or more meet the flaw
FLAWED_NOTE = 6
DRAFT_RATE = 0.3
_NUMBER = re.compile(r"(\d+)")


class NotesModel:
    """A policy `(SimRequest) -> Reply` for the notes agents, with the flaw unless `blunder=False`."""

    def __init__(self, seed: int = 0, *, blunder: bool = True) -> None:
        self.seed = seed
        self.blunder = blunder

    def __call__(self, request: SimRequest) -> Reply:
        messages = request.body["messages"]
        found = _COUNT.search(_text(messages[0]["content"]))
        count = int(found.group(1)) if found else 1
        names = [
            str(block["input"].get("name", ""))
            for message in messages
            if message["role"] == "assistant" and isinstance(message["content"], list)
            for block in message["content"]
            if block.get("type") == "tool_use"
        ]
        # What the model believes written: every note it named, whatever the spelling.
        believed = {
            int(m.group(1)) for name in names if name.startswith("note") and (m := _NUMBER.search(name))
        }
        left = [n for n in range(1, count + 1) if n not in believed]
        if not left:
            return Reply.text(f"Wrote {count} notes.")
        number = left[0]
        if names and names[-1] != f"draft-{number:03d}" and self._chance(number) < DRAFT_RATE:
            return Reply.tool_use("write_note", {"name": f"draft-{number:03d}", "text": "Draft."})
        name = f"note-{number:03d}"
        if self.blunder and count >= FLAWED_FROM and number == FLAWED_NOTE:
            name = f"note {number:03d}"
        return Reply.tool_use("write_note", {"name": name, "text": f"Note {number} of {count}."})

    def _chance(self, number: int) -> float:
        digest = hashlib.sha256(f"{self.seed}:draft:{number}".encode()).digest()
        return int.from_bytes(digest[:8], "big") / 2**64


def task_of(seed: int) -> dict[str, Any]:
    """A seed's task: 5 to 9 notes (seeds 3 and 4, 8 and 9, ... meet the flaw)."""
    return {"agent": "notes_pydantic", "notes": 5 + seed % 5, "seed": seed}


def record_runs(folder: str | Path, seeds: Iterable[int]) -> list[Path]:
    """Record the flawed model's runs of the pydantic-ai agent, one per seed, into `folder`."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for seed in seeds:
        path, task = out / f"seed-{seed}.trace.jsonl", task_of(seed)
        with (
            tempfile.TemporaryDirectory(prefix="notes-planted-") as workspace,
            SimServer(NotesModel(seed), seed=seed) as sim,
            ae.Recorder(path, agent="notes-planted", seed=seed, task=task),
        ):
            drive(sim.url, task, Path(workspace))
        paths.append(path)
    return paths


def drive(base_url: str, task: Mapping[str, Any], workspace: Path) -> None:
    """Triage's fork seam: the pydantic-ai agent on a recorded run's task, ending with its check."""
    run_task(dict(task), workspace, base_url)


def model(seed: int) -> NotesModel:
    return NotesModel(seed)


def decide(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [dict(b) for b in NotesModel(0)(SimRequest(index=0, body=dict(body), headers={})).content]


def decide_fixed(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    reply = NotesModel(0, blunder=False)(SimRequest(index=0, body=dict(body), headers={}))
    return [dict(b) for b in reply.content]
