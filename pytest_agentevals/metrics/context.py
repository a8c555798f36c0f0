"""Context pressure: how full each model call's context was, against the model's context window.

A call's context is its prompt as the API counted it: input plus cache-write plus cache-read tokens
(the output is the next call's input). Its pressure is that over the model's window, from a table by
model id prefix like the price table (longest prefix wins), overridable per call of `compute`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Tokens of context by model id prefix: the standard windows when this table was written (some
# models take a larger one behind a beta header; override the row when a harness asks for it).
DEFAULT_CONTEXT_WINDOWS: dict[str, int] = {
    "claude-opus-4": 200_000,
    "claude-sonnet-4": 200_000,
    "claude-haiku-4": 200_000,
    "claude-3-7-sonnet": 200_000,
    "claude-3-5-sonnet": 200_000,
    "claude-3-5-haiku": 200_000,
    "claude-3-opus": 200_000,
    "claude-3-haiku": 200_000,
    # The simulated server's model ids: the window of the models they stand in for.
    "sim-": 200_000,
}


class ContextWindows:
    """Context windows by model id prefix, the longest matching prefix winning."""

    def __init__(self, overrides: Mapping[str, int] | None = None) -> None:
        rows = {**DEFAULT_CONTEXT_WINDOWS, **dict(overrides or {})}
        for prefix, size in rows.items():
            if not isinstance(size, int) or isinstance(size, bool) or size <= 0:
                raise ValueError(f"the context window of {prefix!r} must be a positive number of tokens")
        self._rows = sorted(rows.items(), key=lambda item: len(item[0]), reverse=True)
        self._cache: dict[str, int | None] = {}

    def window(self, model: str) -> int | None:
        """The model's context window in tokens, or None for a model the table does not know."""
        try:
            return self._cache[model]
        except KeyError:
            pass
        found = next((size for prefix, size in self._rows if model.startswith(prefix)), None)
        self._cache[model] = found
        return found


def context_tokens(usage: Any) -> int:
    """The prompt's size of one call: input + cache-write + cache-read tokens of its usage."""
    if not isinstance(usage, Mapping):
        return 0
    total = 0
    for key in _PROMPT_KINDS:
        value = usage.get(key)
        if type(value) is int:  # not a bool, nor anything else
            total += value
    return total


_PROMPT_KINDS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
