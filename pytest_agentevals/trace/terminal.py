"""Untrusted text made safe for a terminal: every text renderer passes what it prints through `safe`.

A fixture name, a test id, a contract value or a message quoting a file comes from a pull request.
Printed raw, its control characters drive the terminal: `ESC [2J` clears the screen, `\\r` and
`ESC [1A` erase the FAILED line above, OSC 8 forges a link, and the bidirectional overrides show text
in another order than it runs. Each such character is shown escaped instead (`\\x1b`, `\\u202e`); a
newline and a tab, which every renderer writes itself, are kept.
"""

from __future__ import annotations

import re

# C0 controls but tab and newline, DEL, C1 controls (8-bit CSI and OSC among them), and the Unicode
# bidirectional controls and line and paragraph separators.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def safe(text: str) -> str:
    """`text` with every control character but newline and tab shown as an escape."""
    return _UNSAFE.sub(_escaped, text)


def safe_line(text: str) -> str:
    """`text` as one line: newlines and tabs escaped too (a name or an id that must not forge a
    line of its own)."""
    return safe(text).replace("\n", "\\n").replace("\t", "\\t")
