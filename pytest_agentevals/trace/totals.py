"""A run's totals counted from its events: what `run_end.totals` holds, for any run or part of one.

One counting, shared by the trace summary (`agentevals show`) and the metrics (which count a slice
of a run the same way), so the two never disagree on what a token or a model call is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .events import Event

TOKEN_KINDS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
# The cache writes by lifetime: the API's `usage.cache_creation`, kept flat in a model_call's usage
# when the API reported it. They split `cache_creation_input_tokens`; they are not added to it.
SPLIT_5M = "ephemeral_5m_input_tokens"
SPLIT_1H = "ephemeral_1h_input_tokens"
CACHE_WRITE_SPLIT = (SPLIT_5M, SPLIT_1H)


def has_split(usage: Mapping[str, Any]) -> bool:
    """Whether a call's usage says which cache writes were 5-minute and which 1-hour ones."""
    return type(usage.get(SPLIT_5M)) is int or type(usage.get(SPLIT_1H)) is int


def cache_writes(usage: Mapping[str, Any]) -> tuple[int, int]:
    """(5-minute, 1-hour) cache-write tokens of one call. Without a split every write counts as a
    5-minute one (how such a call was always priced); a split adding up to less than the total
    leaves the rest at the 5-minute rate, never uncounted."""
    total = _count(usage, "cache_creation_input_tokens")
    if not has_split(usage):
        return total, 0
    hour = _count(usage, SPLIT_1H)
    return max(_count(usage, SPLIT_5M), total - hour), hour


def _count(usage: Mapping[str, Any], key: str) -> int:
    value = usage.get(key)
    return value if type(value) is int and value > 0 else 0


def is_model_call(event: Event) -> bool:
    """A call of a model API: a `model_call` event of a model provider (`http` is any other request)."""
    return event.get("provider") != "http"


def http_ok(event: Event) -> bool:
    response = event.get("response")
    status = response.get("status") if type(response) is dict else None
    return type(status) is int and 200 <= status < 300


def number(value: Any) -> float | None:
    """A JSON number as a float; None for anything else (true and false are not numbers)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


@dataclass
class RunTotals:
    """Counts over events, added one at a time.

    A model call is a `model_call` event of a model provider; its tokens and cost count when it
    succeeded (2xx), and `steps` is the highest step of a successful one. A cost of null (a model
    the price table did not know) leaves the call out of `cost_usd` and names it in `unpriced`.
    """

    steps: int = 0
    model_calls: int = 0
    model_errors: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    tokens: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TOKEN_KINDS, 0))
    cost_usd: float = 0.0
    checkpoints: int = 0
    compactions: int = 0
    verifications_passed: int = 0
    verifications_failed: int = 0
    unpriced: set[str] = field(default_factory=set)
    # Cache-write tokens by lifetime; "unsplit": of calls recorded without the split (priced at
    # the 5-minute rate, as they always were).
    cache_writes: dict[str, int] = field(default_factory=lambda: {"5m": 0, "1h": 0, "unsplit": 0})

    def add(self, event: Event) -> None:
        kind = event.get("type")
        if kind == "model_call":
            self.add_model_call(event)
        elif kind == "tool_call":
            self.tool_calls += 1
            if "error" in event:
                self.tool_errors += 1
        elif kind == "checkpoint":
            self.checkpoints += 1
        elif kind == "compaction":
            self.compactions += 1
        elif kind == "verification":
            if event.get("passed"):
                self.verifications_passed += 1
            else:
                self.verifications_failed += 1

    def as_run_end(self) -> dict[str, Any]:
        """These counts as `run_end.totals` holds them (the schema's shape), for a writer that
        made its events itself rather than through a Recorder."""
        return {
            "steps": self.steps,
            "model_calls": self.model_calls,
            "model_errors": self.model_errors,
            "tool_calls": self.tool_calls,
            "tool_errors": self.tool_errors,
            "tokens": dict(self.tokens),
            "cost_usd": round(self.cost_usd, 8),
            "checkpoints": self.checkpoints,
            "compactions": self.compactions,
            "verifications": {"passed": self.verifications_passed, "failed": self.verifications_failed},
        }

    def add_model_call(self, event: Event) -> bool:
        """Count a model_call event; True when it was a successful call of a model."""
        if not is_model_call(event):
            return False
        self.model_calls += 1
        if not http_ok(event):
            self.model_errors += 1
            return False
        step = event.get("step")
        if type(step) is int and step > self.steps:
            self.steps = step
        usage = event.get("usage")
        if type(usage) is dict:
            tokens = self.tokens
            for key in TOKEN_KINDS:
                value = usage.get(key)
                if type(value) is int:  # not a bool, nor anything else
                    tokens[key] += value
            writes = self.cache_writes
            if has_split(usage):
                five, hour = cache_writes(usage)
                writes["5m"] += five
                writes["1h"] += hour
            else:
                writes["unsplit"] += _count(usage, "cache_creation_input_tokens")
        cost = event.get("cost_usd")
        if type(cost) is float or type(cost) is int:
            self.cost_usd += cost
        elif isinstance(event.get("model"), str):
            self.unpriced.add(event["model"])
        return True
