"""A snapshot of a workspace directory for a checkpoint: every file's hash, and small files' content,
so a resume can restore the workspace and a contract can tell when it changed."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path
from typing import Any

MAX_FILE_BYTES = 256 * 1024
MAX_TOTAL_BYTES = 16 * 1024 * 1024
_SKIPPED_DIRS = frozenset({".git", "__pycache__", ".venv", "node_modules", ".agentevals"})


def snapshot(root: str | Path) -> dict[str, Any]:
    root = Path(root)
    files: dict[str, dict[str, Any]] = {}
    budget = MAX_TOTAL_BYTES
    for path in sorted(root.rglob("*")):
        if not path.is_file() or any(part in _SKIPPED_DIRS for part in path.relative_to(root).parts):
            continue
        data = path.read_bytes()
        entry: dict[str, Any] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
        if len(data) <= MAX_FILE_BYTES and len(data) <= budget:
            budget -= len(data)
            try:
                entry["text"] = data.decode("utf-8")
            except UnicodeDecodeError:
                entry["base64"] = base64.b64encode(data).decode("ascii")
        files[path.relative_to(root).as_posix()] = entry
    return {"root": str(root), "files": files}
