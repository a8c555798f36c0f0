"""Reading another tool's file, bounded: a session file, a span dump or a trajectory is untrusted (it
may come from production, from a pull request, from anyone). Nothing in it runs; the file's size,
each line's size, each value's nesting and the number of entries are capped before anything is
built, and every problem names the file and the line.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

from ..errors import AgentEvalsError
from ..trace.loaders import load_json

MAX_BYTES: Final = 512 << 20  # a file larger than any session or span dump this reads
MAX_LINE: Final = 32 << 20  # one JSON Lines entry (a tool result may be a large file's text)
MAX_ENTRIES: Final = 1_000_000  # lines, spans or steps in one file


class SourceFormatError(AgentEvalsError):
    """A file to import that is not what its format says: names the file, the line and the fix."""

    def __init__(self, path: str | Path, line: int, problem: str, fix: str = "") -> None:
        self.path = str(path)
        self.line = line
        self.problem = problem
        where = f"{self.path}:{line}" if line else self.path
        super().__init__(f"{where}: {problem}" + (f" ({fix})" if fix else ""))


def _open(path: Path) -> Any:
    if path.is_symlink():
        # A link in a pull request can name any file of the machine: read the file itself, named.
        raise SourceFormatError(path, 0, "is a symbolic link; refused to follow it", "name the file itself")
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        raise SourceFormatError(path, 0, "no such file") from None
    except IsADirectoryError:
        raise SourceFormatError(path, 0, "is a directory", "name one file") from None
    except OSError as exc:
        raise SourceFormatError(path, 0, f"cannot be opened: {exc.strerror}") from None
    size = handle.seek(0, 2)
    handle.seek(0)
    if size > MAX_BYTES:
        handle.close()
        raise SourceFormatError(
            path,
            0,
            f"is {size:,} bytes, over the {MAX_BYTES:,} an import reads",
            "split it, or import a part",
        )
    return handle


def json_lines(path: Path, what: str) -> Iterator[tuple[int, Any]]:
    """(line number, value) for each non-blank line of a JSON Lines file, bounded. A torn last line
    (a file still being written) is skipped; anything else malformed raises naming the line."""
    with _open(path) as handle:
        pending: tuple[int, bytes] | None = None
        count = 0
        for number, raw in enumerate(handle, start=1):
            if len(raw) > MAX_LINE:
                raise SourceFormatError(path, number, f"the line is over {MAX_LINE:,} bytes")
            if pending is not None:
                yield pending[0], _load(path, pending[1], pending[0], what)
            if not raw.strip():
                pending = None
                continue
            count += 1
            if count > MAX_ENTRIES:
                raise SourceFormatError(path, number, f"more than {MAX_ENTRIES:,} entries")
            pending = (number, raw)
        if pending is not None:
            number, raw = pending
            if raw.endswith(b"\n"):
                yield number, _load(path, raw, number, what)
            else:
                try:
                    value = _load(path, raw, number, what)
                except SourceFormatError:
                    return  # cut off mid-write: what came before is whole
                yield number, value


def json_document(path: Path, what: str) -> Any:
    """One JSON document, bounded (its size and nesting)."""
    with _open(path) as handle:
        raw = handle.read()
    return _load(path, raw, 1, what)


def _load(path: Path, raw: bytes, line: int, what: str) -> Any:
    def fail(at: int, problem: str) -> SourceFormatError:
        return SourceFormatError(path, at, problem, f"give {what}")

    try:
        return load_json(raw.decode("utf-8"), fail, line)
    except UnicodeDecodeError:
        raise SourceFormatError(path, line, "not UTF-8", f"give {what}") from None


def count(path: Path, line: int, number: int, what: str) -> None:
    """Refuse a file past MAX_ENTRIES of `what` (spans, steps...), at the line where it goes past."""
    if number > MAX_ENTRIES:
        raise SourceFormatError(path, line, f"more than {MAX_ENTRIES:,} {what}")
