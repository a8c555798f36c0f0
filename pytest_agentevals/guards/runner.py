"""The recorder's side of its guards: asks them in order, writes their events, and keeps the run's stop.

The recorder hands over each model request before it leaves (from vcrpy's `can_play_response_for`),
each recorded exchange, each event it writes, and the run's start and end. A stop or a guard's own
failure is kept: every later request of the run is refused with the same error, and the run ends with
the guard's status. Errors raised from inside the SDK's transport go through `loud()`, so the SDK
neither retries nor wraps them.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import traceback
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..errors import AgentEvalsError, GuardError, RunStopped, loud
from ..trace.events import RUN_STATUSES
from .costs import estimate_input_tokens, max_tokens_of, reserve_cost
from .protocol import Call, CallResult, Guard, Ruling, Run

ModelCall = Callable[[str, str], bool]  # (method, url) -> whether the request is a model call

# Events the guards see besides model calls (their own guard and watchdog events are not among them).
OBSERVED = frozenset({"tool_call", "verification", "checkpoint", "compaction", "note", "model_call"})


class GuardRunner:
    """The guards of one run. `decode` turns a request body into JSON (the recorder's incremental
    decoder, so a body is parsed once for the guards and the trace); `is_model_call` tells a model
    request from other traffic (the recorder's providers know; the guards know no provider)."""

    def __init__(
        self, guards: Sequence[Guard], run: Run, decode: Callable[[bytes], Any], is_model_call: ModelCall
    ) -> None:
        self.guards: tuple[Guard, ...] = tuple(guards)
        self._run = run
        self._decode = decode
        self._is_model_call = is_model_call
        self._lock = threading.RLock()
        self._calls = 0  # model requests the guards saw
        self._in_flight: dict[object, Call] = {}  # by thread or asyncio task: at most one each
        self.halt: AgentEvalsError | None = None  # what stopped the run (a guard's stop or failure)
        self.failure: BaseException | None = None  # a guard's own exception, for run_end.error

    def limits(self) -> dict[str, float]:
        """Every guard's limits, for `run_start.budget`."""
        budget: dict[str, float] = {}
        for guard in self.guards:
            budget.update(guard.limits())
        return budget

    @property
    def halt_status(self) -> str | None:
        """The run's end status if a guard stopped it (or failed), else None."""
        if self.halt is None:
            return None
        return self.halt.status if isinstance(self.halt, RunStopped) else "error"

    # -- the run's start and end ----------------------------------------------------------------

    def start(self) -> tuple[AgentEvalsError, BaseException | None] | None:
        """Let each guard see the run start. A refusal (a stop, or a guard failing) returns the
        error to raise and its cause; the guards that started are then told the run ended."""
        started: list[Guard] = []
        for guard in self.guards:
            refused: AgentEvalsError | None = None
            cause: BaseException | None = None
            try:
                ruling = guard.start(self._run)
            except Exception as exc:
                refused, cause, ruling = self._fail(guard, exc), exc, None
            started.append(guard)
            if ruling is not None and ruling.action == "stop":
                refused = self._halt_with(guard, ruling)
            elif ruling is not None:
                self._event(guard, ruling)
            if refused is not None:
                for each in started:
                    with contextlib.suppress(Exception):
                        each.end(self.halt_status or "error")
                self.guards = ()  # each was told the run ended
                return refused, (None if cause is refused else cause)
        return None

    def end(self, status: str) -> None:
        """The run ends: calls still in flight give back their reservations, each guard is told."""
        for call in list(self._in_flight.values()):
            self._release(call)
        self._in_flight.clear()
        for guard in self.guards:
            try:
                guard.end(status)
            except Exception as exc:
                self._fail(guard, exc)

    # -- calls ----------------------------------------------------------------------------------

    def before_call(self, request: Any) -> None:
        """Ask every guard about a model request (vcrpy's request) before it leaves; raises when one
        stops the run or fails."""
        if not self._is_model_call(request.method, request.uri):
            return
        with self._lock:
            if self.halt is not None:
                raise loud(self.halt)
            flight = _flight_key()
            abandoned = self._in_flight.pop(flight, None)
            if abandoned is not None:  # that request never got a response (the connection broke)
                self._after(abandoned, None)
            call = self._call_of(request)
            for guard in self.guards:
                try:
                    ruling = guard.before_call(call)
                except Exception as exc:
                    self._release(call)
                    error = self._fail(guard, exc)
                    raise loud(error) from (exc if error is not exc else None)
                if ruling is None:
                    continue
                if ruling.action == "stop":
                    self._release(call)
                    raise loud(self._halt_with(guard, ruling))
                self._event(guard, ruling)
            self._in_flight[flight] = call
            request._agentevals_call = call

    def after_call(self, request: Any, status: int, usage: Mapping[str, int], cost_usd: float | None) -> None:
        """A recorded exchange: the guards see how the call went."""
        call = getattr(request, "_agentevals_call", None)
        if isinstance(call, Call):
            self._after(call, CallResult(status, usage, cost_usd))

    def observe(self, event: Mapping[str, Any]) -> None:
        """An event was written. A guard failing here fails the run's next model request."""
        with self._lock:
            for guard in self.guards:
                try:
                    guard.observe(event)
                except Exception as exc:
                    self._fail(guard, exc)

    def _call_of(self, request: Any) -> Call:
        raw = request.body
        if raw is not None and not isinstance(raw, bytes):
            raw = b"".join(raw) if not isinstance(raw, str) else raw.encode()
        raw = raw or b""
        body: Any = {}
        with contextlib.suppress(ValueError):
            body = self._decode(raw) if raw else {}
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
            cost_usd=reserve_cost(self._run.prices, model, input_tokens, max_tokens),
            body=body,
        )

    def _after(self, call: Call, result: CallResult | None) -> None:
        with self._lock:
            if result is not None:
                flight = _flight_key()
                if self._in_flight.get(flight) is call:
                    del self._in_flight[flight]
            for guard in self.guards:
                try:
                    ruling = guard.after_call(call, result)
                except Exception as exc:
                    error = self._fail(guard, exc)
                    raise loud(error) from (exc if error is not exc else None)
                if ruling is not None:  # after a call a guard can only report
                    self._event(guard, Ruling.warn(ruling.reason, **ruling.details))

    def _release(self, call: Call) -> None:
        """A call that will not leave: every guard gives back what it reserved for it."""
        for guard in self.guards:
            with contextlib.suppress(Exception):
                guard.after_call(call, None)

    # -- stops, failures and their events -------------------------------------------------------

    def _event(self, guard: Guard, ruling: Ruling, **extra: Any) -> None:
        fields: dict[str, Any] = {"guard": guard.name, "action": ruling.action, "reason": ruling.reason}
        if ruling.status is not None:
            fields["status"] = ruling.status
        fields.update({k: v for k, v in ruling.details.items() if k not in fields})
        fields.update(extra)
        self._run.emit("guard", sync=ruling.action == "stop", **fields)

    def _halt_with(self, guard: Guard, ruling: Ruling) -> RunStopped:
        """A guard stops the run: its event, its status for run_end; the error to raise."""
        status = ruling.status if ruling.status in RUN_STATUSES else "budget_exhausted"
        stop = RunStopped(status, guard.name, ruling.reason, ruling.fix)
        self._event(guard, Ruling.stop(status, ruling.reason, **ruling.details))
        self.halt = stop
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
        self._event(
            guard,
            Ruling.stop("error", str(error)),
            action="error",
            traceback="".join(traceback.format_exception(exc))[-4000:],
        )
        if self.halt is None:
            self.halt = error
            self.failure = exc
        return error


def _flight_key() -> object:
    """What one request in flight belongs to: its asyncio task, or else its thread."""
    try:
        task = asyncio.current_task()
    except RuntimeError:
        task = None
    return task if task is not None else threading.get_ident()
