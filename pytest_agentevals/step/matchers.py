"""Per-field matchers, and comparing an expected value (literals and matchers) with an actual one.

In a goldens file a matcher is a mapping with one `$` key:

    path: {$regex: "^src/.*\\.py$"}       content: $any
    timeout: {$approx: 30, rel: 0.1}      mode: {$one_of: [fast, safe]}
    query: {$call: "mypkg.checks:is_safe_sql"}

Everything else is a literal, compared with `==` (mappings and lists field by field).
"""

from __future__ import annotations

import importlib
import json
import math
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import GoldenError


class Matcher(ABC):
    """A rule a value must satisfy, in place of a literal expected value."""

    @abstractmethod
    def matches(self, actual: Any) -> bool: ...

    @abstractmethod
    def describe(self) -> str:
        """How the expected column shows it."""

    @abstractmethod
    def to_data(self) -> Any:
        """Its form in a goldens file."""

    def __repr__(self) -> str:
        return self.describe()


class AnyValue(Matcher):
    """Anything at all (the field must still be present)."""

    def matches(self, actual: Any) -> bool:
        return True

    def describe(self) -> str:
        return "<any>"

    def to_data(self) -> Any:
        return "$any"


@dataclass(frozen=True, repr=False)
class Regex(Matcher):
    """A string the pattern is found in (`re.search`; anchor it with ^...$ to match the whole)."""

    pattern: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "_compiled", re.compile(self.pattern))

    def find(self, text: str) -> str | None:
        """The first part of `text` the pattern matches, or None."""
        compiled: re.Pattern[str] = self._compiled  # type: ignore[attr-defined]
        found = compiled.search(text)
        return found.group(0) if found else None

    def matches(self, actual: Any) -> bool:
        return isinstance(actual, str) and self.find(actual) is not None

    def describe(self) -> str:
        return f"/{self.pattern}/"

    def to_data(self) -> Any:
        return {"$regex": self.pattern}


@dataclass(frozen=True, repr=False)
class Approx(Matcher):
    """A number within `rel` (relative) or `abs` (absolute) of `value`."""

    value: float
    rel: float | None = None
    abs: float | None = None

    def matches(self, actual: Any) -> bool:
        if isinstance(actual, bool) or not isinstance(actual, int | float):
            return False
        rel = 1e-6 if self.rel is None and self.abs is None else (self.rel or 0.0)
        return math.isclose(actual, self.value, rel_tol=rel, abs_tol=self.abs or 0.0)

    def describe(self) -> str:
        tolerance = f"±{self.abs}" if self.abs is not None else f"±{(self.rel or 1e-6) * 100:g}%"
        return f"{self.value} {tolerance}"

    def to_data(self) -> Any:
        data: dict[str, Any] = {"$approx": self.value}
        if self.rel is not None:
            data["rel"] = self.rel
        if self.abs is not None:
            data["abs"] = self.abs
        return data


@dataclass(frozen=True, repr=False)
class OneOf(Matcher):
    """Any one of several values (each a literal or a matcher)."""

    options: tuple[Any, ...]

    def matches(self, actual: Any) -> bool:
        return any(all(row.ok for row in compare(option, actual)) for option in self.options)

    def describe(self) -> str:
        return "one of " + ", ".join(show(option) for option in self.options)

    def to_data(self) -> Any:
        return {"$one_of": [to_data(option) for option in self.options]}


@dataclass(frozen=True, repr=False)
class Call(Matcher):
    """A function of the value that returns true when it is right."""

    function: Callable[[Any], Any]
    label: str = ""

    def matches(self, actual: Any) -> bool:
        return bool(self.function(actual))

    def describe(self) -> str:
        return f"{self.label or getattr(self.function, '__name__', 'function')}(value)"

    def to_data(self) -> Any:
        if not self.label:
            raise GoldenError(
                "expect",
                f"the matcher {self.describe()} has no import path",
                "give Call a label 'module:function'",
            )
        return {"$call": self.label}


# -- comparing --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One field of a comparison: what was expected, what the decision had, and whether they agree."""

    field: str
    expected: str
    actual: str
    ok: bool
    note: str = ""


MISSING = object()


def compare(expected: Any, actual: Any, path: str = "", subset: bool = False) -> list[Row]:
    """Rows for `expected` against `actual`, one per leaf field. With `subset`, fields the decision has
    and the expectation does not mention are fine; otherwise they are reported as unexpected."""
    if isinstance(expected, Matcher):
        return [_leaf(path, expected, actual, _matcher_ok(expected, actual))]
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        rows: list[Row] = []
        for key, value in expected.items():
            rows.extend(compare(value, actual.get(key, MISSING), _join(path, key), subset))
        if not subset:
            rows.extend(
                Row(_join(path, key), "(absent)", show(value), False, "unexpected")
                for key, value in actual.items()
                if key not in expected
            )
        return rows or [Row(path or "(value)", "{}", "{}", True)]
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        rows = []
        for index, (want, got) in enumerate(zip(expected, actual, strict=True)):
            rows.extend(compare(want, got, f"{path}[{index}]", subset))
        return rows or [Row(path or "(value)", "[]", "[]", True)]
    return [_leaf(path, expected, actual, actual is not MISSING and _equal(expected, actual))]


def _matcher_ok(matcher: Matcher, actual: Any) -> bool:
    if actual is MISSING:
        return False
    try:
        return matcher.matches(actual)
    except Exception:  # a user's $call that raises is a mismatch, not a crash of the whole case
        return False


def _leaf(path: str, expected: Any, actual: Any, ok: bool) -> Row:
    note = ""
    if not ok:
        if actual is MISSING:
            note = "missing"
        elif isinstance(expected, list) and isinstance(actual, list):
            note = f"{len(actual)} items, expected {len(expected)}"
        elif isinstance(expected, Regex):
            note = "no match"
    return Row(path or "(value)", show(expected), "(absent)" if actual is MISSING else show(actual), ok, note)


def _equal(expected: Any, actual: Any) -> bool:
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    return bool(expected == actual)


def _join(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


def show(value: Any, width: int = 0) -> str:
    """A value as the comparison table shows it: matchers described, the rest as compact JSON."""
    if isinstance(value, Matcher):
        text = value.describe()
    else:
        try:
            text = json.dumps(to_data(value), ensure_ascii=False, default=repr)
        except (TypeError, ValueError):
            text = repr(value)
    if width and len(text) > width:
        text = text[: width - 1] + "…"
    return text


def to_data(value: Any) -> Any:
    """An expected value as a goldens file writes it."""
    if isinstance(value, Matcher):
        return value.to_data()
    if isinstance(value, Mapping):
        return {key: to_data(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [to_data(item) for item in value]
    return value


# -- reading matchers from a goldens file -----------------------------------------------------------

MATCHER_KEYS = ("$any", "$regex", "$approx", "$one_of", "$call")
_APPROX_OPTIONS = frozenset({"rel", "abs"})


def compile_expected(raw: Any, where: str) -> Any:
    """The expected value of a goldens file with its `$` mappings turned into matchers.

    `where` names the file, case and key, for the error a bad matcher raises.
    """
    if raw == "$any":
        return AnyValue()
    if isinstance(raw, list):
        return [compile_expected(item, f"{where}[{index}]") for index, item in enumerate(raw)]
    if not isinstance(raw, Mapping):
        return raw
    special = [key for key in raw if isinstance(key, str) and key.startswith("$")]
    if not special:
        return {key: compile_expected(value, f"{where}.{key}") for key, value in raw.items()}
    unknown = [key for key in special if key not in MATCHER_KEYS]
    if unknown:
        raise GoldenError(
            where, f"unknown matcher {', '.join(unknown)}", "use one of: " + ", ".join(MATCHER_KEYS)
        )
    if len(special) > 1:
        raise GoldenError(
            where, f"{' and '.join(special)} in one value", "a value is one matcher: keep one of them"
        )
    return _matcher(special[0], raw, where)


def _matcher(key: str, raw: Mapping[str, Any], where: str) -> Matcher:
    value = raw[key]
    extra = set(raw) - {key} - (_APPROX_OPTIONS if key == "$approx" else set())
    if extra:
        raise GoldenError(where, f"{key} takes no key {sorted(extra)[0]!r}", _MATCHER_HELP[key])
    if key == "$any":
        if value is not True:
            raise GoldenError(where, f"$any: {value!r}", _MATCHER_HELP[key])
        return AnyValue()
    if key == "$regex":
        if not isinstance(value, str):
            raise GoldenError(where, f"$regex: {value!r} is not a string", _MATCHER_HELP[key])
        try:
            return Regex(value)
        except re.error as exc:
            raise GoldenError(
                where, f"$regex {value!r} is not a valid pattern: {exc}", "fix the pattern"
            ) from None
    if key == "$approx":
        numbers = {"value": value, **{name: raw[name] for name in _APPROX_OPTIONS & set(raw)}}
        for name, number in numbers.items():
            if isinstance(number, bool) or not isinstance(number, int | float):
                raise GoldenError(where, f"$approx {name} {number!r} is not a number", _MATCHER_HELP[key])
        return Approx(float(value), _float(raw.get("rel")), _float(raw.get("abs")))
    if key == "$one_of":
        if not isinstance(value, list) or not value:
            raise GoldenError(where, f"$one_of: {value!r} is not a non-empty list", _MATCHER_HELP[key])
        return OneOf(tuple(compile_expected(item, f"{where}.$one_of[{i}]") for i, item in enumerate(value)))
    if not isinstance(value, str):
        raise GoldenError(where, f"$call: {value!r} is not a string", _MATCHER_HELP[key])
    return Call(import_function(value, where), value)


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


_MATCHER_HELP = {
    "$any": "write $any, or {$any: true}",
    "$regex": 'write {$regex: "pattern"}',
    "$approx": "write {$approx: 30} with optional rel: 0.1 or abs: 2",
    "$one_of": "write {$one_of: [a, b]}",
    "$call": 'write {$call: "package.module:function"}, a function of the value returning true or false',
}


def import_function(spec: str, where: str) -> Callable[..., Any]:
    """The function at `package.module:function` (the user's own code, found on sys.path)."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise GoldenError(where, f"{spec!r} is not an import path", "write it as 'package.module:function'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise GoldenError(
            where, f"cannot import {module_name!r}: {exc}", "check the module is on sys.path"
        ) from None
    function = module
    for part in attribute.split("."):
        function = getattr(function, part, None)  # type: ignore[assignment]
        if function is None:
            raise GoldenError(where, f"{module_name!r} has no {attribute!r}", "check the function's name")
    if not callable(function):
        raise GoldenError(where, f"{spec!r} is not callable", "point at a function")
    return function


def is_matcher_data(raw: Any) -> bool:
    return raw == "$any" or (
        isinstance(raw, Mapping) and any(isinstance(key, str) and key.startswith("$") for key in raw)
    )


def rebless_data(raw: Any, actual: Any, subset: bool = False, where: str = "expect") -> Any:
    """`raw` (an expected value as written) changed as little as it takes to accept `actual`: parts that
    still match are kept as written, matchers included; the rest become the actual values."""
    if all(row.ok for row in compare(compile_expected(raw, where), actual, subset=subset)):
        return raw
    if isinstance(raw, Mapping) and not is_matcher_data(raw) and isinstance(actual, Mapping):
        kept = {
            key: rebless_data(value, actual[key], subset, f"{where}.{key}")
            for key, value in raw.items()
            if key in actual
        }
        if not subset:
            kept.update({key: value for key, value in actual.items() if key not in raw})
        return kept
    if isinstance(raw, list) and isinstance(actual, list) and len(raw) == len(actual):
        return [
            rebless_data(want, got, subset, f"{where}[{i}]")
            for i, (want, got) in enumerate(zip(raw, actual, strict=True))
        ]
    return actual
