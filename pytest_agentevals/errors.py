"""The exception hierarchy. Every message says what went wrong, where, and how to fix it."""

from __future__ import annotations

import sys
from pathlib import Path

# Every class below is public: this module is the errors' tier-2 home (docs/api.md), so one import
# line reaches any of them. `loud` is the transports' helper, not API. A layer's own warnings
# (`ReplayDivergenceWarning`, `ContractDriftWarning`...) live in that layer's `__all__`.
__all__ = [
    "AgentEvalsDeprecationWarning",
    "AgentEvalsError",
    "AmbiguousRun",
    "CassetteError",
    "CheckpointError",
    "ConfigError",
    "ContractDrift",
    "GoldenError",
    "GuardError",
    "HistoryError",
    "LedgerError",
    "LinkRefused",
    "MarathonError",
    "MessageFormatError",
    "NewerTraceVersion",
    "RecordingError",
    "ReplayDivergence",
    "ReplayError",
    "ReportError",
    "RunStopped",
    "SimError",
    "StaleCassette",
    "StaleGolden",
    "TraceError",
    "TraceFormatError",
    "TriageError",
    "UnrecordedRequest",
]


class AgentEvalsError(Exception):
    """Base of every error this project raises on purpose."""


class AgentEvalsDeprecationWarning(DeprecationWarning):
    """A spelling that works in this release and not in the next; the message names the new one."""


class ConfigError(AgentEvalsError):
    """A bad option, marker argument or `[tool.agentevals]` key.

    The pytest plugin turns it into `pytest.UsageError`; the command line prints it and exits 2.
    """

    def __init__(self, key: str, problem: str, fix: str = "") -> None:
        self.key = key
        self.problem = problem
        self.fix = fix
        message = f"{key}: {problem}"
        if fix:
            message += f" ({fix})"
        super().__init__(message)


class TraceError(AgentEvalsError):
    """A trace file that cannot be used."""


class MessageFormatError(TraceError, ValueError):
    """A chat message with no form in the other shape (OpenAI <-> Anthropic, `trace/openai_chat.py`):
    the text names the message and what to do."""


class TraceFormatError(TraceError):
    """A trace line that is not what the trace format says.

    Carries the file, the 1-based line number and what was expected, so a person can open the file
    at that line.
    """

    def __init__(self, path: str | Path, line: int, problem: str) -> None:
        self.path = str(path)
        self.line = line
        self.problem = problem
        super().__init__(
            f"{self.path}:{line}: {problem} (see docs/trace-format.md; a trace is JSON Lines, "
            f"one event per line, starting with a run_start event)"
        )


class NewerTraceVersion(TraceFormatError):
    """A trace written by a newer pytest-agentevals, in a format version this one does not know."""


class RecordingError(AgentEvalsError):
    """Recording could not start or go on (nested recorders, an unwritable trace directory...)."""


class AmbiguousRun(RecordingError):
    """An event (a model call, a tool call, a harness event) came from a context that belongs to no
    run while several runs are open side by side: it is refused, not filed under a guess. The
    message names the runs and how to join one (docs/service.md)."""


class SimError(AgentEvalsError):
    """The simulated model server was misused (an exhausted script, a bad reply)."""


class HistoryError(AgentEvalsError):
    """The test-outcome history cannot be read or written, or a JUnit file cannot be ingested.

    The message names the file and says how to fix it; nothing already stored is deleted.
    """


class LinkRefused(AgentEvalsError):
    """A file or folder the project writes or boots from is a symbolic link.

    A link committed to a repository could redirect a write (or a boot) outside the tree, so a link
    is never followed; the message names the link and says to replace it with the real file.
    """

    def __init__(self, link: str | Path, target: str) -> None:
        self.link = Path(link)
        super().__init__(
            f"{link}: is a symbolic link (to {target}); pytest-agentevals never writes or boots "
            "through a link, as a committed link could redirect it outside the tree; replace the "
            "link with the real file or folder, or delete it"
        )


class GoldenError(AgentEvalsError):
    """A goldens file, step case or key that cannot be used.

    `where` names the file, the line, the case and the key (`goldens/x.yaml:14::step-3 expect.args`).
    """

    def __init__(self, where: str, problem: str, fix: str = "") -> None:
        self.where = where
        self.problem = problem
        self.fix = fix
        if fix and "\n" in problem:
            problem += f"\n  fix: {fix}"
        elif fix:
            problem += f" ({fix})"
        super().__init__(f"{where}: {problem}")


class StaleGolden(GoldenError):
    """A step case whose model request changed since its decision was recorded, with recording off."""


class ReplayError(AgentEvalsError):
    """The replay layer's errors: a cassette that cannot be replayed, a request it does not hold, a
    divergence from it."""


class CassetteError(ReplayError):
    """A cassette that cannot be replayed: missing, corrupt, truncated or stale. Names the file."""

    def __init__(self, path: str | Path, line: int, problem: str, fix: str) -> None:
        self.path = str(path)
        self.line = line
        self.problem = problem
        self.fix = fix
        where = f"{self.path}:{line}" if line else self.path
        super().__init__(f"{where}: {problem} ({fix})")


class UnrecordedRequest(ReplayError):
    """A replay met a request (or a connection) the recording does not hold; nothing went live."""


class ReplayDivergence(ReplayError):
    """A replayed run asked for something other than what was recorded: names the call and the diff."""


class StaleCassette(CassetteError):
    """A cassette recorded against another environment (tool schemas, prompt, model, packages): the
    message lists what differs and how to re-record."""

    def __init__(self, message: str, *, path: str | Path = "", fix: str = "") -> None:
        AgentEvalsError.__init__(self, message)  # the whole message: a list of differences, then the fix
        self.path, self.line, self.problem, self.fix = str(path), 0, message, fix


class RunStopped(AgentEvalsError):
    """A guard stopped the run before a model request left the machine.

    `status` is the run's end status (`budget_exhausted`, `stalled`, `loop`), `guard` the guard's name,
    `reason` what it saw. The trace holds a `guard` event saying the same, and its `run_end` the status.
    Every later model request of the run is refused with the same error.
    """

    # Raised in a client's transport (the in-process recorder), it is the client's to report: litellm
    # makes its error of the exception's `status_code`, and a 403 (`PermissionDeniedError`) is one
    # that neither litellm's callers nor mini-swe-agent retry (the endpoint answers a stop the same).
    status_code = 403

    def __init__(self, status: str, guard: str, reason: str, fix: str = "") -> None:
        self.status = status
        self.guard = guard
        self.reason = reason
        self.fix = fix
        message = f"the {guard} guard stopped the run as {status}: {reason}"
        super().__init__(message + (f" ({fix})" if fix else ""))


class GuardError(AgentEvalsError):
    """A guard itself failed (a bug in a watchdog hook, say): the run ends as `error`, with the
    guard's traceback in the trace's `run_end.error`."""


class LedgerError(AgentEvalsError):
    """The daily cost ledger cannot be used: corrupt, locked too long, or unwritable. Names the file;
    spending is never silently reset to zero."""


class ReportError(AgentEvalsError):
    """A run report that cannot be written: no trace to build it from, or an output that would hold a
    secret (the report names the place and is not written)."""


class MarathonError(AgentEvalsError):
    """A marathon's results cannot be used: a malformed results file (named with its line), two
    results of one seed and commit that disagree, a comparison with nothing to pair."""


class CheckpointError(AgentEvalsError):
    """A checkpoint fixture (or a trace's checkpoint) that cannot be booted: missing, damaged, tampered
    with, hostile, or written by a newer version. Names the fixture, the file and the fix; nothing is
    left half restored."""

    def __init__(self, where: str | Path, problem: str, fix: str = "") -> None:
        self.where = str(where)
        self.problem = problem
        self.fix = fix
        super().__init__(f"{self.where}: {problem}" + (f" ({fix})" if fix else ""))


class ContractDrift(CheckpointError):
    """The environment contradicts a checkpoint's contract: the drift table, and how to fix it."""

    def __init__(self, where: str | Path, table: str, fix: str) -> None:
        self.where = str(where)
        self.problem = "the environment drifted from the checkpoint's contract"
        self.fix = fix
        self.table = table
        AgentEvalsError.__init__(self, f"{self.where}: {self.problem}:\n{table}\n{fix}")


class TriageError(AgentEvalsError):
    """A triage that cannot run: no failing or no passing run to compare, a step the trace does not
    hold, an agent that does not make the recorded decision again, a fork that cannot replay up to its
    step. Names the trace and the step."""


# -- errors raised inside the SDK's transport ----------------------------------------------------------
# vcrpy's transport stubs ask our cassettes first, so a replay (an unrecorded request) or a guard (a
# spent budget) can refuse a request by raising from there, before anything is sent. The anthropic
# SDK wraps any transport exception that is not its own in `APIConnectionError` and retries it;
# `loud()` gives our error the SDK's base class as a mixin (only when the SDK is already imported), so
# it is neither retried nor wrapped.

_loud_classes: dict[tuple[type, type], type] = {}


def loud(error: AgentEvalsError) -> AgentEvalsError:
    """`error`, as an instance of a subclass that the anthropic SDK re-raises without retrying.

    The copy is still an instance of the original class (`except ReplayDivergence` catches it) and
    reads the same; it is only made when `anthropic` is imported already.
    """
    sdk = sys.modules.get("anthropic")
    base = getattr(sdk, "AnthropicError", None)
    if not isinstance(base, type) or isinstance(error, base):
        return error
    cls = type(error)
    loud_cls = _loud_classes.get((cls, base))
    if loud_cls is None:
        loud_cls = type(
            cls.__name__, (cls, base), {"__module__": cls.__module__, "__qualname__": cls.__qualname__}
        )
        _loud_classes[(cls, base)] = loud_cls
    copy: AgentEvalsError = Exception.__new__(loud_cls)
    copy.args = error.args
    copy.__dict__.update(error.__dict__)
    copy.__dict__["original"] = error
    return copy
