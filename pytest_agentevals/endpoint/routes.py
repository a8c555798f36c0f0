"""The endpoint's routes: each run of this process gets a path of its own on the one model endpoint
(`/agentevals-<token>`), bound to the runs open where it was made, so the subprocess agents of
concurrent sessions are recorded, replayed and guarded each in its own run.

The endpoint's own URL is the route of the context that started it (what one run in a test has
always used); `ModelEndpoint.route()` adds one for the context that asks. A request on no route, or
on one that is closed or never was, is refused: nothing is filed under a guess.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..recording import active


@dataclass(frozen=True)
class Route:
    """One run's way in: `url` for the client's `ANTHROPIC_BASE_URL`, `env` a whole environment for
    a subprocess pointed at it. `close()` refuses its requests from then on (the endpoint's stop
    closes every route)."""

    token: str
    url: str
    env: Mapping[str, str] = field(repr=False)
    _routes: Routes = field(repr=False, compare=False)

    def close(self) -> None:
        self._routes.remove(self.token)

    def __enter__(self) -> Route:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Routes:
    """Tokens of the endpoint's paths, each with the runs (a context's snapshot) it serves."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._routes: dict[str, tuple[active.Frame, ...]] = {}

    def add(self, token: str | None = None) -> str:
        """A route for the runs open in this context; its token."""
        token = token or secrets.token_urlsafe(16)
        with self._lock:
            self._routes[token] = active.snapshot()
        return token

    def remove(self, token: str) -> None:
        with self._lock:
            self._routes.pop(token, None)

    def clear(self) -> None:
        with self._lock:
            self._routes.clear()

    def match(self, path: str) -> tuple[str, tuple[active.Frame, ...]] | None:
        """The rest of the path after its route, and the route's runs; None for no known route."""
        if not path.startswith("/agentevals-"):
            return None
        head, slash, tail = path[len("/agentevals-") :].partition("/")
        token, question, query = head.partition("?")
        with self._lock:
            frames = self._routes.get(token)
        if frames is None:
            return None
        rest = slash + tail if slash else "/"
        if question:
            rest = "/?" + query if not slash else rest
        return rest, frames
