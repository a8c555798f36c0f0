"""Several pytest sessions, one after another, in one fresh process: a process per session spent
most of its seconds importing the same pytest, plugins, SDK and conftests again. Each session has a
config of its own (`pytest.main`), its own output (both streams, at the descriptor level, as a
process of its own gave them) and, when asked, its own import path and freshly imported modules."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

_RUN = """
import json, os, sys
import pytest

said = []
for job in json.loads(sys.argv[1]):
    fresh = tuple(job["fresh"])
    for name in [n for n in sys.modules if n.split(".")[0] in fresh]:
        del sys.modules[name]
    if job["path"] is not None:
        sys.path.insert(0, job["path"])
    sys.stdout.flush(), sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    log = os.open(job["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(log, 1), os.dup2(log, 2), os.close(log)
    try:
        code = pytest.main(job["args"])
    except SystemExit as exc:
        code = exc.code
    finally:
        sys.stdout.flush(), sys.stderr.flush()
        os.dup2(saved[0], 1), os.dup2(saved[1], 2)
        os.close(saved[0]), os.close(saved[1])
    if job["path"] is not None:
        sys.path.remove(job["path"])
    said.append(int(code))
print(json.dumps(said))
"""


@dataclass(frozen=True)
class Session:
    args: list[str]
    log: str  # where its output goes
    path: str | None = None  # put first on sys.path for this session only
    fresh: tuple[str, ...] = field(default=())  # top-level modules imported afresh for it


def run_sessions(sessions: Sequence[Session], cwd: Path, timeout: float = 300) -> list[tuple[int, str]]:
    """Each session's exit code and output, in order."""
    done = subprocess.run(
        [sys.executable, "-c", _RUN, json.dumps([asdict(session) for session in sessions])],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    codes = json.loads(done.stdout.splitlines()[-1])
    return [
        (code, Path(session.log).read_text(errors="replace"))
        for code, session in zip(codes, sessions, strict=True)
    ]
