"""Running a command (any language) as a subprocess pointed at a model endpoint: what `agentevals
record -- COMMAND` and `agentevals replay TRACE -- COMMAND` run inside their recording or replay; and
the environment of an in-process program pointed at one, for the children it starts."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path

from ..errors import AgentEvalsError
from .server import ModelEndpoint


def run_command(
    argv: Sequence[str],
    *,
    upstream: str | None = None,
    checkpoint_every: int | None = None,
    cwd: Path | None = None,
) -> int:
    """Run `argv` in `cwd` (default: the current folder) with `ANTHROPIC_BASE_URL` pointing at a fresh
    endpoint (for it and its children) that answers for the run active in this process; its exit code
    (128 + N when killed by signal N, as a shell says). With `checkpoint_every`, a recording gets a
    checkpoint of the conversation and of the command's working folder at every that many model
    requests."""
    folder = None if checkpoint_every is None else (cwd or Path.cwd())
    with ModelEndpoint(
        upstream=upstream, checkpoints=folder, checkpoint_every=checkpoint_every or 1
    ) as endpoint:
        try:
            completed = subprocess.run(list(argv), cwd=cwd, env=endpoint.env, check=False)
        except OSError as exc:
            raise AgentEvalsError(f"cannot run {argv[0]}: {exc.strerror or exc}") from None
    code = completed.returncode
    return 128 - code if code < 0 else code


@contextlib.contextmanager
def children_pointed(*, upstream: str | None = None) -> Iterator[ModelEndpoint]:
    """A fresh endpoint, with this process's environment pointed at it while the block runs: what
    `agentevals record agent.py` runs a Python program in, so the subprocesses it starts (a harness
    spawning `claude`, the Claude Agent SDK) are recorded and guarded too. An in-process client made
    in the block reaches the endpoint as well, which records it once (the in-process recording leaves
    requests to it alone). The environment is put back as it was afterwards."""
    with ModelEndpoint(upstream=upstream) as endpoint:
        changed = {name: value for name, value in endpoint.env.items() if os.environ.get(name) != value}
        saved = {name: os.environ.get(name) for name in changed}
        os.environ.update(changed)
        try:
            yield endpoint
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
