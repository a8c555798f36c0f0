"""Spend: tokens by kind, cost, cost per verified pass and the prompt-cache hit rate.

Tokens and cost are counted by `trace.totals.RunTotals` (the same counting `agentevals show` uses):
over successful model calls, by the four kinds the API reports — uncached input, cache write
(`cache_creation_input_tokens`), cache read and output.
"""

from __future__ import annotations

from collections.abc import Mapping


def cache_hit_rate(tokens: Mapping[str, int]) -> float | None:
    """Cache read over all input (uncached + cache write + cache read); None with no input at all."""
    read = tokens.get("cache_read_input_tokens", 0)
    every = tokens.get("input_tokens", 0) + tokens.get("cache_creation_input_tokens", 0) + read
    return read / every if every else None


def cost_per_verified_pass(cost_usd: float | None, verified_passes: int) -> float | None:
    """Cost over verified passes — of one run (0 or 1 pass) or of many (a marathon's seeds).

    None, never infinity, when nothing passed; None too when the cost is unknown (a model without
    a price: an unknown cost is not $0)."""
    if cost_usd is None or verified_passes <= 0:
        return None
    return cost_usd / verified_passes
