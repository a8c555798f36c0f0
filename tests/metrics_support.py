"""Hand-made traces for the metrics tests: events as the recorder writes them (seq, t, step)."""

from __future__ import annotations

from typing import Any

from pytest_agentevals.trace.events import Event


class Run:
    """Builds one run's events. `call()` is a successful model call (it advances the step), as the
    recorder counts: every event after it carries its step; a failed call carries the next step."""

    def __init__(self, budget: dict[str, Any] | None = None, seed: int = 1) -> None:
        start: Event = {
            "type": "run_start",
            "v": 1,
            "run_id": "r1",
            "agent": "hand",
            "seed": seed,
            "started_at": "2026-01-01T00:00:00.000+00:00",
            "contract": {},
        }
        if budget is not None:
            start["budget"] = budget
        self.events: list[Event] = [start]
        self.step = 0
        self._seq = 0

    def _add(self, kind: str, step: int | None = None, **fields: Any) -> Run:
        self._seq += 1
        event: Event = {"type": kind, "seq": self._seq, "t": self._seq / 10, "step": self.step}
        if step is not None:
            event["step"] = step
        event.update(fields)
        self.events.append(event)
        return self

    def call(
        self,
        *,
        model: str = "claude-sonnet-4-6",
        input: int = 0,
        write: int = 0,
        read: int = 0,
        output: int = 0,
        cost: float | None = 0.0,
        content: list[dict[str, Any]] | None = None,
        messages: list[dict[str, Any]] | None = None,
    ) -> Run:
        self.step += 1
        usage = {
            "input_tokens": input,
            "output_tokens": output,
            "cache_creation_input_tokens": write,
            "cache_read_input_tokens": read,
        }
        body = {"type": "message", "role": "assistant", "content": content or [], "usage": usage}
        return self._add(
            "model_call",
            provider="anthropic",
            model=model,
            stream=False,
            request={"method": "POST", "url": "http://sim/v1/messages", "body": {"messages": messages or []}},
            response={"status": 200, "headers": {}, "json": body},
            usage=usage,
            cost_usd=cost,
            latency_ms=1.0,
        )

    def failed_call(self, status: int = 429) -> Run:
        return self._add(
            "model_call",
            step=self.step + 1,
            provider="anthropic",
            model="claude-sonnet-4-6",
            stream=False,
            request={"method": "POST", "url": "http://sim/v1/messages", "body": {}},
            response={"status": status, "headers": {}, "json": {"type": "error"}},
            usage={},
            cost_usd=0.0,
            error=f"HTTP {status}",
        )

    def calls(self, count: int, **usage: Any) -> Run:
        for _ in range(count):
            self.call(**usage)
        return self

    def tool(self, name: str = "read", output: Any = "ok", error: str | None = None, **args: Any) -> Run:
        fields: dict[str, Any] = {"name": name, "input": args, "duration_ms": 0.1}
        if error is None:
            fields["output"] = output
        else:
            fields["error"] = {"type": "OSError", "message": error}
        return self._add("tool_call", **fields)

    def verify(self, progress: float | None = None, passed: bool = True, name: str = "check") -> Run:
        fields: dict[str, Any] = {"name": name, "passed": passed}
        if progress is not None:
            fields["progress"] = progress
        return self._add("verification", **fields)

    def note(self, message: str, **data: Any) -> Run:
        return self._add("note", message=message, **({"data": data} if data else {}))

    def checkpoint(self) -> Run:
        return self._add("checkpoint", state={"n": self.step})

    def compaction(self) -> Run:
        return self._add("compaction", tokens_before=1000, tokens_after=100, summary="kept")

    def guard(self, guard: str, action: str, status: str, reason: str) -> Run:
        return self._add("guard", guard=guard, action=action, status=status, reason=reason)

    def watchdog(self, reason: str = "no progress", action: str = "ask") -> Run:
        return self._add("watchdog", reason=reason, action=action)

    def end(self, status: str = "ok", error: dict[str, Any] | None = None) -> list[Event]:
        self._seq += 1
        event: Event = {
            "type": "run_end",
            "seq": self._seq,
            "t": self._seq / 10,
            "status": status,
            "totals": {},
        }
        if error is not None:
            event["error"] = error
        self.events.append(event)
        return self.events
