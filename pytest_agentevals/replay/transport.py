"""The replay's face towards vcrpy's httpx/httpx2 patches.

vcrpy's transport stub asks `can_play_response_for` first and then `play_response`. The engine
decides in the first call; an unrecorded or divergent request raises from there, inside the
transport, so no request is sent. The anthropic SDK wraps any transport exception that is not its
own in `APIConnectionError` and retries it; the engine raises through `loud()` (from `errors.py`,
which the guards share), so our error reaches the caller at once, unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..recording import active


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
        if active.through_endpoint(str(getattr(request, "uri", ""))):
            # A request to this process's own model endpoint (an in-process client of `agentevals
            # replay agent.py`, whose environment points its children there) is answered there, from
            # this same replay: passed through, not matched twice.
            request._agentevals_endpoint = True
            return False
        response = self._decide(request)
        request._agentevals_response = response
        return response is not None

    def play_response(self, request: Any) -> Any:
        return request._agentevals_response

    def append(self, request: Any, response: dict[str, Any]) -> None:
        if not getattr(request, "_agentevals_endpoint", False):
            self._live(request, response)

    def filter_request(self, request: Any) -> Any:
        # None lets a request to the endpoint out although the cassette is write-protected (vcrpy
        # refuses only a request its filter keeps).
        return None if getattr(request, "_agentevals_endpoint", False) else request
