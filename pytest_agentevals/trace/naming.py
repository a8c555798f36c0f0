"""File names this project writes: readable, unique where they must be, safe on every file system.

One rule for what a name may hold (`safe_name`), used for per-test traces here and for cassettes in
`replay/names.py`. A name never holds a secret: a parametrized test id can hold a value, and a
file name is shown in CI logs, JUnit XML and committed cassette folders like a file's content.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from pathlib import Path

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")

# The user property a test that recorded a trace carries (name, path): it travels with the test's
# reports from an xdist worker to the controller, and into JUnit XML, so the session's report (and
# anyone reading the XML) finds the runs the tests recorded.
TRACE_PROPERTY = "agentevals_trace"

# What every trace file's name ends with: the recorder's, a run store's, a cassette's.
TRACE_SUFFIX = ".trace.jsonl"


def safe_name(text: str, fallback: str = "test") -> str:
    """`text`, its secrets redacted, with every run of characters other than letters, digits,
    `_ . -` turned into `-`."""
    from .scrub import Scrubber  # its patterns compile when a name is first made

    return _UNSAFE.sub("-", Scrubber().scrub_text(text)).strip("-") or fallback


def trace_path_for(nodeid: str, directory: Path) -> Path:
    """`tests/test_x.py::test_y[a/b]` -> `DIR/tests-test_x.py--test_y-a-b-1a2b3c4d.trace.jsonl`.

    The short hash keeps two node ids that clean up to the same text apart (`[a/b]` and `[a-b]`,
    or two that differ only in a secret), so parallel workers never share a file.
    """
    readable = safe_name(nodeid.replace("::", "--"))[:120]
    digest = hashlib.sha1(nodeid.encode("utf-8")).hexdigest()[:8]
    return directory / f"{readable}-{digest}.trace.jsonl"


def trace_files(paths: Iterable[str | Path]) -> list[Path]:
    """The traces named: files as given, folders searched for `*.trace.jsonl` (links not followed),
    in natural order, each once."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found.extend(
                sorted(
                    (p for p in path.rglob(f"*{TRACE_SUFFIX}") if p.is_file() and not p.is_symlink()),
                    key=natural_key,
                )
            )
        else:
            found.append(path)
    return list(dict.fromkeys(found))


def natural_key(path: Path) -> tuple[tuple[int, int | str], ...]:
    """Sorts seed-2 before seed-10: the numbers in a path compared as numbers."""
    return tuple(
        (0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", str(path)) if part
    )
