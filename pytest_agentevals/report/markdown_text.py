"""Text from a trace made safe for a GitHub Markdown table cell: GitHub renders HTML in Markdown,
so `<`, `>` and `&` become entities, and the characters that would end a cell, a line or open code
or a link are escaped."""

from __future__ import annotations

import html

_MARKDOWN = str.maketrans({"|": "\\|", "`": "\\`", "*": "\\*", "_": "\\_", "[": "\\[", "]": "\\]"})


def cell(text: object, limit: int = 120) -> str:
    value = " ".join(str(text).split())  # newlines and tabs would end the row
    if len(value) > limit:
        value = value[: limit - 1] + "…"
    return html.escape(value, quote=False).translate(_MARKDOWN)
