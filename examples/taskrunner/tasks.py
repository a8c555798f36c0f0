"""The task list: small file-writing tasks, generated from a seed, each with one checkable answer.

A task reads as one line, e.g. ``T007: write `t007.txt` containing the word "amber" reversed``. The
line carries everything needed to solve it, so a real model can, and so can the scripted policy
(which parses it back with `parse_task`).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

WORDS = (
    "amber", "basil", "cedar", "delta", "ember", "fjord", "gravel", "harbor", "indigo", "juniper",
    "kelp", "lantern", "meadow", "nectar", "orchid", "pepper", "quartz", "raven", "saffron", "thistle",
    "umber", "velvet", "willow", "xenon", "yarrow", "zephyr",
)  # fmt: skip

KINDS = ("reverse", "upper", "sum", "repeat")

_LINE = re.compile(r"^(T\d{3,}): write `([^`]+)` containing (.+)$")
_REVERSE = re.compile(r'^the word "(\w+)" reversed$')
_UPPER = re.compile(r'^the word "(\w+)" in capitals$')
_SUM = re.compile(r"^the sum (\d+) \+ (\d+)$")
_REPEAT = re.compile(r'^the word "(\w+)" (\d+) times, separated by dashes$')


@dataclass(frozen=True)
class Task:
    """One task: write `path` with the content `expected()`."""

    id: str
    path: str
    kind: str
    word: str = ""
    a: int = 0
    b: int = 0

    def describe(self) -> str:
        if self.kind == "reverse":
            what = f'the word "{self.word}" reversed'
        elif self.kind == "upper":
            what = f'the word "{self.word}" in capitals'
        elif self.kind == "sum":
            what = f"the sum {self.a} + {self.b}"
        else:
            what = f'the word "{self.word}" {self.a} times, separated by dashes'
        return f"{self.id}: write `{self.path}` containing {what}"

    def expected(self) -> str:
        if self.kind == "reverse":
            return self.word[::-1]
        if self.kind == "upper":
            return self.word.upper()
        if self.kind == "sum":
            return str(self.a + self.b)
        return "-".join([self.word] * self.a)


def make_tasks(count: int, seed: int = 0) -> list[Task]:
    """`count` tasks, the same for the same seed."""
    if count < 1:
        raise ValueError(f"a task list needs at least one task, got {count}")
    rng = random.Random(seed)
    tasks = []
    for n in range(1, count + 1):
        kind = rng.choice(KINDS)
        task_id = f"T{n:03d}"
        path = f"t{n:03d}.txt"
        # Every draw happens for every task, so task n is the same whatever the kinds before it.
        word, a, b, times = rng.choice(WORDS), rng.randint(1, 99), rng.randint(1, 99), rng.randint(2, 4)
        if kind == "sum":
            tasks.append(Task(task_id, path, kind, a=a, b=b))
        elif kind == "repeat":
            tasks.append(Task(task_id, path, kind, word, a=times))
        else:
            tasks.append(Task(task_id, path, kind, word))
    return tasks


def task_list_text(tasks: list[Task]) -> str:
    return "\n".join(task.describe() for task in tasks)


def parse_task(line: str) -> Task | None:
    """The task a line describes, or None if the line is not a task."""
    match = _LINE.match(line.strip())
    if match is None:
        return None
    task_id, path, what = match.groups()
    if m := _REVERSE.match(what):
        return Task(task_id, path, "reverse", m.group(1))
    if m := _UPPER.match(what):
        return Task(task_id, path, "upper", m.group(1))
    if m := _SUM.match(what):
        return Task(task_id, path, "sum", a=int(m.group(1)), b=int(m.group(2)))
    if m := _REPEAT.match(what):
        return Task(task_id, path, "repeat", m.group(1), int(m.group(2)))
    return None
