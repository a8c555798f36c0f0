"""The bounded YAML loader (see `loaders.py`): composed before it is built, aliases, depth and tags
bounded, every number, date and binary checked alone so a bad one names its line and key.

A document of plain data (no anchor, alias or tag, nesting well within the bound) is built straight
from the parser's events instead (`yaml_plain.py`), about five times faster; at the first event that
is not plain data it declines, and the document is read again here."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

import yaml

from .loaders import MAX_DEPTH, Fail, excerpt
from .yaml_plain import DECLINED, build_plain

MAX_EXPANSION: Final = 10
MIN_EXPANDED_NODES: Final = 100_000

# libyaml's loader when it is there and sees the `yaml` module imported now: its extension keeps the
# node classes it first imported, so after a re-import (pytester drops modules between runs) it
# would compose nodes the resolver and constructor no longer recognise.
_C_NODES = getattr(getattr(yaml, "_yaml", None), "ScalarNode", None)
_SafeBase: Any = yaml.CSafeLoader if _C_NODES is yaml.ScalarNode else yaml.SafeLoader


class _Loader(_SafeBase):  # type: ignore[misc]
    """YAML's safe loader (libyaml's when present)."""


class _PythonTagsLoader(_Loader):
    """The safe loader plus the harmless Python tags vcrpy writes (str, unicode, tuple)."""


def _scalar(loader: Any, node: Any) -> Any:
    return loader.construct_scalar(node)


def _tuple(loader: Any, node: Any) -> Any:
    return tuple(loader.construct_sequence(node))


for _tag, _constructor in (
    ("tag:yaml.org,2002:python/str", _scalar),
    ("tag:yaml.org,2002:python/unicode", _scalar),
    ("tag:yaml.org,2002:python/tuple", _tuple),
):
    _PythonTagsLoader.add_constructor(_tag, _constructor)

# A merge key (`<<: *defaults`) has no constructor of its own: the mapping that holds it merges it.
_MERGE = "tag:yaml.org,2002:merge"
_SAFE_TAGS: Final = frozenset({_MERGE, *(tag for tag in _Loader.yaml_constructors if tag is not None)})
_PYTHON_TAGS: Final = frozenset(
    {_MERGE, *(tag for tag in _PythonTagsLoader.yaml_constructors if tag is not None)}
)
# Scalars whose text may not make a value: built alone first so a bad one names its line and key.
_CHECKED: Final = {
    "tag:yaml.org,2002:int": "an integer",
    "tag:yaml.org,2002:float": "a number",
    "tag:yaml.org,2002:timestamp": "a date",
    "tag:yaml.org,2002:binary": "base64 data",
    "tag:yaml.org,2002:bool": "a boolean",
}


def expansion(text: str | bytes) -> tuple[int, int]:
    """(nodes the document expands to, nodes written), counted from the parser's events before any
    node is composed: memory for the anchors and the nesting only, so a bomb padded to megabytes is
    refused without building its graph. ValueError for an alias that contains itself."""
    loader = _Loader(text)
    sizes: dict[str, int] = {}
    stack: list[list[Any]] = [[0, None]]  # [size so far, anchor] of each open collection
    open_: set[str] = set()
    written = 0
    try:
        while loader.check_event():
            event = loader.get_event()
            kind = type(event).__name__  # by name: see _C_NODES
            if kind == "AliasEvent":
                if event.anchor in open_:
                    raise ValueError("an alias that contains itself")
                stack[-1][0] += sizes.get(event.anchor, 0)  # an unknown one: the composer says so
            elif kind == "ScalarEvent":
                written += 1
                stack[-1][0] += 1
                if event.anchor is not None:
                    sizes[event.anchor] = 1
            elif kind in ("SequenceStartEvent", "MappingStartEvent"):
                written += 1
                stack.append([1, event.anchor])
                if event.anchor is not None:
                    open_.add(event.anchor)
            elif kind in ("SequenceEndEvent", "MappingEndEvent"):
                size, anchor = stack.pop()
                if anchor is not None:
                    sizes[anchor] = size
                    open_.discard(anchor)
                stack[-1][0] += size
    finally:
        loader.dispose()
    return stack[0][0], written


# Where a node is, as a chain (the parent's chain, this step) built as the walk goes and spelled out
# (`_path`) only for a problem: a file of 80,000 nodes then builds no string per node.
Where = tuple[Any, str, bool] | None  # (the parent's, a mapping key or "[index]", whether a key)


def _path(where: Where) -> str:
    """The key path of `where`, as `cases[3].expect.tool`."""
    steps: list[str] = []
    while where is not None:
        where, step, is_key = where
        if is_key:
            step = step if len(step) <= 40 else step[:40] + "..."
            steps.append(step if where is None else "." + step)
        else:
            steps.append(step)
    return "".join(reversed(steps))


def _at(where: Where) -> str:
    """The key path as a problem's prefix; bounded, as a deep document's would quote thousands of `[0]`."""
    if where is None:
        return ""
    path = _path(where)
    return f"{path if len(path) <= 80 else '...' + path[-77:]}: "


def _walk(root: Any) -> Iterator[tuple[Any, Where, int]]:
    """Each written node once (an alias's target at its first place), with where it is and its depth.
    Node kinds are told by their `id`, not by isinstance (see _C_NODES)."""
    seen: set[int] = set()
    stack: list[tuple[Any, Where, int]] = [(root, None, 1)]
    push = stack.append
    while stack:
        node, where, depth = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        yield node, where, depth
        kind = node.id
        if kind == "sequence":
            child_depth = depth + 1
            for i, child in enumerate(node.value):
                push((child, (where, f"[{i}]", False), child_depth))
        elif kind == "mapping":
            child_depth = depth + 1
            for key, value in node.value:
                push((key, where, child_depth))
                push((value, (where, key.value if key.id == "scalar" else "?", True), child_depth))


ALIAS_FIX: Final = "refused to expand them: write the repeated parts out instead of aliasing them"


def fix_for(problem: str, fix: str) -> str:
    """The fix to print for a problem `load_yaml` reported: aliases have their own."""
    return ALIAS_FIX if problem.startswith(("holds YAML aliases", "holds an alias")) else fix


def load_yaml(text: str | bytes, fail: Fail, *, python_tags: bool = False) -> Any:
    """One YAML document, bounded before it is built (see the module's docstring); None if empty.

    `python_tags` also allows the Python str, unicode and tuple tags vcrpy writes. The problem
    `fail` gets is bare; `fix_for` gives the fix for an alias problem.
    """
    loader = (_PythonTagsLoader if python_tags else _Loader)(text)
    try:
        # Plain data (no anchor, alias or tag) is built from the parser's events at once; anything
        # else is declined and read again, bounded before it is built (`yaml_plain.py`).
        plain = build_plain(loader)
    finally:
        loader.dispose()
    return bounded_yaml(text, fail, python_tags=python_tags) if plain is DECLINED else plain


def bounded_yaml(text: str | bytes, fail: Fail, *, python_tags: bool = False) -> Any:
    """`load_yaml` without its fast path: counted, composed and checked node by node, then built."""
    loader = (_PythonTagsLoader if python_tags else _Loader)(text)
    allowed = _PYTHON_TAGS if python_tags else _SAFE_TAGS
    try:
        # An alias is written `*name`: a file without a `*` has none, and skips the counting pass.
        if (b"*" in text) if isinstance(text, bytes) else ("*" in text):
            try:
                expanded, written = expansion(text)
            except ValueError as exc:
                raise fail(0, f"holds {exc}") from None
            if expanded > max(MIN_EXPANDED_NODES, MAX_EXPANSION * written):
                raise fail(
                    0,
                    f"holds YAML aliases that expand {written:,} written nodes into {expanded:,}",
                )
        node = loader.get_single_node()
        if node is None:
            return None
        for item, where, depth in _walk(node):
            if depth > MAX_DEPTH:
                line = item.start_mark.line + 1
                raise fail(line, f"{_at(where)}nested deeper than {MAX_DEPTH} levels: refused")
            tag = item.tag
            if tag not in allowed:
                problem = f"the tag {excerpt(tag)} is not one of YAML's safe tags"
                raise fail(item.start_mark.line + 1, f"{_at(where)}is not valid YAML here: {problem}")
            kind = _CHECKED.get(tag)
            if kind is not None and item.id == "scalar":
                try:
                    loader.construct_object(item)
                except (ValueError, TypeError, AttributeError, OverflowError, yaml.YAMLError):
                    line = item.start_mark.line + 1
                    raise fail(line, f"{_at(where)}{excerpt(item.value)} is not {kind}") from None
        return loader.construct_document(node)
    except RecursionError:
        raise fail(0, f"nested deeper than {MAX_DEPTH} levels: refused") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 0
        raise fail(line, f"is not valid YAML: {exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise fail(0, f"is not valid YAML: {excerpt(str(exc))}") from None
    except (ValueError, TypeError) as exc:
        # A merge key or a mapping key that cannot be built: no line, but never a traceback.
        raise fail(0, f"is not valid YAML: {excerpt(str(exc))}") from None
    finally:
        loader.dispose()


def compose_yaml(text: str | bytes, fail: Fail) -> Any:
    """The composed node graph of one YAML document (nothing built), for readers of positions."""
    loader = _Loader(text)
    try:
        return loader.get_single_node()
    except RecursionError:
        raise fail(0, f"nested deeper than {MAX_DEPTH} levels: refused") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise fail(mark.line + 1 if mark else 0, f"is not valid YAML: {exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise fail(0, f"is not valid YAML: {excerpt(str(exc))}") from None
    finally:
        loader.dispose()
