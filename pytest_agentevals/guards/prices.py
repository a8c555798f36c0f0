"""The price table: USD per million tokens by model id prefix, overridable per project.

The defaults are the published list prices of Anthropic's model families when this table was
written; they drift, so `[tool.agentevals.prices]` (or `Recorder(prices=...)`) overrides any row.
The longest matching prefix wins, so an override for one dated model beats its family's row.

Cache writes are billed by their lifetime: a 5-minute write at `cache_write` (1.25x input), a 1-hour
write at `cache_write_1h` (2x input). The API reports the two apart (`usage.cache_creation`), and the
trace keeps that split (`ephemeral_5m_input_tokens`, `ephemeral_1h_input_tokens`); a call recorded
without it (an older trace, an API that does not split) is priced as before, all at the 5-minute rate,
and `agentevals show` says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..trace.totals import cache_writes

# A field a price row omits is this multiple of its input price (the API's multipliers).
DEFAULT_MULTIPLIERS = {"cache_write": 1.25, "cache_write_1h": 2.0, "cache_read": 0.1}


def _row(input_price: float, output_price: float) -> dict[str, float]:
    return {
        "input": input_price,
        "output": output_price,
        **{name: round(input_price * factor, 6) for name, factor in DEFAULT_MULTIPLIERS.items()},
    }


# input, output, cache_write (5-minute writes), cache_write_1h (1-hour writes), cache_read;
# USD per million tokens.
DEFAULT_PRICES: dict[str, dict[str, float]] = {
    "claude-opus-4-5": _row(5.0, 25.0),
    "claude-opus-4-6": _row(5.0, 25.0),
    "claude-opus-4": _row(15.0, 75.0),
    "claude-sonnet-4": _row(3.0, 15.0),
    "claude-3-7-sonnet": _row(3.0, 15.0),
    "claude-haiku-4": _row(1.0, 5.0),
    "claude-3-5-haiku": _row(0.80, 4.0),
    # The simulated server's model ids cost nothing.
    "sim-": _row(0.0, 0.0),
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
        writes_5m, writes_1h = cache_writes(usage)
        total = (
            _tokens(usage, "input_tokens") * row["input"]
            + _tokens(usage, "output_tokens") * row["output"]
            + writes_5m * _price(row, "cache_write")
            + writes_1h * _price(row, "cache_write_1h")
            + _tokens(usage, "cache_read_input_tokens") * _price(row, "cache_read")
        )
        return round(total / 1_000_000, 8)


def _price(row: Mapping[str, float], name: str) -> float:
    value = row.get(name)
    return value if value is not None else row["input"] * DEFAULT_MULTIPLIERS[name]


def _tokens(usage: Mapping[str, Any], key: str) -> int:
    value = usage.get(key)
    return value if isinstance(value, int) else 0
