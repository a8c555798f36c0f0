"""The recorder: one run's model calls, tool calls and harness events, in order, into one trace."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from .. import contract
from ..errors import AgentEvalsError, RecordingError, RunStopped
from ..guards.prices import PriceTable
from ..guards.protocol import Guard
from ..guards.runner import OBSERVED, GuardRunner
from ..lifecycle import RunSpec
from ..trace.events import NO_MODEL_CALLS, NO_MODEL_CALLS_REASON, RUN_STATUSES, TRACE_VERSION, Event
from ..trace.writer import TraceWriter
from ..workspace import Snapshotter
from . import active, exchange
from .bodies import BodyDecoder
from .patching import patched
from .providers.anthropic import is_messages_call

if TYPE_CHECKING:  # the check's module loads with the first check
    from .verify import Check

EXCHANGE_WAIT_S = 30.0  # how long a stopping run waits for its endpoint exchanges to be written


class _RecordingCassette:
    """vcrpy's view of the recorder: never plays, appends every real exchange as a model_call."""

    write_protected = False

    def __init__(self, recorder: Recorder) -> None:
        self._recorder = recorder

    def can_play_response_for(self, request: Any) -> bool:
        # vcrpy asks this first, before the real request goes out: the guards decide here, and the
        # latency clock starts after them. A request to this process's own model endpoint is guarded
        # and recorded there (an in-process client of `agentevals record agent.py` reaches it too).
        if active.through_endpoint(str(getattr(request, "uri", ""))):
            request._agentevals_endpoint = True
            return False
        if self._recorder.guards:
            self._recorder.guarding.before_call(request)
        request._agentevals_started = time.perf_counter()
        return False

    def play_response(self, request: Any) -> Any:  # pragma: no cover - never asked, we never play
        raise RecordingError("the recording cassette has nothing to play")

    def filter_request(self, request: Any) -> Any:
        return request

    def append(self, request: Any, response: dict[str, Any]) -> None:
        if getattr(request, "_agentevals_endpoint", False):
            return
        started = getattr(request, "_agentevals_started", time.perf_counter())
        self._recorder.record_http(request, response, time.perf_counter() - started)


class Recorder:
    """Records a run into a trace file. Use as a context manager, or `start()` and `stop()`; or, as
    every layer's run does, through the one lifecycle (`lifecycle.py`): `Recorder.for_spec(spec)`,
    `start()`, `run_agent()`, `finish(error)`, `close(failed)` — what the `agentevals_recorder` fixture
    does around its test.

    `task` is the run's initial task (what a replay needs to start the agent again); `contract`
    adds what the harness declares about its environment (fixture hashes, prompt versions...).
    `guards` see every model request before it leaves and may stop the run (docs/guards.md).
    `resumed_from` says where a resumed run starts: the checkpoint fixture (its name and SHA-256) or
    trace it was booted from (`run_start.resumed_from`). With `require_model_call` (what `agentevals
    record` and the marathon's seeds use), a run that would end `ok` but recorded no model call ends
    `no_model_calls`, with a `reason`: it checked nothing. `watch_workspace=False` has checkpoints'
    workspace snapshots stat every file instead of asking inotify what changed (for a workspace that
    another machine writes to over a network file system: docs/trace-format.md). `session` is the
    service's session id (`run_start.session`; what `RunStore.run` passes).
    """

    def __init__(
        self,
        path: str | Path,
        *,
        agent: str = "agent",
        seed: int | None = None,
        task: Any = None,
        run_id: str | None = None,
        contract: Mapping[str, Any] | None = None,
        packages: tuple[str, ...] = ("anthropic",),
        prices: Mapping[str, Mapping[str, float]] | None = None,
        secrets: tuple[str, ...] = (),
        http: bool = True,
        guards: Sequence[Guard] = (),
        resumed_from: Mapping[str, Any] | None = None,
        require_model_call: bool = False,
        watch_workspace: bool = True,
        session: str | None = None,
    ) -> None:
        self.path = Path(path)
        self.session = session
        self.spec = RunSpec(
            name=str(self.path),
            agent=agent,
            task=task,
            seed=seed,
            trace=self.path,
            guards=tuple(guards),
            contract=dict(contract or {}),
        )
        self.require_model_call = require_model_call
        self.resumed_from = dict(resumed_from) if resumed_from is not None else None
        self.agent = agent
        self.seed = seed
        self.task = task
        self.run_id = run_id or uuid.uuid4().hex
        self._contract = contract or {}
        self._packages = packages
        self._prices = PriceTable(prices)
        self._secrets = secrets
        self._http = http
        self._lock = threading.RLock()
        self._in_flight = 0  # exchanges of the model endpoint answered but maybe not yet recorded
        self._drained = threading.Condition(self._lock)
        self._writer: TraceWriter | None = None
        self._patches: contextlib.ExitStack | None = None
        self._frame: active.Frame | None = None
        self._started = 0.0
        self._seq = 0
        self.steps = 0
        self.status: str | None = None
        self.totals: dict[str, Any] = {}
        self._observed: dict[str, Any] | None = None
        self.snapshots = Snapshotter(watch=watch_workspace)
        self._bodies = BodyDecoder()
        self.guarding = GuardRunner(guards, self, self._bodies.decode, is_messages_call)
        self._last_checkpoint: int | None = None

    layer = "record"  # what `AgentRun.layer` says when this run's `run_agent()` asks the hook

    @classmethod
    def for_spec(cls, spec: RunSpec, **run: Any) -> Recorder:
        """The recorder of a run: `spec.trace`, its agent, task, seed, contract and guards (made fresh
        for this run from its budget), and its settings' contract packages and price table; `run`
        holds what else is this recording's own (`resumed_from`, `require_model_call`, `secrets`...)."""
        if spec.trace is None:
            raise RecordingError(f"{spec.name}: a recording needs a trace path (RunSpec.trace)")
        if spec.settings is not None:
            run.setdefault("packages", spec.settings.contract_packages)
            run.setdefault("prices", spec.settings.prices)
        recorder = cls(
            spec.trace,
            agent=spec.agent,
            seed=spec.seed,
            task=spec.task,
            contract=spec.contract,
            guards=spec.make_guards(),
            **run,
        )
        recorder.spec = spec
        return recorder

    # -- life cycle ------------------------------------------------------------------------------

    def start(self) -> Recorder:
        if self._writer is not None:
            raise RecordingError(f"the recorder for {self.path} is already started")
        try:
            self._writer = TraceWriter(self.path, secrets=self._secrets)
        except OSError as exc:
            raise RecordingError(
                f"cannot write the trace {self.path}: {exc.strerror} (choose a writable path with -o, "
                "or --agentevals-traces-dir in pytest)"
            ) from None
        self._started = time.perf_counter()
        self.totals = {
            "steps": 0,
            "model_calls": 0,
            "model_errors": 0,
            "tool_calls": 0,
            "tool_errors": 0,
            "tokens": dict.fromkeys(
                ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"), 0
            ),
            "cost_usd": 0.0,
            "checkpoints": 0,
            "compactions": 0,
            "verifications": {"passed": 0, "failed": 0},
        }
        start: Event = {
            "type": "run_start",
            "v": TRACE_VERSION,
            "run_id": self.run_id,
            "agent": self.agent,
            "seed": self.seed,
            "started_at": dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds"),
            "contract": contract.environment_contract(self._packages, self._contract),
            "pid": os.getpid(),
        }
        if self.task is not None:
            start["task"] = self.task
        if self.session is not None:
            start["session"] = self.session
        if self.resumed_from is not None:
            start["resumed_from"] = self.resumed_from
        if self.guards:
            start["budget"] = self.guarding.limits()
            start["guards"] = [guard.name for guard in self.guards]
        self._writer.write(start, sync=True)
        refused = self.guarding.start()
        if refused is not None:  # a guard refused the run: its trace says so, and nothing is sent
            self.stop()
            error, cause = refused
            raise error from cause
        self._frame = active.push_recorder(self, f"the recording {self.path}")
        if self._http:
            self._patches = contextlib.ExitStack()
            self._patches.enter_context(patched(_RecordingCassette(self), str(self.path)))
        return self

    def end(self, status: str) -> None:
        """Set how the run ended (ok, failed, budget_exhausted, escalated...) before it stops. A run a
        guard stopped keeps the guard's status."""
        if status not in RUN_STATUSES:
            raise ValueError(f"unknown run status {status!r}; use one of: {', '.join(RUN_STATUSES)}")
        self.status = status

    @contextlib.contextmanager
    def endpoint_exchange(self) -> Iterator[None]:
        """One model endpoint exchange of this run: the endpoint answers its client before it writes
        the exchange, so a run stopped as soon as its client has the answer waits for it here."""
        with self._lock:
            self._in_flight += 1
        try:
            yield
        finally:
            with self._drained:
                self._in_flight -= 1
                self._drained.notify_all()

    def stop(self, status: str | None = None, error: BaseException | None = None) -> None:
        writer = self._writer
        if writer is None:
            return
        with self._drained:  # bounded: an exchange that hangs must not hang the run's end
            self._drained.wait_for(lambda: self._in_flight == 0, timeout=EXCHANGE_WAIT_S)
        if self._patches is not None:
            self._patches.close()
            self._patches = None
        if self._frame is not None:
            active.pop(self._frame)
            self._frame = None
        self.snapshots.close()  # the workspace's watches (a recorder started again watches anew)
        guarding = self.guarding
        # A guard's stop, then what the harness said with end(), then the way out.
        final = guarding.halt_status or self.status or status or ("error" if error else "ok")
        empty = self.require_model_call and final == "ok" and self.totals["model_calls"] == 0
        if empty:  # nothing was recorded, so nothing was checked: never a perfect run
            final = NO_MODEL_CALLS
        guarding.end(final)
        if guarding.failure is not None:
            error = guarding.failure  # the guard's own traceback, not the SDK's frames around it
        elif isinstance(error, RunStopped) and guarding.halt is not None:
            error = None  # the run's own stop: its guard event says why
        with self._lock:
            end: Event = {
                "type": "run_end",
                "seq": self._next_seq(),
                "t": self._now(),
                "status": final,
                "totals": {**self.totals, "steps": self.steps, "cost_usd": round(self.totals["cost_usd"], 8)},
            }
            if empty:
                end["reason"] = NO_MODEL_CALLS_REASON
            if self._observed is not None:
                end["observed_contract"] = self._observed
            if error is not None:
                end["error"] = {
                    "type": type(error).__qualname__,
                    "message": str(error),
                    "traceback": "".join(traceback.format_exception(error))[-4000:],
                }
            writer.write(end)
            writer.close()
            self._writer = None

    # -- the run lifecycle (lifecycle.py) ----------------------------------------------------------

    def run_agent(self) -> Any:
        """Start the agent on this recording's task through `spec.runner` (in pytest, the
        `pytest_agentevals_run_agent(run)` hooks, with `run.layer == "record"`); its result."""
        if self.spec.runner is not None:
            result = self.spec.runner(self)
            if result is not None:
                return result
        raise AgentEvalsError(
            f"{self.spec.name}: nothing started the agent for this recording: run it in the test itself, "
            "or add a `def pytest_agentevals_run_agent(run): ...` hook to a conftest.py that starts it "
            'when run.layer == "record" and returns its result (see docs/trace-format.md)'
        )

    def verify(
        self, command: str | Sequence[str], cwd: str | Path | None = None, *, timeout: float | None = None
    ) -> Check:
        """Run a check of the agent's work (`python -m pytest -q`; a string is split as a shell splits
        it, and no shell runs it) in `cwd`, by default the current folder, and write its result as
        this run's `verification` event: passed when it exits 0, with its exit code and the tail of
        its output. Returns the `Check` (recording/verify.py)."""
        from .verify import DEFAULT_TIMEOUT_S, check_command, run_check

        if self._writer is None:
            raise RecordingError(f"verify(): the recorder for {self.path} is not running")
        check = run_check(
            check_command("verify", command), cwd, DEFAULT_TIMEOUT_S if timeout is None else timeout
        )
        fields = check.event()
        self.count("verification", passed=check.passed)
        self.emit("verification", **fields)
        return check

    def finish(self, error: BaseException | None) -> None:
        """The agent's part is over: nothing to judge here (a guard's stop is in the trace already)."""

    def close(self, failed: bool = False) -> None:
        """End the recording: `failed` (the test failed) is its status unless one was set."""
        if failed and self.status is None and self._writer is not None:
            self.end("failed")
        self.stop()

    def section(self) -> str | None:
        return None

    def __enter__(self) -> Recorder:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        status = None
        if isinstance(exc, KeyboardInterrupt):
            status = "interrupted"
        elif isinstance(exc, SystemExit):
            status = "ok" if exc.code in (None, 0) else "failed"
            exc = None
        self.stop(status=status, error=exc)

    # -- events ----------------------------------------------------------------------------------

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def _now(self) -> float:
        return round(time.perf_counter() - self._started, 6)

    def emit(self, kind: str, sync: bool = False, **fields: Any) -> Event:
        """Write one event, stamped with its sequence number, time and step."""
        with self._lock:
            if self._writer is None:
                raise RecordingError(f"the recorder for {self.path} is not running; start it first")
            event: Event = {"type": kind, "seq": self._next_seq(), "t": self._now(), "step": self.steps}
            event.update(fields)
            self._writer.write(event, sync=sync)
            if kind == "checkpoint":
                self._last_checkpoint = event["seq"]
        if self.guards and kind in OBSERVED:
            self.guarding.observe(event)
        return event

    def record_http(
        self, vcr_request: Any, vcr_response: dict[str, Any], latency_s: float, failure: str | None = None
    ) -> None:
        """Write one exchange as a model_call. `failure` says why an exchange did not complete even
        if its status says it did (an answer cut short mid-stream): it counts as a model error."""
        fields = exchange.model_call_fields(vcr_request, vcr_response, latency_s, self._prices, self._bodies)
        status = fields["response"]["status"]
        with self._lock:
            ok = 200 <= status < 300 and failure is None
            if fields["provider"] == "anthropic":
                self.totals["model_calls"] += 1
                if ok:
                    self.steps += 1
                    tokens = self.totals["tokens"]
                    for key, value in fields["usage"].items():
                        if key in tokens:  # the four kinds; the cache-write split is per call
                            tokens[key] += value
                    self.totals["cost_usd"] += fields["cost_usd"] or 0.0
                    if self._observed is None and isinstance(fields["request"].get("body"), dict):
                        self._observed = contract.observed_contract(fields["request"]["body"])
                else:
                    self.totals["model_errors"] += 1
                    fields["error"] = failure or exchange.error_summary(fields)
            elif failure is not None:
                fields["error"] = failure
            # A failed call belongs to the step it was trying to take.
            step = self.steps if ok else self.steps + 1
            event = {"type": "model_call", "seq": self._next_seq(), "t": self._now(), "step": step, **fields}
            if self._writer is not None:
                self._writer.write(event)
        if self.guards and fields["provider"] == "anthropic":
            # An answer cut short is a call that did not complete: the guards reconcile it as one.
            self.guarding.after_call(
                vcr_request,
                status if ok or failure is None else 0,
                fields.get("usage") or {},
                fields.get("cost_usd"),
            )
            self.guarding.observe(event)

    def _tool_event(
        self, name: str, tool_input: dict[str, Any], started: float, output: Any, error: BaseException | None
    ) -> None:
        fields: dict[str, Any] = {
            "name": name,
            "input": tool_input,
            "duration_ms": round((time.perf_counter() - started) * 1000, 3),
        }
        with self._lock:
            self.totals["tool_calls"] += 1
            if error is not None:
                self.totals["tool_errors"] += 1
                fields["error"] = {"type": _qualified(type(error)), "message": _message(error)}
            else:
                fields["output"] = output
        self.emit("tool_call", **fields)

    def record_tool(self, name: str, tool_input: dict[str, Any], run: Callable[[], Any]) -> Any:
        started = time.perf_counter()
        try:
            output = run()
        except Exception as exc:
            self._tool_event(name, tool_input, started, None, exc)
            raise
        self._tool_event(name, tool_input, started, output, None)
        return output

    async def record_tool_async(self, name: str, tool_input: dict[str, Any], run: Callable[[], Any]) -> Any:
        started = time.perf_counter()
        try:
            output = await run()
        except Exception as exc:
            self._tool_event(name, tool_input, started, None, exc)
            raise
        self._tool_event(name, tool_input, started, output, None)
        return output

    # -- what guards read ------------------------------------------------------------------------

    @property
    def guards(self) -> tuple[Guard, ...]:
        return self.guarding.guards

    @property
    def prices(self) -> PriceTable:
        return self._prices

    @property
    def last_checkpoint(self) -> int | None:
        """The seq of the run's last checkpoint event, if any."""
        return self._last_checkpoint

    def count(self, kind: str, passed: bool | None = None) -> None:
        with self._lock:
            if kind == "verification":
                self.totals["verifications"]["passed" if passed else "failed"] += 1
            else:
                self.totals[kind] += 1


def _message(error: BaseException) -> str:
    """str(error), or a note when that raises: recording a tool's exception must not replace it."""
    try:
        return str(error)
    except Exception as exc:
        return f"<str() raised {type(exc).__qualname__}>"


def _qualified(cls: type) -> str:
    module = cls.__module__
    return cls.__qualname__ if module == "builtins" else f"{module}.{cls.__qualname__}"


def current_recorder() -> Recorder | None:
    """The recorder of the run in progress in this context, if any (docs/service.md: with runs open
    side by side, a context of none of them gets `AmbiguousRun`)."""
    recorder = active.recorder()
    return recorder if isinstance(recorder, Recorder) else None
