"""YAML in and out of goldens files: the safe loader (libyaml's when present), a readable dumper, the
line a key is on, and replacing one case's `expect:` block in place, comments elsewhere untouched."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import yaml

from ..errors import GoldenError
from ..trace.yaml_loader import fix_for
from ..trace.yaml_loader import load_yaml as bounded_yaml

SafeLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(text: str, display: str) -> Any:
    """A goldens file's YAML, through the bounded loader: no alias bomb, unsafe tag or bad date."""

    def fail(line: int, problem: str) -> GoldenError:
        where = f"{display}:{line}" if line else display
        return GoldenError(where, problem, fix_for(problem, "fix the file at that line"))

    return bounded_yaml(text, fail)


class _Dumper(yaml.SafeDumper):
    """Block style, keys in the order given, multi-line strings as literal blocks, and no anchors: a
    message two cases share is written out in both, so editing one never changes the other."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value and not value.startswith((" ", "\n")) and " \n" not in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def dump_yaml(data: Any) -> str:
    return yaml.dump(
        data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100, default_flow_style=False
    )


_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def _node_at(root: yaml.Node | None, path: Sequence[str | int]) -> yaml.Node | None:
    """The deepest node along `path` (keys and list indexes) that exists."""
    node = root
    for part in path:
        child: yaml.Node | None = None
        if isinstance(node, yaml.MappingNode):
            child = next((value for key, value in node.value if key.value == part), None)
            if child is None:
                child = next((key for key, _ in node.value if key.value == part), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            child = node.value[part]
        if child is None:
            break
        node = child
    return node


def line_of(text: str, path: Sequence[str | int]) -> int | None:
    """The 1-based line of the node at `path`, or of the deepest of its parents that exists."""
    try:
        root = yaml.compose(text, Loader=SafeLoader)
    except yaml.YAMLError:
        return None
    node = _node_at(root, path)
    return None if node is None else node.start_mark.line + 1


def key_path(dotted: str) -> list[str | int]:
    """`expect.args[0].path` as ["expect", "args", 0, "path"]."""
    return [name if name else int(index) for name, index in _PART.findall(dotted)]


def replace_expect(text: str, case_index: int, new_expect: Any, display: str) -> str:
    """`text` with the `expect:` block of the case at `case_index` replaced by `new_expect`.

    Only the lines of that block change; comments and formatting elsewhere stay as they were.
    """
    root = yaml.compose(text, Loader=SafeLoader)
    case = _node_at(root, ["cases", case_index])
    if root is None or not isinstance(case, yaml.MappingNode):
        raise GoldenError(display, f"has no case #{case_index + 1} to update", "re-run the session")
    keys = [key.value for key, _ in case.value]
    if "expect" not in keys:
        raise GoldenError(display, f"case #{case_index + 1} has no expect: block", "add one")
    position = keys.index("expect")
    key = case.value[position][0]
    lines = text.splitlines(keepends=True)
    start, column = key.start_mark.line, key.start_mark.column
    end = _next_line(root, case, case_index, position, len(lines))
    while end > start + 1 and _outside(lines[end - 1], column):
        end -= 1  # blank lines and comments between this block and the next are not part of it
    body = dump_yaml({"expect": new_expect}).splitlines(keepends=True)
    prefix = lines[start][:column]  # "  - " when expect is the case's first key
    block = [prefix + body[0]] + [" " * column + line for line in body[1:]]
    return "".join(lines[:start] + block + lines[end:])


def _next_line(root: yaml.Node, case: yaml.MappingNode, case_index: int, position: int, total: int) -> int:
    """The 0-based line where whatever follows a case's key number `position` starts."""
    if position + 1 < len(case.value):
        return int(case.value[position + 1][0].start_mark.line)
    cases = _node_at(root, ["cases"])
    if isinstance(cases, yaml.SequenceNode) and case_index + 1 < len(cases.value):
        return int(cases.value[case_index + 1].start_mark.line)
    if isinstance(root, yaml.MappingNode):
        keys = [key.value for key, _ in root.value]
        after = keys.index("cases") + 1
        if after < len(keys):
            return int(root.value[after][0].start_mark.line)
    return total


def _outside(line: str, column: int) -> bool:
    stripped = line.strip()
    return not stripped or (stripped.startswith("#") and len(line) - len(line.lstrip()) <= column)
