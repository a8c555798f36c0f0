"""One bounded loader per format, used by every reader of a file a pull request can bring: JSON here,
YAML in `yaml_loader.py` (apart, so a session that reads no YAML never imports the YAML parser).

Traces, cassettes, goldens, quarantine files, checkpoint fixtures and results files are untrusted
data. A loader here never builds what it has not bounded first, and reports any problem through
the caller's `fail(line, problem)`, so each reader raises its own error class naming its file.
An error quotes at most `EXCERPT` characters of the input, never a repr of what was loaded.

- JSON: nesting at most `MAX_DEPTH` levels; integers within Python's digit limit (4300 by
  default), reported as ours with the line.
- YAML: plain data (no anchor, alias or tag) built from the parser's events; anything else
  composed before it is built, and refused when its aliases would expand it past `MAX_EXPANSION`
  times its written nodes (at least `MIN_EXPANDED_NODES`), when an alias contains itself, when it
  nests past `MAX_DEPTH`, or holds a tag other than the safe loader's; every number, date and
  binary is built once on its own first, so a bad one names its line and key.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, Final

Fail = Callable[[int, str], Exception]

MAX_DEPTH: Final = 128
EXCERPT: Final = 60

_DIGITS = re.compile(rb"\d{1000,}")


def excerpt(text: str | bytes, limit: int = EXCERPT) -> str:
    """A short quote of untrusted text for an error message: at most `limit` characters."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    text = text.replace("\n", "\\n")
    return repr(text if len(text) <= limit else text[:limit] + "...")


# -- JSON -------------------------------------------------------------------------------------


def load_json(raw: str | bytes, fail: Fail, line: int = 1) -> Any:
    """A JSON document (or one JSON Lines line, `line` its number), bounded in depth and numbers.

    Raises whatever `fail(line, problem)` returns, never another exception (but UnicodeDecodeError
    passes as `fail` too: the text is not UTF-8).
    """
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        near = exc.doc[exc.pos : exc.pos + 20] if isinstance(exc.doc, str) else ""
        # A document cut short is wrong on its last written line, not on the empty one after its
        # newline (where json places the error): one JSON Lines line is one line.
        end = min(exc.pos, len(exc.doc.rstrip())) if isinstance(exc.doc, str) else exc.pos
        offset = exc.doc.count("\n", 0, end) if isinstance(exc.doc, str) else exc.lineno - 1
        raise fail(line + offset, f"not valid JSON ({exc.msg}, near {excerpt(near)})") from None
    except UnicodeDecodeError:
        raise fail(line, "not UTF-8") from None
    except RecursionError:
        raise fail(line, f"not valid JSON here: nested deeper than {MAX_DEPTH} levels") from None
    except ValueError:
        # The only other ValueError json raises: an integer past Python's digit limit.
        raise fail(_digits_line(raw, line), _BIG_INT) from None
    if _may_nest_deep(raw) and _too_deep(value):
        raise fail(line, f"not valid JSON here: nested deeper than {MAX_DEPTH} levels")
    return value


def _may_nest_deep(raw: str | bytes) -> bool:
    """Whether the text opens enough arrays and objects to nest past MAX_DEPTH: each level opens
    one with a literal bracket, so text with fewer cannot (brackets inside strings only add to the
    count). Counted at C speed: walking every loaded line was about half of reading a trace."""
    if isinstance(raw, str):
        return raw.count("[") + raw.count("{") > MAX_DEPTH
    return raw.count(b"[") + raw.count(b"{") > MAX_DEPTH


_BIG_INT = "not valid JSON here: a number of thousands of digits (no value this project reads is one)"


def _digits_line(raw: str | bytes, line: int) -> int:
    data = raw.encode("utf-8", "replace") if isinstance(raw, str) else raw
    found = _DIGITS.search(data)
    return line if found is None else line + data.count(b"\n", 0, found.start())


def _too_deep(value: Any) -> bool:
    """Whether a loaded value nests past MAX_DEPTH, walked without recursion."""
    if not isinstance(value, (dict, list)):
        return False
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False
