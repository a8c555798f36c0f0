"""The price table: USD per million tokens by model id prefix, overridable per project.

The defaults are the published list prices of Anthropic's model families when this table was
written; they drift, so `[tool.agentevals.prices]` (or `Recorder(prices=...)`) overrides any row.
The longest matching prefix wins, so an override for one dated model beats its family's row.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# input, output, cache_write (5-minute cache writes), cache_read; USD per million tokens.
DEFAULT_PRICES: dict[str, dict[str, float]] = {
    "claude-opus-4-5": {"input": 5.0, "output": 25.0, "cache_write": 6.25, "cache_read": 0.50},
    "claude-opus-4-6": {"input": 5.0, "output": 25.0, "cache_write": 6.25, "cache_read": 0.50},
    "claude-opus-4": {"input": 15.0, "output": 75.0, "cache_write": 18.75, "cache_read": 1.50},
    "claude-sonnet-4": {"input": 3.0, "output": 15.0, "cache_write": 3.75, "cache_read": 0.30},
    "claude-3-7-sonnet": {"input": 3.0, "output": 15.0, "cache_write": 3.75, "cache_read": 0.30},
    "claude-haiku-4": {"input": 1.0, "output": 5.0, "cache_write": 1.25, "cache_read": 0.10},
    "claude-3-5-haiku": {"input": 0.80, "output": 4.0, "cache_write": 1.0, "cache_read": 0.08},
    # The simulated server's model ids cost nothing.
    "sim-": {"input": 0.0, "output": 0.0, "cache_write": 0.0, "cache_read": 0.0},
}


class PriceTable:
    def __init__(self, overrides: Mapping[str, Mapping[str, float]] | None = None) -> None:
        rows = {**DEFAULT_PRICES, **{k: dict(v) for k, v in (overrides or {}).items()}}
        # Longest prefix first, so the most specific row is found first.
        self._rows = sorted(rows.items(), key=lambda item: len(item[0]), reverse=True)

    def row(self, model: str) -> Mapping[str, float] | None:
        for prefix, row in self._rows:
            if model.startswith(prefix):
                return row
        return None

    def cost(self, model: str, usage: Mapping[str, Any]) -> float | None:
        """The cost of one call in USD, or None for a model the table does not know."""
        row = self.row(model)
        if row is None:
            return None
        input_price = row["input"]
        total = (
            _tokens(usage, "input_tokens") * input_price
            + _tokens(usage, "output_tokens") * row["output"]
            + _tokens(usage, "cache_creation_input_tokens") * row.get("cache_write", input_price * 1.25)
            + _tokens(usage, "cache_read_input_tokens") * row.get("cache_read", input_price * 0.1)
        )
        return round(total / 1_000_000, 8)


def _tokens(usage: Mapping[str, Any], key: str) -> int:
    value = usage.get(key)
    return value if isinstance(value, int) else 0
