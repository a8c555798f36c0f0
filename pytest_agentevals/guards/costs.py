"""What a model request may cost, estimated before it is sent, and the error for a model with no price.

Input tokens are estimated from the request body's size: one token per four bytes, rounded up (the
same ratio `pytest_agentevals.sim` counts by; the JSON's keys and punctuation make it a slight
overcount for prose). The reservation adds the request's `max_tokens` of output: the most the call
can use. After the call, guards reconcile with the usage the API reports.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from ..errors import ConfigError
from .prices import PriceTable

BYTES_PER_TOKEN = 4
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def estimate_input_tokens(raw_body: bytes) -> int:
    """The request's input tokens, estimated from its body's size (at least 1)."""
    return max(1, math.ceil(len(raw_body) / BYTES_PER_TOKEN))


def reserve_cost(prices: PriceTable, model: str, input_tokens: int, max_tokens: int) -> float | None:
    """The most a call can cost: its estimated input at the input price plus `max_tokens` of output
    at the output price, in USD; None when the price table does not know the model."""
    row = prices.row(model)
    if row is None:
        return None
    return (input_tokens * row["input"] + max_tokens * row["output"]) / 1_000_000


def max_tokens_of(body: Mapping[str, Any]) -> int:
    value = body.get("max_tokens")
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def price_key(model: str) -> str:
    """The pyproject table that prices `model`: `[tool.agentevals.prices.MODEL]`."""
    name = model if _BARE_KEY.match(model) else '"' + model.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return f"[tool.agentevals.prices.{name}]"


def unpriced(model: str, keys: tuple[str, ...]) -> ConfigError:
    """The error for a cost budget meeting a model the price table does not know: never counted as $0."""
    shown = model or "(no model in the request)"
    return ConfigError(
        price_key(model or "MODEL"),
        f"no price for model {shown!r}, and the run has a cost budget ({', '.join(keys)})",
        f"add its input and output prices in USD per million tokens under {price_key(model or 'MODEL')} "
        "in pyproject.toml (or Recorder(prices=...)); an unpriced model is never counted as $0",
    )
