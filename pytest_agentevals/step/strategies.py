"""Hypothesis strategies that perturb a step case's context without changing the right answer, so a
test can assert the agent's decision is invariant (a metamorphic test).

    from hypothesis import given, settings
    from pytest_agentevals.step import load_case
    from pytest_agentevals.step.strategies import perturbations

    case = load_case("goldens/refactor.yaml", "step-12-tool-choice")

    @settings(max_examples=10, derandomize=True, deadline=None)
    @given(perturbations(case, pad_tokens=2000))
    def test_the_choice_survives(perturbed):
        assert perturbed.case.check(my_decide(perturbed.case)).ok

- `reordered_tool_results`: the tool_result blocks of a user message in another order (they are
  matched by id, so a model must not care), and, when you say which calls are independent, earlier
  exchanges (a tool call and its result) swapped with their neighbours.
- `renamed_paths`: every file path the agent used, renamed consistently throughout the context and
  the expectation (the right answer is renamed with it).
- `padded_history`: irrelevant exchanges inserted early in the history, up to a token count.

Hypothesis is imported when a strategy is built, so it is needed only by the tests that use these.
Each perturbed request is new, so its decision cannot be replayed: these tests call the model live
(or your simulated one) and belong off the `-m step` fast path (mark them `agentevals_metamorphic`).
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .case import StepCase
from .decision import approx_tokens
from .kinds import parse_expectation

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

Message = dict[str, Any]
Exchange = tuple[Message, Message]  # an assistant message with tool calls, the user message with results
PATH_KEYS = ("path", "file", "filename", "file_path")
IRRELEVANT = (
    "Unrelated: the build server will be rebooted on Sunday night.",
    "For later: the style guide prefers short commit messages.",
    "FYI the coffee machine on floor 3 is fixed.",
    "Reminder: the quarterly planning notes are in the shared drive.",
    "Someone asked whether the office is open on public holidays; it is not.",
)


@dataclass(frozen=True)
class Perturbed:
    """A perturbed case, and what was done to it (what Hypothesis shows for a failing example)."""

    case: StepCase
    what: str

    def __repr__(self) -> str:
        return f"Perturbed({self.what})"


def _messages(case: StepCase) -> list[Message]:
    return [dict(message) for message in case.messages]


def _with_messages(case: StepCase, messages: list[Message]) -> StepCase:
    return case.with_context(request={**(case.request or {}), "messages": messages})


def _blocks(message: Mapping[str, Any]) -> list[Any]:
    content = message.get("content")
    return list(content) if isinstance(content, list) else []


def _is_result(block: Any) -> bool:
    return isinstance(block, Mapping) and block.get("type") == "tool_result"


# -- reordering ---------------------------------------------------------------------------------------


def reordered_tool_results(
    case: StepCase, independent: Callable[[Exchange, Exchange], bool] | None = None
) -> SearchStrategy[Perturbed]:
    """The case with the tool results inside each user message shuffled, and with adjacent earlier
    exchanges swapped where `independent(a, b)` says the order of the two does not matter. The last
    exchange, the one the decision answers, stays last."""
    from hypothesis import strategies as st

    messages = _messages(case)

    @st.composite
    def build(draw: Any) -> Perturbed:
        out = [dict(message) for message in messages]
        done: list[str] = []
        for index, message in enumerate(out):
            blocks = _blocks(message)
            slots = [i for i, block in enumerate(blocks) if _is_result(block)]
            if len(slots) < 2:
                continue
            order = draw(st.permutations([blocks[i] for i in slots]))
            for slot, block in zip(slots, order, strict=True):
                blocks[slot] = block
            out[index] = {**message, "content": blocks}
            if order != [messages[index]["content"][i] for i in slots]:
                done.append(f"tool results of messages[{index}] reordered")
        if independent is not None:
            out, swapped = _swap_exchanges(draw, out, independent)
            done.extend(swapped)
        return Perturbed(_with_messages(case, out), "; ".join(done) or "nothing to reorder")

    return build()


def _swap_exchanges(
    draw: Any, messages: list[Message], independent: Callable[[Exchange, Exchange], bool]
) -> tuple[list[Message], list[str]]:
    from hypothesis import strategies as st

    # Exchanges start at an assistant message with tool_use that a user message with results follows.
    starts = [
        i
        for i in range(len(messages) - 1)
        if messages[i].get("role") == "assistant"
        and any(isinstance(b, Mapping) and b.get("type") == "tool_use" for b in _blocks(messages[i]))
        and any(_is_result(b) for b in _blocks(messages[i + 1]))
    ]
    starts = starts[:-1]  # the exchange the decision answers stays where it is
    done: list[str] = []
    for first, second in itertools.pairwise(starts):
        if second != first + 2:
            continue
        a = (messages[first], messages[first + 1])
        b = (messages[second], messages[second + 1])
        if independent(a, b) and draw(st.booleans()):
            messages[first : first + 4] = [*b, *a]
            done.append(f"messages[{first}:{first + 2}] swapped with messages[{second}:{second + 2}]")
    return messages, done


def read_only(*tools: str) -> Callable[[Exchange, Exchange], bool]:
    """An `independent` for `reordered_tool_results`: exchanges that only call these tools."""
    names = frozenset(tools)

    def check(a: Exchange, b: Exchange) -> bool:
        return all(
            block.get("name") in names
            for message in (a[0], b[0])
            for block in _blocks(message)
            if isinstance(block, Mapping) and block.get("type") == "tool_use"
        )

    return check


# -- renaming -----------------------------------------------------------------------------------------


def used_paths(case: StepCase) -> list[str]:
    """The file paths the agent passed to its tools in the case's history, and those the expected
    decision names (a path argument written as a literal)."""
    found: dict[str, None] = {}

    def collect(arguments: Any) -> None:
        if isinstance(arguments, Mapping):
            for key in PATH_KEYS:
                value = arguments.get(key)
                if isinstance(value, str) and value and not value.startswith("$"):
                    found[value] = None

    for message in case.messages:
        for block in _blocks(message):
            if isinstance(block, Mapping) and block.get("type") == "tool_use":
                collect(block.get("input"))
    expected = case.expect.raw
    collect(expected.get("args"))
    for call in expected.get("calls") or ():
        collect(call.get("args") if isinstance(call, Mapping) else None)
    return list(found)


def rename(value: Any, mapping: Mapping[str, str]) -> Any:
    """`value` (JSON) with every whole occurrence of each old path replaced by its new one, at once."""
    if not mapping:
        return value
    pattern = re.compile(
        r"(?<![\w.-])("
        + "|".join(re.escape(old) for old in sorted(mapping, key=len, reverse=True))
        + r")(?![\w-])"
    )

    def walk(item: Any) -> Any:
        if isinstance(item, str):
            return pattern.sub(lambda found: mapping[found.group(1)], item)
        if isinstance(item, Mapping):
            return {key: walk(inner) for key, inner in item.items()}
        if isinstance(item, list):
            return [walk(inner) for inner in item]
        return item

    return walk(value)


def renamed_paths(case: StepCase, paths: Iterable[str] | None = None) -> SearchStrategy[Perturbed]:
    """The case with its file paths (those the agent used, or `paths`) renamed consistently in the
    whole context and in the expectation; directories and extensions are kept."""
    from hypothesis import strategies as st

    old = list(paths) if paths is not None else used_paths(case)
    stem = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=3, max_size=8)

    @st.composite
    def build(draw: Any) -> Perturbed:
        taken = set(old)
        mapping: dict[str, str] = {}
        for path in old:
            folder, _, name = path.rpartition("/")
            extension = name[name.rfind(".") :] if "." in name else ""
            prefix = folder + "/" if folder else ""
            new = prefix + draw(stem.filter(_free(prefix, extension, taken))) + extension
            taken.add(new)
            mapping[path] = new
        context = rename(dict(case.context), mapping)
        expect = parse_expectation(case.kind, rename(case.expect.raw, mapping), "expect")
        renamed = dataclasses.replace(case, context=context, expect=expect)
        shown = ", ".join(f"{a}→{b}" for a, b in mapping.items()) or "no paths"
        return Perturbed(renamed, f"renamed {shown}")

    return build()


def _free(prefix: str, extension: str, taken: set[str]) -> Callable[[str], bool]:
    return lambda stem: prefix + stem + extension not in taken


# -- padding ------------------------------------------------------------------------------------------


def padded_history(
    case: StepCase, tokens: int, filler: SearchStrategy[str] | None = None, after: int = 1
) -> SearchStrategy[Perturbed]:
    """The case with irrelevant exchanges (an assistant note, a user aside) inserted after its first
    `after` messages until they add about `tokens` tokens (four characters a token)."""
    from hypothesis import strategies as st

    text = (
        filler
        if filler is not None
        else st.lists(st.sampled_from(IRRELEVANT), min_size=1, max_size=4).map(" ".join)
    )
    messages = _messages(case)

    @st.composite
    def build(draw: Any) -> Perturbed:
        padding: list[Message] = []
        added = 0
        while added < tokens:
            aside = draw(text)
            padding.append({"role": "assistant", "content": [{"type": "text", "text": "Noted."}]})
            padding.append({"role": "user", "content": [{"type": "text", "text": aside}]})
            added += approx_tokens("Noted." + aside)
        out = [*messages[:after], *padding, *messages[after:]]
        return Perturbed(
            _with_messages(case, out), f"{len(padding)} irrelevant messages (~{added} tokens) padded"
        )

    return build()


def perturbations(
    case: StepCase, pad_tokens: int = 1000, independent: Callable[[Exchange, Exchange], bool] | None = None
) -> SearchStrategy[Perturbed]:
    """Any one of the perturbations above."""
    from hypothesis import strategies as st

    return st.one_of(
        reordered_tool_results(case, independent), renamed_paths(case), padded_history(case, pad_tokens)
    )


# What the docs and a user may import from here; the rest is this module's own.
__all__ = [
    "Perturbed",
    "padded_history",
    "perturbations",
    "read_only",
    "renamed_paths",
    "reordered_tool_results",
    "used_paths",
]
