"""Running a command (any language) as a subprocess pointed at a model endpoint: what `agentevals
record -- COMMAND` and `agentevals replay TRACE -- COMMAND` run inside their recording or replay."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence

from ..errors import AgentEvalsError
from .server import ModelEndpoint


def run_command(argv: Sequence[str], *, upstream: str | None = None) -> int:
    """Run `argv` with `ANTHROPIC_BASE_URL` pointing at a fresh endpoint (for it and its children)
    that answers for the run active in this process; its exit code (128 + N when killed by signal N,
    as a shell says)."""
    with ModelEndpoint(upstream=upstream) as endpoint:
        try:
            completed = subprocess.run(list(argv), env=endpoint.env, check=False)
        except OSError as exc:
            raise AgentEvalsError(f"cannot run {argv[0]}: {exc.strerror or exc}") from None
    code = completed.returncode
    return 128 - code if code < 0 else code
