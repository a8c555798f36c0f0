"""A check of the agent's work, run as a command after the agent, whose result is the run's
`verification` event: `agentevals record --verify CMD`, `Recorder.verify(CMD)` (the
`agentevals_recorder` fixture, a run hook) and a marathon's `verify=` keyword.

An agent's exit code says only that it stopped (mini-swe-agent exits 0 when it gives up); the check
says whether the work holds, so a run that ended `ok` is a verified pass or a false claim on
evidence. The command runs without a shell, in the agent's workspace, its input closed; it passes
when it exits 0. The tail of what it printed is kept in the event (scrubbed as every event is).
"""

from __future__ import annotations

import shlex
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import AgentEvalsError, ConfigError

OUTPUT_KEPT = 4000  # characters of the check's output kept in the event: the end, where pytest sums up
DEFAULT_TIMEOUT_S = 600.0
_GIVE = "give the check as a command line, e.g. 'python -m pytest -q'"


@dataclass(frozen=True)
class Check:
    """A check's result: the command, whether it passed, its exit code (None when it timed out), the
    tail of its output and how long it took."""

    command: tuple[str, ...]
    passed: bool
    exit_code: int | None
    output: str
    seconds: float

    @property
    def name(self) -> str:
        return "verify: " + shlex.join(self.command)

    def event(self) -> dict[str, Any]:
        """The verification event's fields."""
        return {
            "name": self.name,
            "passed": self.passed,
            "command": list(self.command),
            "exit_code": self.exit_code,
            "output": self.output,
            "seconds": round(self.seconds, 3),
        }

    def text(self) -> str:
        """One line for a person: what was checked and how it came out."""
        if self.passed:
            how = "passed"
        else:
            how = "timed out" if self.exit_code is None else f"failed (exit code {self.exit_code})"
        return f"{shlex.join(self.command)}: {how}"


def check_command(where: str, raw: Any) -> tuple[str, ...]:
    """A check command as given: a string (split as a shell splits words; no shell runs it, so write
    `sh -c '...'` for a pipeline) or a list of words. ConfigError naming `where` otherwise."""
    if isinstance(raw, str):
        try:
            words = shlex.split(raw)
        except ValueError as exc:
            raise ConfigError(where, f"cannot be split into words ({exc})", "check its quotes") from None
    elif isinstance(raw, list | tuple) and all(isinstance(word, str) for word in raw):
        words = list(raw)
    else:
        raise ConfigError(
            where, f"is {raw!r}", "give the check as a command line, e.g. 'python -m pytest -q'"
        )
    if not words or not words[0]:
        raise ConfigError(where, "is empty", "give the check as a command line, e.g. 'python -m pytest -q'")
    return tuple(words)


def run_check(
    command: Sequence[str], cwd: str | Path | None = None, timeout: float = DEFAULT_TIMEOUT_S
) -> Check:
    """Run the check `command` in `cwd` (default: the current folder) and return how it came out. A
    command that cannot be started is our error, naming it; one that runs past `timeout` fails."""
    argv = tuple(command)
    started = time.perf_counter()
    try:
        done = subprocess.run(
            list(argv),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        output = _tail(exc.output) + f"\n[agentevals: the check ran past {timeout:g} s and was stopped]"
        return Check(argv, False, None, output, time.perf_counter() - started)
    except OSError as exc:
        raise AgentEvalsError(
            f"cannot run the check {shlex.join(argv)}: {exc.strerror or exc} (give a command that exists "
            "in the agent's workspace, e.g. --verify 'python -m pytest -q')"
        ) from None
    return Check(
        argv, done.returncode == 0, done.returncode, _tail(done.stdout), time.perf_counter() - started
    )


def _tail(output: bytes | str | None) -> str:
    if output is None:
        return ""
    text = output.decode("utf-8", "replace") if isinstance(output, bytes) else output
    return text[-OUTPUT_KEPT:]
