"""Untrusted text with control characters, and what must never reach a terminal raw (issue 17)."""

from __future__ import annotations

# Clear the screen, move up and erase the line, then a forged OSC 8 link, and a bidi override.
HOSTILE = "\x1b[2J\x1b[1A\x1b[2K\r\x1b]8;;https://evil.example\x07click\x1b]8;;\x07\u202e\x9b31m"


def unsafe(text: str) -> list[str]:
    """The characters of `text` a terminal would obey: C0 (but newline and tab), DEL, C1, bidi."""
    return [c for c in text if (ord(c) < 32 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F or c == "\u202e"]
