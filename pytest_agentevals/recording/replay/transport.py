"""The replay's face towards vcrpy's httpx/httpx2 patches, and errors the SDK does not retry.

vcrpy's transport stub asks `can_play_response_for` first and then `play_response`. The engine
decides in the first call; an unrecorded or divergent request raises from there, inside the
transport, so no request is sent. The anthropic SDK wraps any transport exception that is not its
own in `APIConnectionError` and retries it; `loud()` gives our error the SDK's base class as a
mixin (only when the SDK is already imported), so it reaches the caller at once, unchanged.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from ...errors import AgentEvalsError

_loud_classes: dict[tuple[type, type], type] = {}


def loud(error: AgentEvalsError) -> AgentEvalsError:
    """`error`, as an instance of a subclass that the anthropic SDK re-raises without retrying.

    The copy is still an instance of the original class (`except ReplayDivergence` catches it) and
    reads the same; it is only made when `anthropic` is imported already.
    """
    sdk = sys.modules.get("anthropic")
    base = getattr(sdk, "AnthropicError", None)
    if not isinstance(base, type) or isinstance(error, base):
        return error
    cls = type(error)
    loud_cls = _loud_classes.get((cls, base))
    if loud_cls is None:
        loud_cls = type(
            cls.__name__, (cls, base), {"__module__": cls.__module__, "__qualname__": cls.__qualname__}
        )
        _loud_classes[(cls, base)] = loud_cls
    copy: AgentEvalsError = Exception.__new__(loud_cls)
    copy.args = error.args
    copy.__dict__.update(error.__dict__)
    copy.__dict__["original"] = error
    return copy


class ReplayCassette:
    """What vcrpy's patches talk to during a replay.

    `decide(request)` returns the response to play (a dict in vcrpy's form), None to let the request
    go live (record mode "new"), or raises. `live(request, response)` hears about a live exchange.
    """

    def __init__(
        self,
        decide: Callable[[Any], dict[str, Any] | None],
        live: Callable[[Any, dict[str, Any]], None],
        allow_live: bool,
    ) -> None:
        self._decide = decide
        self._live = live
        self._allow_live = allow_live

    @property
    def write_protected(self) -> bool:
        return not self._allow_live

    def can_play_response_for(self, request: Any) -> bool:
        response = self._decide(request)
        request._agentevals_response = response
        return response is not None

    def play_response(self, request: Any) -> Any:
        return request._agentevals_response

    def append(self, request: Any, response: dict[str, Any]) -> None:
        self._live(request, response)

    def filter_request(self, request: Any) -> Any:
        return request
