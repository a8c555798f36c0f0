"""The recorder: one run's model calls, tool calls and harness events, in order, into one trace."""

from __future__ import annotations

import asyncio
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
from typing import Any

from ..errors import AgentEvalsError, GuardError, RecordingError, RunStopped
from ..trace.events import RUN_STATUSES, TRACE_VERSION, Event
from ..trace.writer import TraceWriter
from . import active, contract, exchange
from .bodies import BodyDecoder
from .guards.costs import estimate_input_tokens, max_tokens_of, reserve_cost
from .guards.guard import Call, CallResult, Guard, Verdict
from .loud import loud
from .patching import patched
from .prices import PriceTable
from .providers.anthropic import is_messages_call
from .scrub import Scrubber
from .workspace import Snapshotter

# Events the guards see (a guard's own events are not among them; model calls they see too).
_OBSERVED = frozenset({"tool_call", "verification", "checkpoint", "compaction", "note"})


class _RecordingCassette:
    """vcrpy's view of the recorder: never plays, appends every real exchange as a model_call."""

    write_protected = False

    def __init__(self, recorder: Recorder) -> None:
        self._recorder = recorder

    def can_play_response_for(self, request: Any) -> bool:
        # vcrpy asks this first, before the real request goes out: the guards decide here, and the
        # latency clock starts after them.
        if self._recorder.guards:
            self._recorder.before_call(request)
        request._agentevals_started = time.perf_counter()
        return False

    def play_response(self, request: Any) -> Any:  # pragma: no cover - never asked, we never play
        raise RecordingError("the recording cassette has nothing to play")

    def filter_request(self, request: Any) -> Any:
        return request

    def append(self, request: Any, response: dict[str, Any]) -> None:
        started = getattr(request, "_agentevals_started", time.perf_counter())
        self._recorder.record_http(request, response, time.perf_counter() - started)


class Recorder:
    """Records a run into a trace file. Use as a context manager, or `start()` and `stop()`.

    `task` is the run's initial task (what a replay needs to start the agent again); `contract`
    adds what the harness declares about its environment (fixture hashes, prompt versions...).
    `guards` see every model request before it leaves and may stop the run (docs/guards.md).
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
    ) -> None:
        self.path = Path(path)
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
        self._writer: TraceWriter | None = None
        self._patches: contextlib.ExitStack | None = None
        self._started = 0.0
        self._seq = 0
        self.steps = 0
        self.status: str | None = None
        self.totals: dict[str, Any] = {}
        self._observed: dict[str, Any] | None = None
        self.snapshots = Snapshotter()
        self._bodies = BodyDecoder()
        self.guards: tuple[Guard, ...] = tuple(guards)
        self._guard_lock = threading.RLock()
        self._calls = 0  # model requests the guards saw
        self._in_flight: dict[object, Call] = {}  # by thread or asyncio task: at most one each
        self._halt: AgentEvalsError | None = None  # what stopped the run (a guard's stop or failure)
        self._failure: BaseException | None = None  # a guard's own exception, for run_end.error
        self._last_checkpoint: int | None = None

    # -- life cycle ------------------------------------------------------------------------------

    def start(self) -> Recorder:
        if self._writer is not None:
            raise RecordingError(f"the recorder for {self.path} is already started")
        try:
            self._writer = TraceWriter(self.path, scrub=Scrubber(self._secrets))
        except OSError as exc:
            raise RecordingError(
                f"cannot write the trace {self.path}: {exc.strerror} (choose a writable path with -o, "
                "or --agentevals-trace-dir in pytest)"
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
        if self.guards:
            budget: dict[str, float] = {}
            for guard in self.guards:
                budget.update(guard.limits())
            start["budget"] = budget
            start["guards"] = [guard.name for guard in self.guards]
        self._writer.write(start, sync=True)
        self._start_guards()
        active.push_recorder(self)
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

    def stop(self, status: str | None = None, error: BaseException | None = None) -> None:
        writer = self._writer
        if writer is None:
            return
        if self._patches is not None:
            self._patches.close()
            self._patches = None
        active.pop_recorder(self)
        final = self._halt_status() or self.status or status or ("error" if error else "ok")
        self._end_guards(final)
        if self._failure is not None:
            error = self._failure  # the guard's own traceback, not the SDK's frames around it
        elif isinstance(error, RunStopped) and self._halt is not None:
            error = None  # the run's own stop: its guard event says why
        with self._lock:
            end: Event = {
                "type": "run_end",
                "seq": self._next_seq(),
                "t": self._now(),
                # A guard's stop, then what the harness said with end(), then the way out.
                "status": self._halt_status() or self.status or status or ("error" if error else "ok"),
                "totals": {**self.totals, "steps": self.steps, "cost_usd": round(self.totals["cost_usd"], 8)},
            }
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
        if self.guards and kind in _OBSERVED:
            self._observe(event)
        return event

    def record_http(self, vcr_request: Any, vcr_response: dict[str, Any], latency_s: float) -> None:
        fields = exchange.model_call_fields(vcr_request, vcr_response, latency_s, self._prices, self._bodies)
        status = fields["response"]["status"]
        with self._lock:
            ok = 200 <= status < 300
            if fields["provider"] == "anthropic":
                self.totals["model_calls"] += 1
                if ok:
                    self.steps += 1
                    for key, value in fields["usage"].items():
                        self.totals["tokens"][key] += value
                    self.totals["cost_usd"] += fields["cost_usd"] or 0.0
                    if self._observed is None and isinstance(fields["request"].get("body"), dict):
                        self._observed = contract.observed_contract(fields["request"]["body"])
                else:
                    self.totals["model_errors"] += 1
                    fields["error"] = exchange.error_summary(fields)
            # A failed call belongs to the step it was trying to take.
            step = self.steps if ok else self.steps + 1
            event = {"type": "model_call", "seq": self._next_seq(), "t": self._now(), "step": step, **fields}
            if self._writer is not None:
                self._writer.write(event)
        call = getattr(vcr_request, "_agentevals_call", None)
        if isinstance(call, Call):
            result = CallResult(status, fields.get("usage") or {}, fields.get("cost_usd"))
            self._after_call(call, result)
            self._observe(event)

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
                fields["error"] = {"type": _qualified(type(error)), "message": str(error)}
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

    # -- guards ----------------------------------------------------------------------------------

    @property
    def prices(self) -> PriceTable:
        return self._prices

    @property
    def last_checkpoint(self) -> int | None:
        """The seq of the run's last checkpoint event, if any."""
        return self._last_checkpoint

    def _start_guards(self) -> None:
        """Let each guard see the run start; a stop here refuses the whole run (its trace says so)."""
        started: list[Guard] = []
        for guard in self.guards:
            refused: AgentEvalsError | None = None
            cause: BaseException | None = None
            try:
                verdict = guard.start(self)
            except Exception as exc:
                refused, cause, verdict = self._fail(guard, exc), exc, None
            started.append(guard)
            if verdict is not None and verdict.action == "stop":
                refused = self._halt_with(guard, verdict)
            elif verdict is not None:
                self._guard_event(guard, verdict)
            if refused is not None:
                for each in started:
                    with contextlib.suppress(Exception):
                        each.end(self._halt_status() or "error")
                self.guards = ()  # each was told the run ended
                self.stop()
                if cause is None or cause is refused:
                    raise refused
                raise refused from cause

    def before_call(self, request: Any) -> None:
        """Ask every guard about a model request before it leaves; raises (loudly, so the SDK neither
        retries nor wraps it) when one stops the run or fails."""
        if not is_messages_call(request.method, request.uri):
            return
        with self._guard_lock:
            if self._halt is not None:
                raise loud(self._halt)
            flight = _flight_key()
            abandoned = self._in_flight.pop(flight, None)
            if abandoned is not None:  # that request never got a response (the connection broke)
                self._after_call(abandoned, None)
            call = self._call_of(request)
            for guard in self.guards:
                try:
                    verdict = guard.before_call(call)
                except Exception as exc:
                    self._release(call)
                    error = self._fail(guard, exc)
                    raise loud(error) from (exc if error is not exc else None)
                if verdict is None:
                    continue
                if verdict.action == "stop":
                    self._release(call)
                    raise loud(self._halt_with(guard, verdict))
                self._guard_event(guard, verdict)
            self._in_flight[flight] = call
            request._agentevals_call = call

    def _call_of(self, request: Any) -> Call:
        raw = request.body
        if raw is not None and not isinstance(raw, bytes):
            raw = b"".join(raw) if not isinstance(raw, str) else raw.encode()
        raw = raw or b""
        body: Any = {}
        with contextlib.suppress(ValueError):
            body = self._bodies.decode(raw) if raw else {}
        if not isinstance(body, dict):
            body = {}
        else:
            request._agentevals_body = body  # decoded once: the model_call event reuses it
        model = body.get("model") if isinstance(body.get("model"), str) else ""
        max_tokens = max_tokens_of(body)
        input_tokens = estimate_input_tokens(raw)
        self._calls += 1
        return Call(
            index=self._calls,
            model=model,
            max_tokens=max_tokens,
            input_tokens=input_tokens,
            cost_usd=reserve_cost(self._prices, model, input_tokens, max_tokens),
            body=body,
        )

    def _after_call(self, call: Call, result: CallResult | None) -> None:
        with self._guard_lock:
            if result is not None:
                flight = _flight_key()
                if self._in_flight.get(flight) is call:
                    del self._in_flight[flight]
            for guard in self.guards:
                try:
                    verdict = guard.after_call(call, result)
                except Exception as exc:
                    error = self._fail(guard, exc)
                    raise loud(error) from (exc if error is not exc else None)
                if verdict is not None:
                    self._guard_event(guard, Verdict.warn(verdict.reason, **verdict.details))

    def _release(self, call: Call) -> None:
        """A call that will not leave: every guard gives back what it reserved for it."""
        for guard in self.guards:
            with contextlib.suppress(Exception):
                guard.after_call(call, None)

    def _observe(self, event: Event) -> None:
        with self._guard_lock:
            for guard in self.guards:
                try:
                    guard.observe(event)
                except Exception as exc:
                    # Raised at the run's next model request: a harness event is no place to fail.
                    self._fail(guard, exc)

    def _guard_event(self, guard: Guard, verdict: Verdict, **extra: Any) -> None:
        fields: dict[str, Any] = {"guard": guard.name, "action": verdict.action, "reason": verdict.reason}
        if verdict.status is not None:
            fields["status"] = verdict.status
        fields.update({k: v for k, v in verdict.details.items() if k not in fields})
        fields.update(extra)
        self.emit("guard", sync=verdict.action == "stop", **fields)

    def _halt_with(self, guard: Guard, verdict: Verdict) -> RunStopped:
        """A guard stops the run: its event, its status for run_end; the error to raise."""
        status = verdict.status if verdict.status in RUN_STATUSES else "budget_exhausted"
        stop = RunStopped(status, guard.name, verdict.reason, verdict.fix)
        self._guard_event(guard, Verdict.stop(status, verdict.reason, **verdict.details))
        self._halt = stop
        return stop

    def _fail(self, guard: Guard, exc: BaseException) -> AgentEvalsError:
        """A guard raised: the run ends as error, with the guard's traceback in the trace. Returns
        the error to raise (the guard's own when it is ours, else a GuardError)."""
        if isinstance(exc, AgentEvalsError):
            error: AgentEvalsError = exc
        else:
            error = GuardError(
                f"the {guard.name} guard failed: {type(exc).__name__}: {exc} (the run ends as error; "
                "its traceback is in the trace's run_end.error)"
            )
        self._guard_event(
            guard,
            Verdict.stop("error", str(error)),
            action="error",
            traceback="".join(traceback.format_exception(exc))[-4000:],
        )
        if self._halt is None:
            self._halt = error
            self._failure = exc
        return error

    def _halt_status(self) -> str | None:
        if self._halt is None:
            return None
        return self._halt.status if isinstance(self._halt, RunStopped) else "error"

    def _end_guards(self, status: str) -> None:
        for call in list(self._in_flight.values()):
            self._release(call)
        self._in_flight.clear()
        for guard in self.guards:
            try:
                guard.end(status)
            except Exception as exc:
                self._fail(guard, exc)

    def count(self, kind: str, passed: bool | None = None) -> None:
        with self._lock:
            if kind == "verification":
                self.totals["verifications"]["passed" if passed else "failed"] += 1
            else:
                self.totals[kind] += 1


def _flight_key() -> object:
    """What one request in flight belongs to: its asyncio task, or else its thread."""
    try:
        task = asyncio.current_task()
    except RuntimeError:
        task = None
    return task if task is not None else threading.get_ident()


def _qualified(cls: type) -> str:
    module = cls.__module__
    return cls.__qualname__ if module == "builtins" else f"{module}.{cls.__qualname__}"


def current_recorder() -> Recorder | None:
    """The recorder of the run in progress in this process, if any."""
    recorder = active.recorder()
    return recorder if isinstance(recorder, Recorder) else None


@contextlib.contextmanager
def record(path: str | Path, **options: Any) -> Iterator[Recorder]:
    """Record everything inside the block into the trace at `path` (options as for `Recorder`)."""
    with Recorder(path, **options) as recorder:
        yield recorder
