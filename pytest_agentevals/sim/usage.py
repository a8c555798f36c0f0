"""Token counts and prompt caching, simulated deterministically.

Tokens: about four characters per token of compact JSON (`ceil(chars / 4)`, at least 1). The prompt
is measured as the API caches it, in order: each tool definition, each system block, then each
message's content blocks (with the message's role); `cache_control` markers are not counted, so
moving a marker does not change a prefix.

Caching: a block carrying `cache_control` (or the last block, when the request has a top-level
`cache_control`) is a breakpoint. A breakpoint's prefix that was written before, or any prefix ending
up to 20 blocks before a breakpoint that was written before, is read from the cache; the rest up to
the last breakpoint is written. So the usual pattern, a marker on the newest block each turn, reads
last turn's prefix and writes this turn's. Entries never expire. Prefixes shorter than
`min_tokens` are not cached, as on the real API (which asks for 1024 or more; the default here is 0).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# The real API looks this many blocks back from a breakpoint for an earlier cached prefix.
LOOKBACK_BLOCKS = 20


def estimate_tokens(value: Any) -> int:
    """About four characters per token of compact JSON: deterministic, cheap, roughly right for English."""
    return max(1, math.ceil(len(_compact(value)) / 4))


def _compact(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class Usage:
    """The input side of a response's usage; the three counts add up to the prompt's size."""

    input_tokens: int
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    ephemeral_5m_input_tokens: int = 0
    ephemeral_1h_input_tokens: int = 0

    @property
    def total(self) -> int:
        return self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens


@dataclass(frozen=True)
class Prompt:
    """A request's prompt, measured: cumulative characters per block and where the breakpoints are."""

    model: str
    units: tuple[bytes, ...]
    prefix_chars: tuple[int, ...]
    breakpoints: tuple[tuple[int, str], ...]  # (block position, ttl)

    @property
    def tokens(self) -> int:
        return max(1, math.ceil(self.prefix_chars[-1] / 4)) if self.prefix_chars else 1

    def tokens_through(self, position: int) -> int:
        return math.ceil(self.prefix_chars[position] / 4)


def measure(body: Mapping[str, Any]) -> Prompt:
    """Measure a /v1/messages body (already checked to be well formed enough to read)."""
    units: list[bytes] = []
    chars: list[int] = []
    breakpoints: list[tuple[int, str]] = []
    total = 0

    def add(unit: Any, marker: Any) -> None:
        nonlocal total
        text = _compact(unit)
        total += len(text)
        if isinstance(marker, Mapping):
            breakpoints.append((len(units), str(marker.get("ttl", "5m"))))
        units.append(text.encode("utf-8"))
        chars.append(total)

    for tool in _list(body.get("tools")):
        if isinstance(tool, Mapping):
            add(_without_marker(tool), tool.get("cache_control"))
    system = body.get("system")
    if isinstance(system, str) and system:
        add(system, None)
    for block in _list(system):
        if isinstance(block, Mapping):
            add(_without_marker(block), block.get("cache_control"))
    for message in _list(body.get("messages")):
        if not isinstance(message, Mapping):
            continue
        role = message.get("role", "")
        content = message.get("content")
        if isinstance(content, str):
            add([role, content], None)
        for block in _list(content):
            if isinstance(block, Mapping):
                add([role, _without_marker(block)], block.get("cache_control"))
    top = body.get("cache_control")
    if isinstance(top, Mapping) and units:
        breakpoints.append((len(units) - 1, str(top.get("ttl", "5m"))))
    return Prompt(str(body.get("model", "")), tuple(units), tuple(chars), tuple(sorted(set(breakpoints))))


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _without_marker(block: Mapping[str, Any]) -> Any:
    return {k: v for k, v in block.items() if k != "cache_control"} if "cache_control" in block else block


class PromptCache:
    """The server's prompt cache: digests of written prefixes. Not thread-safe; the server locks."""

    def __init__(self, min_tokens: int = 0) -> None:
        self.min_tokens = min_tokens
        self._written: set[bytes] = set()

    def use(self, prompt: Prompt) -> Usage:
        """The usage of `prompt`: what it reads from the cache, what it writes (now written), the rest."""
        breakpoints = [
            (p, ttl) for p, ttl in prompt.breakpoints if prompt.tokens_through(p) >= self.min_tokens
        ]
        total = prompt.tokens
        if not breakpoints:
            return Usage(input_tokens=total)
        wanted: set[int] = {p for p, _ in breakpoints}
        for p, _ in breakpoints:
            wanted.update(range(max(0, p - LOOKBACK_BLOCKS + 1), p))
        digests = self._digests(prompt, wanted)
        hit = max((p for p in wanted if digests[p] in self._written), default=-1)
        read = prompt.tokens_through(hit) if hit >= 0 else 0
        created = {"5m": 0, "1h": 0}
        previous = read
        for p, ttl in breakpoints:
            if p <= hit:
                continue
            through = prompt.tokens_through(p)
            created["1h" if ttl == "1h" else "5m"] += through - previous
            previous = through
            self._written.add(digests[p])
        creation = created["5m"] + created["1h"]
        return Usage(
            input_tokens=total - read - creation,
            cache_creation_input_tokens=creation,
            cache_read_input_tokens=read,
            ephemeral_5m_input_tokens=created["5m"],
            ephemeral_1h_input_tokens=created["1h"],
        )

    @staticmethod
    def _digests(prompt: Prompt, positions: set[int]) -> dict[int, bytes]:
        # One running hash over the prefix; a digest is taken only where a lookup needs one.
        running = hashlib.sha256(prompt.model.encode("utf-8") + b"\0")
        last = max(positions)
        digests: dict[int, bytes] = {}
        for position, unit in enumerate(prompt.units[: last + 1]):
            running.update(len(unit).to_bytes(8, "big"))
            running.update(unit)
            if position in positions:
                digests[position] = running.copy().digest()
        return digests


def output_tokens(content: list[dict[str, Any]]) -> int:
    """Output tokens of a reply's content: text and tool input size, at four characters a token."""
    chars = 0
    for block in content:
        kind = block.get("type")
        if kind == "text":
            chars += len(block.get("text", ""))
        elif kind == "tool_use":
            chars += len(block.get("name", "")) + len(_compact(block.get("input", {})))
        elif kind == "thinking":
            chars += len(block.get("thinking", ""))
        else:
            chars += len(_compact(block))
    return max(1, math.ceil(chars / 4))
