"""Decoded views of a text for the scrubber: what a secret looks like under one more layer of
encoding, percent-encoding (a URL, a form body) or JSON string escapes (JSON held in a string), with
a map from each decoded offset back to the text, so a secret found in the view is replaced in the
text itself. (Base64, the third layer, is the scrubber's own: a blob is re-encoded, not mapped.)

Built only where the text holds such an escape, and only up to `VIEW_MAX_CHARS`: a view costs a
pass over the text and a search of it, so ordinary text pays one substring test per layer.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

VIEW_MAX_CHARS = 4 << 20  # as a base64 blob's bound: a text past it is viewed up to there

_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")
_PERCENT_TOKEN = re.compile(r"%[0-9A-Fa-f]{2}|\+")
# In a text, JSON escapes that can hide a key's characters: `\uXXXX` and `\/`. (`\n` and `\"` cannot
# sit inside a key; a PEM body's escaped newlines its own pattern takes.)
_JSON_HINT = re.compile(r"\\u[0-9A-Fa-f]{4}|\\/")
_JSON_TOKEN = re.compile(r'\\(?:u[0-9A-Fa-f]{4}|["\\/bfnrt])')
_JSON_CHARS = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
# In a serialized JSON line, where each of those backslashes is escaped once more.
_LINE_JSON_HINT = re.compile(r"\\\\u[0-9A-Fa-f]{4}|\\\\/")


@dataclass(frozen=True)
class View:
    """A text decoded one layer: `text`, and where each escape was (decoded offset, offset in the
    original, length in the original); every escape decodes to one character."""

    layer: str
    text: str
    _at: list[int]
    _origin: list[int]
    _length: list[int]

    def original(self, offset: int) -> int:
        """The offset in the original text of the decoded `offset` (a start or an end)."""
        index = bisect.bisect_right(self._at, offset) - 1
        if index < 0:
            return offset
        if offset == self._at[index]:
            return self._origin[index]
        return self._origin[index] + self._length[index] + (offset - self._at[index] - 1)


def views(text: str) -> Iterator[View]:
    """The decoded views `text` has: percent-decoded (`%XX` a character of its byte, `+` a space)
    when it holds a `%XX` or `bearer+`, JSON-unescaped when it holds `\\uXXXX` or `\\/`."""
    head = text[:VIEW_MAX_CHARS]
    if ("%" in head and _PERCENT.search(head)) or ("+" in head and "bearer+" in head.lower()):
        yield _decoded("percent-encoded", head, _PERCENT_TOKEN, _percent_char)
    if "\\" in head and _JSON_HINT.search(head):
        yield _decoded("JSON-escaped", head, _JSON_TOKEN, _json_char)


def line_may_hide(line: str) -> bool:
    """Whether a serialized JSON line holds an escape a view would decode (so `might_hold` cannot
    answer from the line alone). Substring tests first: this runs on every line a writer writes."""
    if "%" in line and _PERCENT.search(line):
        return True
    if "\\\\" in line and _LINE_JSON_HINT.search(line):
        return True
    return "+" in line and "bearer+" in line.lower()


def _percent_char(token: str) -> str:
    return " " if token == "+" else chr(int(token[1:], 16))  # a byte: as the "bytes" view reads it


def _json_char(token: str) -> str:
    return chr(int(token[2:], 16)) if token[1] == "u" else _JSON_CHARS[token[1]]


def _decoded(layer: str, text: str, token: re.Pattern[str], decode: Callable[[str], str]) -> View:
    parts: list[str] = []
    at: list[int] = []
    origin: list[int] = []
    length: list[int] = []
    previous = 0
    decoded = 0
    for match in token.finditer(text):
        start, end = match.span()
        parts.append(text[previous:start])
        decoded += start - previous
        at.append(decoded)
        origin.append(start)
        length.append(end - start)
        parts.append(decode(match.group()))
        decoded += 1
        previous = end
    parts.append(text[previous:])
    return View(layer, "".join(parts), at, origin, length)
