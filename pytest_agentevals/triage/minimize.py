"""Shrink: the decisive step of a failing run cut down to the smallest step case that still fails.

The request the agent saw at step k is the opening message and then (assistant, user) pairs: the
steps before k and their tool answers. `shrink` runs ddmin over those pairs, then over the tool
answers left (an answer not needed is elided, the pair stays, so the conversation stays one the API
accepts and every tool_use keeps its answer), asking the agent's `decide` each time whether it still
makes the decision that was recorded at k. What is left is a step case: that context, and the
decision the agent must not make again in it. `write_case` commits it as a test, with the original
trace copied beside it as its provenance.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import TriageError
from ..fileio import make_folders, write_atomic
from ..trace.loaders import load_json
from .delta import ddmin
from .steps import Run, Step, load_run, shape

# The agent's decision on one request body: its content blocks, as the API returns them.
Decide = Callable[[Mapping[str, Any]], Sequence[Mapping[str, Any]]]
ELIDED = "[elided by agentevals triage shrink: not needed to reproduce the decision]"
CASE_VERSION = 1
MAX_CASE_BYTES = 8 * 1024 * 1024
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
_IMPORT = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


def decision_key(content: Sequence[Mapping[str, Any]]) -> str:
    """What must be made again for a decision to count as the same: its tool calls exactly, or the
    shape of its text when it called no tool."""
    calls = [
        f"{b.get('name')}({json.dumps(b.get('input'), sort_keys=True)})"
        for b in content
        if b.get("type") == "tool_use"
    ]
    if calls:
        return " + ".join(calls)
    return "text:" + shape(" ".join(str(b.get("text", "")) for b in content if b.get("type") == "text"))


@dataclass
class Shrunk:
    """A step case: the reduced request, the decision the agent must not make in it, and where it
    came from."""

    run: Run
    step: Step
    request: dict[str, Any]
    decision: list[dict[str, Any]]
    kept_steps: list[int | None]  # the earlier steps whose (assistant, user) pairs are kept
    elided_answers: int
    tests: int  # how many times the agent was asked (each a re-run of a prefix)

    @property
    def steps(self) -> int:
        """The case's size in steps: the pairs kept, and the decision."""
        return len(self.kept_steps) + 1

    @property
    def key(self) -> str:
        return decision_key(self.decision)

    def to_json(self) -> dict[str, Any]:
        return {
            "v": CASE_VERSION,
            "kind": "triage-step-case",
            "provenance": {
                "trace": str(self.run.trace),
                "sha256": _sha256(self.run.trace),
                "seed": self.run.seed,
                "status": self.run.status,
                "step": self.step.number,
                "line": self.step.line,
                "steps": len(self.run.steps),
                "kept_steps": self.kept_steps,
                "elided_answers": self.elided_answers,
            },
            "must_not": {"decision": self.decision, "key": self.key},
            "request": self.request,
        }


def _pairs(messages: Sequence[Any], where: str) -> list[tuple[Any, Any]]:
    if not messages or len(messages) % 2 == 0:
        raise TriageError(
            f"{where}: the request's messages are not an opening and (assistant, user) pairs "
            f"({len(messages)} messages): shrink cannot keep such a conversation valid"
        )
    rest = list(messages[1:])
    pairs = list(zip(rest[0::2], rest[1::2], strict=True))
    for assistant, user in pairs:
        if not (isinstance(assistant, Mapping) and assistant.get("role") == "assistant"):
            raise TriageError(f"{where}: expected an assistant message, found {str(assistant)[:80]!r}")
        if not (isinstance(user, Mapping) and user.get("role") == "user"):
            raise TriageError(f"{where}: expected a user message, found {str(user)[:80]!r}")
    return pairs


def _answers(user: Mapping[str, Any]) -> int:
    content = user.get("content")
    return (
        sum(1 for b in content if isinstance(b, Mapping) and b.get("type") == "tool_result")
        if isinstance(content, list)
        else 0
    )


def shrink(run: Run | str | Path, step: int, decide: Decide) -> Shrunk:
    """Cut step `step` of `run` down to a 1-minimal context in which `decide` still makes the decision
    recorded there (its exact tool calls). TriageError when the agent does not make it even in the
    full context (the decision is not reproducible: rank or fork it instead)."""
    run = run if isinstance(run, Run) else load_run(run)
    target = run.step(step)
    where = f"{run.trace} step {step}"
    body = copy.deepcopy(dict(target.request))
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise TriageError(f"{where}: the recorded request holds no messages")
    opening, pairs = messages[0], _pairs(messages, where)
    wanted = decision_key(target.content)
    asked = 0

    def request_of(kept: Sequence[tuple[Any, Any]]) -> dict[str, Any]:
        return {**body, "messages": [opening, *(m for pair in kept for m in pair)]}

    def makes_it(request: Mapping[str, Any]) -> bool:
        nonlocal asked
        asked += 1
        return decision_key(decide(copy.deepcopy(dict(request)))) == wanted

    if not makes_it(body):
        raise TriageError(
            f"{where}: given the recorded context, the agent does not decide {wanted} again: the "
            "decision is not reproducible, so no smaller test of it would fail (fork at the step instead)"
        )
    by_pair = ddmin(list(range(len(pairs))), lambda kept: makes_it(request_of([pairs[i] for i in kept])))
    kept = [pairs[i] for i in by_pair.items]
    # Then the tool answers of the pairs kept: each answer is (pair, block) by position.
    slots = [
        (p, b)
        for p, (_, user) in enumerate(kept)
        for b, block in enumerate(user.get("content") if isinstance(user.get("content"), list) else [])
        if isinstance(block, Mapping) and block.get("type") == "tool_result"
    ]

    def with_answers(keep: Sequence[tuple[int, int]]) -> list[tuple[Any, Any]]:
        out = copy.deepcopy(kept)
        for p, b in slots:
            if (p, b) not in keep:
                out[p][1]["content"][b] = {**out[p][1]["content"][b], "content": ELIDED}
        return out

    by_answer = ddmin(slots, lambda keep: makes_it(request_of(with_answers(keep)))) if slots else None
    final = with_answers(by_answer.items) if by_answer is not None else kept
    return Shrunk(
        run=run,
        step=target,
        request=request_of(final),
        decision=[dict(b) for b in target.content],
        kept_steps=[step_of(run, pairs[i][0]) for i in by_pair.items],
        elided_answers=len(slots) - (len(by_answer.items) if by_answer is not None else 0),
        tests=asked,
    )


def step_of(run: Run, assistant: Mapping[str, Any]) -> int | None:
    """The step whose decision an assistant message of a context is (the same content)."""
    content = assistant.get("content")
    for step in run.steps:
        if list(step.content) == content:
            return step.number
    return None


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True)
class Written:
    case: Path
    test: Path
    original: Path


def write_case(shrunk: Shrunk, folder: str | Path, name: str, decide: str, *, force: bool = False) -> Written:
    """Write `test_triage_NAME.py` (a test calling `decide`, "module:function", on the case),
    `NAME.triage.json` (the case) and `NAME.original.trace.jsonl` (the run it came from) in `folder`.
    Nothing existing is replaced unless `force`."""
    if not _NAME.match(name):
        raise TriageError(f"--name {name!r}: use letters, digits, - and _ (at most 64), e.g. seed-3-notes")
    if not _IMPORT.match(decide):
        raise TriageError(f"--decide {decide!r}: name the agent's decision function as module:function")
    out = Path(folder)
    slug = name.replace("-", "_")
    written = Written(
        out / f"{name}.triage.json", out / f"test_triage_{slug}.py", out / f"{name}.original.trace.jsonl"
    )
    existing = [
        str(p) for p in (written.case, written.test, written.original) if p.exists() or p.is_symlink()
    ]
    if existing and not force:
        raise TriageError(f"{', '.join(existing)}: already there; choose another --name, or --force")
    # Nothing is written through a link (a committed one could point outside the tree): each file
    # goes in atomically, and a link in the way is refused, naming it.
    make_folders(out)
    write_atomic(written.original, shrunk.run.trace.read_bytes())
    data = shrunk.to_json()
    data["provenance"]["trace"] = written.original.name
    data["provenance"]["recorded_as"] = str(shrunk.run.trace)
    write_atomic(written.case, json.dumps(data, indent=1, sort_keys=True) + "\n")
    module, function = decide.split(":")
    write_atomic(written.test, _TEST.format(name=name, slug=slug, module=module, function=function,
                                                 step=shrunk.step.number, seed=shrunk.run.seed,
                                                 trace=written.original.name))  # fmt: skip
    return written


_TEST = '''"""Triage of {trace} (seed {seed}) at step {step}: the smallest context in which the agent made
the decision that failed the run (`agentevals triage shrink`). {name}.triage.json holds the context,
the decision and its provenance; {trace} is the run it came from."""

from pathlib import Path

from {module} import {function}
from pytest_agentevals.triage import check_case


def test_triage_{slug}() -> None:
    check_case(Path(__file__).with_name("{name}.triage.json"), {function})
'''


def load_case(path: str | Path) -> dict[str, Any]:
    """A written case, read with the bounded JSON loader; TriageError naming the file when it is not one."""
    source = Path(path)
    try:
        size = source.stat().st_size
    except OSError as exc:
        raise TriageError(f"{source}: cannot be read ({exc.strerror})") from None
    if size > MAX_CASE_BYTES:
        raise TriageError(f"{source}: {size} bytes, more than a triage case holds ({MAX_CASE_BYTES})")
    data = load_json(source.read_bytes(), lambda line, problem: TriageError(f"{source}:{line}: {problem}"))
    if not isinstance(data, dict) or data.get("kind") != "triage-step-case":
        raise TriageError(f"{source}: not a triage step case (written by agentevals triage shrink)")
    if data.get("v") != CASE_VERSION:
        raise TriageError(f"{source}: case version {data.get('v')!r}; this version reads {CASE_VERSION}")
    for key in ("request", "must_not", "provenance"):
        if not isinstance(data.get(key), dict):
            raise TriageError(f"{source}: '{key}' is missing or not a mapping")
    return data


def check_case(path: str | Path, decide: Decide) -> None:
    """The committed test's body: AssertionError when the agent makes, in the case's context, the
    decision that failed the original run."""
    case = load_case(path)
    made = decision_key(decide(copy.deepcopy(case["request"])))
    bad = case["must_not"].get("key")
    if made == bad:
        origin = case["provenance"]
        raise AssertionError(
            f"the agent made again the decision that failed {origin.get('trace')} (seed "
            f"{origin.get('seed')}) at step {origin.get('step')}: {made}\n"
            f"(in the {len(origin.get('kept_steps') or []) + 1}-step context of {path}; "
            f"the original run had {origin.get('steps')} steps)"
        )
