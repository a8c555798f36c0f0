"""Tool choice (the right tool with the right arguments) and trajectories of several tool calls."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..errors import GoldenError
from .decision import Decision, ToolCall
from .expectation import Expectation, Outcome, choice, describe_decision
from .judge import Judge
from .matchers import Row, compare, compile_expected, import_function, rebless_data, show, to_data

ARG_MODES = ("exact", "subset")
ORDERS = ("strict", "unordered", "subset", "superset")


class ExpectedCall:
    """One expected tool call: a tool name (or matcher) and, optionally, its arguments."""

    def __init__(self, tool: Any, args: Any, subset: bool) -> None:
        self.tool = tool
        self.args = args  # None: the arguments are not checked
        self.subset = subset

    @classmethod
    def parse(cls, raw: Mapping[str, Any], where: str, subset: bool) -> ExpectedCall:
        if "tool" not in raw:
            raise GoldenError(f"{where}.tool", "is required", "name the tool: tool: read_file")
        args = raw.get("args")
        if args is not None and not isinstance(args, Mapping):
            raise GoldenError(
                f"{where}.args", f"is {type(args).__name__}, not a mapping", "write args: {path: a.py}"
            )
        return cls(
            compile_expected(raw["tool"], f"{where}.tool"),
            None if args is None else compile_expected(args, f"{where}.args"),
            subset,
        )

    def rows(self, call: ToolCall, prefix: str = "") -> list[Row]:
        rows = compare(self.tool, call.name, f"{prefix}tool")
        if self.args is not None:
            rows.extend(compare(self.args, dict(call.input), f"{prefix}args", self.subset))
        return rows

    def matches(self, call: ToolCall) -> bool:
        return all(row.ok for row in self.rows(call))

    def describe(self) -> str:
        return show(self.tool) + ("" if self.args is None else show(self.args))


def _show_call(call: ToolCall) -> str:
    return call.name + show(dict(call.input))


def _arg_mode(raw: Mapping[str, Any], where: str) -> bool:
    return choice(raw, "match", where, ARG_MODES) == "subset"


class ToolChoice(Expectation):
    """The decision's first tool call: its tool, its arguments (exactly or as a subset, with per-field
    matchers), and optionally a function of the arguments."""

    kind = "tool_choice"
    keys = ("tool", "args", "match", "check")
    required = ("tool",)

    def __init__(
        self, raw: Mapping[str, Any], call: ExpectedCall, check_fn: Callable[..., Any] | None
    ) -> None:
        super().__init__(raw)
        self.call = call
        self.check_fn = check_fn

    @classmethod
    def example(cls) -> str:
        return "expect: {tool: read_file, args: {path: a.py}}"

    @classmethod
    def _parse(cls, raw: Mapping[str, Any], where: str) -> ToolChoice:
        check = raw.get("check")
        check_fn = None
        if check is not None:
            if not isinstance(check, str):
                raise GoldenError(
                    f"{where}.check", f"{check!r} is not an import path", "write 'package.module:fn'"
                )
            check_fn = import_function(check, f"{where}.check")
        return cls(raw, ExpectedCall.parse(raw, where, _arg_mode(raw, where)), check_fn)

    @classmethod
    def data_from(cls, decision: Decision) -> dict[str, Any]:
        call = decision.tool_calls[0]
        return {"tool": call.name, "args": dict(call.input)}

    def check(self, decision: Decision, judge: Judge | None = None) -> Outcome:
        if not decision.tool_calls:
            rows = [Row("tool", show(self.call.tool), describe_decision(decision), False, "no tool call")]
            return Outcome(rows)
        call = decision.tool_calls[0]
        rows = self.call.rows(call)
        if self.check_fn is not None:
            rows.append(self._check_row(call, decision))
        notes = []
        if len(decision.tool_calls) > 1:
            others = ", ".join(c.name for c in decision.tool_calls[1:])
            notes.append(
                f"the decision made {len(decision.tool_calls)} tool calls; checked the first (then: {others})"
            )
        return Outcome(rows, notes=notes)

    def _check_row(self, call: ToolCall, decision: Decision) -> Row:
        label = f"{self.raw['check']}(args)"
        try:
            result = self.check_fn(dict(call.input), decision)  # type: ignore[misc]
        except Exception as exc:
            return Row("check", label, f"raised {type(exc).__name__}: {exc}", False)
        if isinstance(result, str):
            return Row("check", label, result, False)
        ok = result is None or bool(result)
        return Row("check", label, "passed" if ok else "returned false", ok)

    def rebless(self, decision: Decision) -> dict[str, Any]:
        if not decision.tool_calls:
            raise GoldenError(
                "expect",
                f"cannot re-bless a tool_choice from a decision that {describe_decision(decision)}",
                "change the case's kind, or fix the agent",
            )
        call = decision.tool_calls[0]
        raw = dict(self.raw)
        if not all(row.ok for row in compare(self.call.tool, call.name)):
            raw["tool"] = call.name
            if "args" in raw:
                raw["args"] = dict(call.input)
        elif "args" in raw:
            raw["args"] = rebless_data(raw["args"], dict(call.input), self.call.subset)
        if self.check_fn is not None and not self._check_row(call, decision).ok:
            del raw["check"]
            raw["args"] = dict(call.input)
        return raw


class Trajectory(Expectation):
    """Several tool calls, compared as langchain's agentevals does: `strict` (the same calls in the same
    order), `unordered` (the same calls in any order), `subset` (no call beyond the expected ones),
    `superset` (at least the expected calls)."""

    kind = "trajectory"
    keys = ("calls", "order", "match")
    required = ("calls",)

    def __init__(self, raw: Mapping[str, Any], calls: list[ExpectedCall], order: str) -> None:
        super().__init__(raw)
        self.calls = calls
        self.order = order

    @classmethod
    def example(cls) -> str:
        return "expect: {calls: [{tool: read_file}, {tool: run_check}], order: strict}"

    @classmethod
    def _parse(cls, raw: Mapping[str, Any], where: str) -> Trajectory:
        calls = raw["calls"]
        if not isinstance(calls, list) or not all(isinstance(call, Mapping) for call in calls):
            raise GoldenError(
                f"{where}.calls", "is not a list of {tool: ..., args: ...}", f"write {cls.example()}"
            )
        subset = _arg_mode(raw, where)
        parsed = [ExpectedCall.parse(call, f"{where}.calls[{i}]", subset) for i, call in enumerate(calls)]
        return cls(raw, parsed, choice(raw, "order", where, ORDERS))

    @classmethod
    def data_from(cls, decision: Decision) -> dict[str, Any]:
        return {"calls": [call.as_data() for call in decision.tool_calls], "order": "strict"}

    def check(self, decision: Decision, judge: Judge | None = None) -> Outcome:
        actual = list(decision.tool_calls)
        if self.order == "strict":
            return Outcome(self._strict_rows(actual))
        pairs = _matching(self.calls, actual)
        rows: list[Row] = []
        for want_index, want in enumerate(self.calls):
            got_index = pairs.get(want_index)
            if got_index is None:
                rows.append(
                    Row(
                        f"calls[{want_index}]",
                        want.describe(),
                        "(not made)",
                        self.order == "subset",
                        "missing",
                    )
                )
            else:
                rows.append(Row(f"calls[{want_index}]", want.describe(), _show_call(actual[got_index]), True))
        matched = set(pairs.values())
        rows.extend(
            Row(f"(extra) #{index}", "(none)", _show_call(call), self.order == "superset", "unexpected")
            for index, call in enumerate(actual)
            if index not in matched
        )
        return Outcome(rows or [Row("calls", "[]", "[]", True)], notes=[f"order: {self.order}"])

    def _strict_rows(self, actual: Sequence[ToolCall]) -> list[Row]:
        rows: list[Row] = []
        for index in range(max(len(self.calls), len(actual))):
            prefix = f"calls[{index}]."
            if index >= len(actual):
                rows.append(
                    Row(f"calls[{index}]", self.calls[index].describe(), "(not made)", False, "missing")
                )
            elif index >= len(self.calls):
                rows.append(Row(f"calls[{index}]", "(none)", _show_call(actual[index]), False, "unexpected"))
            else:
                rows.extend(self.calls[index].rows(actual[index], prefix))
        return rows or [Row("calls", "[]", "[]", True)]

    def rebless(self, decision: Decision) -> dict[str, Any]:
        raw = dict(self.raw)
        raw["calls"] = [to_data(call.as_data()) for call in decision.tool_calls]
        return raw


def _matching(expected: Sequence[ExpectedCall], actual: Sequence[ToolCall]) -> dict[int, int]:
    """A maximum matching of expected calls to distinct actual calls (augmenting paths; lists are short)."""
    fits = [[j for j, call in enumerate(actual) if want.matches(call)] for want in expected]
    owner: dict[int, int] = {}  # actual index -> expected index

    def place(i: int, seen: set[int]) -> bool:
        for j in fits[i]:
            if j in seen:
                continue
            seen.add(j)
            if j not in owner or place(owner[j], seen):
                owner[j] = i
                return True
        return False

    for i in range(len(expected)):
        place(i, set())
    return {i: j for j, i in owner.items()}
