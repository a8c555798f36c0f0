"""Paths a trace names inside a workspace (a checkpoint's snapshot): relative, plain, never leaving it.

A trace is untrusted data (it arrives in pull requests), and a checkpoint's workspace is written back
to disk on restore, so every name is checked where it is read and again where it is written:
`../x`, `/etc/x`, `C:\\x`, a NUL byte, or a link whose target climbs out of the workspace is refused.
These checks read the names alone; whoever writes a workspace back also resolves each path on disk
before writing through it (links written earlier could chain outward).
"""

from __future__ import annotations

import posixpath
from pathlib import PureWindowsPath
from typing import Any


def path_problem(name: Any) -> str | None:
    """What makes `name` unfit as the path of a workspace file, or None when it is fine."""
    if not isinstance(name, str) or not name:
        return "is not a path (a non-empty string)"
    if "\x00" in name:
        return "holds a NUL byte"
    if name.startswith(("/", "\\")) or PureWindowsPath(name).drive:
        return "is absolute: a workspace path is relative to the workspace"
    parts = name.replace("\\", "/").split("/")
    if ".." in parts:
        return "climbs out of the workspace (`..`)"
    if any(part in ("", ".") for part in parts):
        return "is not a plain relative path (empty or `.` parts)"
    return None


def link_problem(name: str, target: Any) -> str | None:
    """What makes a link at `name` pointing to `target` leave the workspace, or None when it stays."""
    if not isinstance(target, str) or not target:
        return "is a link without a target (a non-empty string)"
    if "\x00" in target:
        return "is a link whose target holds a NUL byte"
    if target.startswith(("/", "\\")) or PureWindowsPath(target).drive:
        return f"is a link to {target!r}, outside the workspace (an absolute target)"
    folder = posixpath.dirname(name)
    resolved = posixpath.normpath(posixpath.join(folder, target.replace("\\", "/")))
    if resolved == ".." or resolved.startswith("../"):
        return f"is a link to {target!r}, outside the workspace"
    return None
